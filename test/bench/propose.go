package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// benchPropose (-only propose) times two everyday builds under `workdir:
// propose` (the agent's writes in an overlay, turned into a branch after
// the session) against the same profile with `workdir: direct`, both
// through fedmem-run, whole sessions (start-up, build, the proposal's
// branch): a `go build` of a real module (this repository's
// cmd/fedmem-run, its modules from a module cache the bench fills offline
// from the host's download cache, its build cache warm in the workdir) and
// an `npm install --offline` of 150 local package tarballs (the closest
// offline equivalent of a local registry: npm unpacks each into
// node_modules). Each run starts from a clean output (rm -rf out /
// node_modules inside), so direct and propose do the same work. Target:
// ratio of medians ≤ 1.10.
func benchPropose(o options, res *Result, runBin, v string, log io.Writer) error {
	for _, tool := range []string{"go", "npm", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			res.Skipped = append(res.Skipped, "workdir: propose vs direct: "+tool+" not installed")
			return nil
		}
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "fedmem-bench-propose-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	profs := map[string]string{}
	for _, mode := range []string{"direct", "propose"} {
		p := filepath.Join(dir, "bench-"+mode+".yaml")
		body := fmt.Sprintf("name: bench-%s\nextends: default\nnetwork: none\nworkdir: %s\n", mode, mode)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
		profs[mode] = p
	}
	runs := o
	runs.warmup, runs.runs = 1, o.proposeRuns

	// go build: this module's source (git archive), a module cache made
	// offline from the host's download cache.
	gowork := filepath.Join(dir, "gowork")
	modcache := filepath.Join(o.cache, "propose-gomodcache")
	if err := os.MkdirAll(gowork, 0o755); err != nil {
		return err
	}
	arch := exec.Command("sh", "-c", "git archive HEAD | tar -x -C "+shq(gowork))
	arch.Dir = root
	if out, err := arch.CombinedOutput(); err != nil {
		return fmt.Errorf("git archive: %v: %s", err, out)
	}
	hostDL := filepath.Join(goEnv("GOMODCACHE"), "cache", "download")
	dl := exec.Command("go", "mod", "download")
	dl.Dir = gowork
	dl.Env = append(os.Environ(), "GOMODCACHE="+modcache, "GOPROXY=file://"+hostDL, "GOSUMDB=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	if out, err := dl.CombinedOutput(); err != nil {
		res.Skipped = append(res.Skipped, fmt.Sprintf("workdir: propose vs direct (go build): the module cache cannot be filled offline: %v: %s", err, firstLine(string(out))))
	} else {
		if err := gitInit(gowork, "/out/\n/.gocache/\n"); err != nil {
			return err
		}
		build := fmt.Sprintf("rm -rf out && CGO_ENABLED=0 GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local GOCACHE=$PWD/.gocache GOMODCACHE=%s go build -o out/fedmem-run ./cmd/fedmem-run", shq(modcache))
		if err := benchProposePair(runs, res, runBin, v, gowork, profs, "go build", build, log); err != nil {
			return err
		}
	}

	// npm install of local tarballs.
	npmwork := filepath.Join(dir, "npmwork")
	// Outside /tmp, which is private inside the sandbox.
	pkgs := filepath.Join(o.cache, "propose-npm-pkgs")
	deps, err := makeTarballs(pkgs, 150, 20)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(npmwork, 0o755); err != nil {
		return err
	}
	pj, _ := json.MarshalIndent(map[string]any{"name": "bench-app", "version": "1.0.0", "private": true, "dependencies": deps}, "", "  ")
	if err := os.WriteFile(filepath.Join(npmwork, "package.json"), append(pj, '\n'), 0o644); err != nil {
		return err
	}
	if err := gitInit(npmwork, "/node_modules/\n/.npm-cache/\n/package-lock.json\n"); err != nil {
		return err
	}
	install := "rm -rf node_modules && npm install --offline --no-audit --no-fund --ignore-scripts --loglevel=error --cache \"$PWD/.npm-cache\""
	return benchProposePair(runs, res, runBin, v, npmwork, profs, "npm install", install, log)
}

func benchProposePair(o options, res *Result, runBin, v, work string, profs map[string]string, what, script string, log io.Writer) error {
	mk := func(mode string) *Series {
		return &Series{Name: fmt.Sprintf("%s, workdir: %s", what, mode), Cmd: []string{runBin, "--vault", v, "--workdir", work, "--profile", profs[mode], "--", "sh", "-c", script}}
	}
	direct, propose := mk("direct"), mk("propose")
	fmt.Fprintf(log, "bench: %s under workdir: propose vs direct, %d warm-up + %d timed runs each…\n", what, o.warmup, o.runs)
	if err := alternate(o, work, direct, propose); err != nil {
		return err
	}
	res.Series = append(res.Series, direct, propose)
	res.Ratios = append(res.Ratios, ratio(what+": propose / direct", propose, direct, 1.10))
	return nil
}

// gitInit makes dir a Git repository with one commit of what it holds.
func gitInit(dir, ignore string) error {
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(ignore), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm", "bench"}} {
		cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// makeTarballs writes n npm package tarballs of files small modules each
// and returns the dependencies naming them (file: specs).
func makeTarballs(dir string, n, files int) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	deps := map[string]string{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("bench-pkg-%03d", i)
		p := filepath.Join(dir, name+"-1.0.0.tgz")
		f, err := os.Create(p)
		if err != nil {
			return nil, err
		}
		gz := gzip.NewWriter(f)
		tw := tar.NewWriter(gz)
		add := func(rel, body string) error {
			if err := tw.WriteHeader(&tar.Header{Name: "package/" + rel, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
				return err
			}
			_, err := io.WriteString(tw, body)
			return err
		}
		pj := fmt.Sprintf(`{"name":%q,"version":"1.0.0","main":"index.js"}`, name)
		if err := add("package.json", pj); err != nil {
			return nil, err
		}
		for j := 0; j < files; j++ {
			body := fmt.Sprintf("// %s module %d\n'use strict';\nmodule.exports = function f%d(x) { return x + %d; };\n%s\n", name, j, j, j, strings.Repeat("// padding\n", 40))
			if err := add(fmt.Sprintf("lib/m%02d.js", j), body); err != nil {
				return nil, err
			}
		}
		if err := add("index.js", "module.exports = require('./lib/m00.js');\n"); err != nil {
			return nil, err
		}
		if err := tw.Close(); err != nil {
			return nil, err
		}
		if err := gz.Close(); err != nil {
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		deps[name] = "file:" + p
	}
	return deps, nil
}

func goEnv(key string) string {
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
