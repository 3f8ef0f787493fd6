package escape

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRT18ClaudeConfigBackups: Claude Code keeps timestamped backups of
// its ~/.claude.json — where a Console login keeps the API key
// (primaryApiKey) — and since 2.1.50 writes them in ~/.claude/backups/
// (.claude.json.backup.<ms>; anthropics/claude-code#32822, cc-switch#1102;
// older versions beside the file, ~/.claude.json.backup). The claude
// profile covers ~/.claude.json's copy with a placeholder
// (TestRT18ConsoleKeyInClaudeJSON) but shows ~/.claude/ writable, backups
// and all: the agent reads the real key there. Also a
// ~/.claude/settings.json.backup (what tools that edit settings.json
// leave) holding the settings' env key. Fails on h-rt18b (cc1c15a).
// The fix is not one more file entry but a rule (coverStrayCopies): no
// file under a writable home folder holds a real value the agent reads.
func TestRT18ClaudeConfigBackups(t *testing.T) {
	cfg := `{"primaryApiKey": "` + rt18ClaudeKey + `", "hasCompletedOnboarding": true}`
	o := rt18ClaudeKeySession(t, rt18ClaudeKey, map[string]string{
		".claude.json": cfg,
		".claude/backups/.claude.json.backup.1771843014824": cfg,
		".claude.json.backup":                               cfg,
		".claude/settings.json.backup":                      `{"env": {"ANTHROPIC_API_KEY": "` + rt18ClaudeKey + `"}}`,
	}, false)
	if !strings.Contains(o, "HITS []") {
		t.Errorf("BREACH: the caller's real Console key is readable inside under the claude profile, in Claude Code's own backups: %s", o)
	}
}

// rt18SwapProbe refreshes like refreshProbe, then, as the hostile agent,
// replaces the caller's credential link (in a folder the profile makes
// writable: ~/.codex/ and ~/.claude/ are) with a link of its own to a
// file it made in the workdir, holding the key paths the write-back
// looks for.
const rt18SwapProbe = `
import json, os, sys, urllib.request
auth, work = sys.argv[1], sys.argv[2]
cf = os.path.join(os.environ["HOME"], ".oauthagent/creds.json")
c = json.load(open(cf))["oauth"]
r = urllib.request.Request("https://127.0.0.1:%s/token" % auth, data=json.dumps({"grant_type": "refresh_token", "refresh_token": c["refresh"]}).encode(), headers={"Content-Type": "application/json"})
print("REFRESH", urllib.request.urlopen(r, timeout=20).read().decode())
planted = os.path.join(work, "planted.json")
json.dump({"oauth": {"access": "agent-access-0123456789", "refresh": "agent-refresh-0123456789"}}, open(planted, "w"))
os.chmod(planted, 0o644)
tmp = cf + ".swap"
os.symlink(planted, tmp)
os.rename(tmp, cf)
print("SWAPPED", os.readlink(cf))
`

// TestRT18RefreshWriteBackFollowsAgentLink: the caller's credential file
// is a link (a dotfiles checkout, which the write-back supports:
// TestRT18RefreshIntoLinkedFile) in a folder the profile makes writable —
// as the codex and claude built-ins make ~/.codex/ and ~/.claude/. The
// covers are bound where the link points (a mount follows it), so the
// link itself is no mount point: the agent refreshes (the helper now
// holds new real tokens), then renames a link of its own over it, to a
// file in the workdir. The watcher ends the session, and after it
// fedmem-run resolves the link again (rewriteCredentialFile's
// EvalSymlinks) and writes the new real tokens into the agent's file:
// the next session's agent, or anyone who reads the workdir, has the
// caller's fresh refresh token, and the user's tool outside now reads the
// agent's file. Blocked on h-rt18b (cc1c15a): the mounts refuse a cover
// whose mount point is a link (exit 125), so the session never starts;
// the test keeps that, or the write-back's safety, from regressing.
func TestRT18RefreshWriteBackFollowsAgentLink(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	const (
		oldA = "sk-ant-oat01-" + credMarker + "oldaccess0123456789abcdefghij"
		oldR = "sk-ant-ort01-" + credMarker + "oldrefresh0123456789abcdefghi"
		newA = "sk-ant-oat01-" + credMarker + "newaccess9876543210zyxwvutsrq"
		newR = "sk-ant-ort01-" + credMarker + "newrefresh9876543210zyxwvutsr"
	)
	leaf, caPEM := testCA(t)
	authSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token": "`+newA+`", "refresh_token": "`+newR+`", "expires_in": 3600}`)
	}))
	authSrv.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	authSrv.StartTLS()
	defer authSrv.Close()
	authAddr := authSrv.Listener.Addr().String()
	roots := filepath.Join(e.outDir, "test-roots.pem")
	must(t, os.WriteFile(roots, caPEM, 0o644))
	dir := filepath.Join(e.home, ".oauthagent")
	must(t, os.MkdirAll(dir, 0o755))
	credFile := filepath.Join(dir, "creds.json")
	dots := filepath.Join(e.home, "dotfiles")
	must(t, os.MkdirAll(dots, 0o700))
	target := filepath.Join(dots, "creds.json")
	must(t, os.WriteFile(target, []byte(`{"oauth": {"access": "`+oldA+`", "refresh": "`+oldR+`"}}`), 0o600))
	must(t, os.Symlink(target, credFile))
	prof := filepath.Join(e.outDir, "oauth.yaml")
	must(t, os.WriteFile(prof, []byte("name: oauth\nextends: default\nnetwork: allowlist\nallow: [\""+authAddr+"\"]\nhome:\n  writable: [.oauthagent/]\ncredentials:\n"+
		"  - {name: oauth-access, file: ~/.oauthagent/creds.json, path: oauth.access, hosts: [\"api.invalid\"], header: \"Authorization: Bearer\", from_response: access_token}\n"+
		"  - {name: oauth-refresh, file: ~/.oauthagent/creds.json, path: oauth.refresh, hosts: [\""+authAddr+"\"], body: true, from_response: refresh_token}\n"), 0o644))
	_, authPort, _ := net.SplitHostPort(authAddr)
	o, s, c := e.rtsbRun(t, []string{"--profile", prof}, []string{"SSL_CERT_FILE=" + roots}, "python3", "-c", rt18SwapProbe, authPort, e.workdir)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", c, o, s)
	if c == 125 && strings.Contains(s, "is a symbolic link") {
		// Blocked on h-rt18b: a cover whose mount point is a link in a
		// writable folder refuses the session (fail closed).
		return
	}
	if !strings.Contains(o, "REFRESH {") || !strings.Contains(o, "SWAPPED") {
		t.Fatalf("the refresh or the swap was not made (exit %d)", c)
	}
	planted := filepath.Join(e.workdir, "planted.json")
	if b, err := os.ReadFile(planted); err == nil && strings.Contains(string(b), credMarker) {
		t.Errorf("BREACH: the refreshed real tokens were written into the agent's file %s (mode 0644, in the workdir): %s", planted, b)
	}
	if l, err := os.Readlink(credFile); err == nil && l != target {
		t.Errorf("the caller's credential link now names the agent's file %s: the user's tool outside reads the agent's tokens", l)
	}
	if b := mustRead(t, target); !strings.Contains(string(b), newR) {
		t.Errorf("the caller's file %s does not hold the refreshed tokens: %s", target, b)
	}
}

// TestRT18CredentialCommandRunsInWorkdir: a command source runs outside
// the sandbox, as the caller, at the start of every session — in
// fedmem-run's working directory, which is the workdir the agent writes.
// The common keyring lookup `python3 -m keyring get SERVICE USER` (the
// keyring package's own CLI) puts that directory first on sys.path
// (python's -m), so a keyring.py the agent left in the workdir in one
// session runs, as the caller and outside the sandbox, when the next
// session starts (guarantee 6; guarantee 5: fedmem acts on a path the
// agent controls). Fails on h-rt18b (cc1c15a): the planted module ran.
func TestRT18CredentialCommandRunsInWorkdir(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	canary := filepath.Join(e.outDir, "ran-outside")
	prof := filepath.Join(e.outDir, "kr.yaml")
	must(t, os.WriteFile(prof, []byte("name: kr\nextends: default\nnetwork: none\ncredentials:\n"+
		"  - {name: kr-key, command: [python3, -m, keyring, get, fedmem-rt18, key], env: TEST_API_KEY, optional: true}\n"), 0o644))
	plant := `import sys
canary = sys.argv[1]
mod = "import os\nopen(%r, 'w').write('uid %%d pidns %%s' %% (os.getuid(), os.readlink('/proc/self/ns/pid')))\nprint('sk-test-api03-plantedbytheagent0123456789abcdefghij')\n" % canary
open("keyring.py", "w").write(mod)
try:
    open(canary, "w").write("inside")
    print("CANARY WRITABLE INSIDE")
except Exception as e:
    print("canary not writable inside:", e)
`
	o1, s1, c1 := e.rtsbRun(t, []string{"--profile", prof}, nil, "python3", "-c", plant, canary)
	t.Logf("session 1: exit %d\nstdout:\n%s\nstderr:\n%s", c1, o1, s1)
	if c1 != 0 {
		t.Fatalf("session 1 did not run (exit %d)", c1)
	}
	if _, err := os.Stat(filepath.Join(e.workdir, "keyring.py")); err != nil {
		t.Fatalf("the agent could not leave keyring.py in the workdir: the attempt was not made: %v", err)
	}
	os.Remove(canary)
	o2, s2, c2 := e.rtsbRun(t, []string{"--profile", prof}, nil, "sh", "-c", `printf 'KEY %s\n' "$TEST_API_KEY"`)
	t.Logf("session 2: exit %d\nstdout:\n%s\nstderr:\n%s", c2, o2, s2)
	if b, err := os.ReadFile(canary); err == nil {
		t.Errorf("BREACH: the agent's keyring.py, left in the workdir, ran outside the sandbox as the caller when the next session read its credential command (%s)", b)
	}
}

// TestRT18CredentialCommandOnWorkdirPath: the program of a command
// source is found on fedmem-run's PATH; a PATH that names a folder of the
// workdir before the system's (direnv's PATH_add bin, `export
// PATH=$PWD/bin:$PATH`) finds the secret-tool the agent left there in one
// session, and runs it outside the sandbox, as the caller, when the next
// session starts — the class of TestRT22WorkdirPathDirPlanted, but here
// fedmem-run itself runs the program. Fails on h-rt18b (cc1c15a). The
// session must be refused (125) naming the program and the folder.
func TestRT18CredentialCommandOnWorkdirPath(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	bin := filepath.Join(e.workdir, "bin")
	must(t, os.MkdirAll(bin, 0o755))
	e.path = bin + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
	canary := filepath.Join(e.outDir, "ran-outside")
	prof := filepath.Join(e.outDir, "st.yaml")
	must(t, os.WriteFile(prof, []byte("name: st\nextends: default\nnetwork: none\ncredentials:\n"+
		"  - {name: st-key, command: [secret-tool, lookup, service, fedmem-rt18], env: TEST_API_KEY, optional: true}\n"), 0o644))
	o1, s1, c1 := e.rtsbRun(t, []string{"--profile", prof}, nil, "sh", "-c",
		`printf '#!/bin/sh\necho uid $(id -u) > "%s"\necho sk-test-api03-plantedbytheagent0123456789abcdefghij\n' "$2" > "$1/secret-tool" && chmod +x "$1/secret-tool" && echo PLANTED`, "sh", bin, canary)
	t.Logf("session 1: exit %d\nstdout:\n%s\nstderr:\n%s", c1, o1, s1)
	if c1 != 0 || !strings.Contains(o1, "PLANTED") {
		t.Fatalf("session 1 did not plant the program (exit %d)", c1)
	}
	os.Remove(canary)
	o2, s2, c2 := e.rtsbRun(t, []string{"--profile", prof}, nil, "true")
	t.Logf("session 2: exit %d\nstdout:\n%s\nstderr:\n%s", c2, o2, s2)
	if c2 != 125 || !strings.Contains(s2, filepath.Join(bin, "secret-tool")) || !strings.Contains(s2, "which the agent writes") {
		t.Errorf("session 2: exit %d, want 125 naming %s/secret-tool and that the agent writes it:\n%s", c2, bin, s2)
	}
	if b, err := os.ReadFile(canary); err == nil {
		t.Errorf("BREACH: the agent's %s/secret-tool, found on the caller's PATH, ran outside the sandbox as the caller at the next session's start (%s)", bin, b)
	}
}

// TestRT18CredHelperOnWorkdirPath: fedmem-cred, which fedmem-run hands
// every real value on its stdin, is looked for beside fedmem-run, then on
// PATH. An install where it is not beside fedmem-run and a PATH that
// names a folder of the workdir (direnv's PATH_add bin) run the
// fedmem-cred the agent left there: the caller's real key on the agent's
// program's stdin, outside the sandbox. Fails on h-rt18b (cc1c15a).
func TestRT18CredHelperOnWorkdirPath(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	solo := filepath.Join(e.outDir, "solo")
	must(t, os.MkdirAll(solo, 0o755))
	b, err := os.ReadFile(e.bins.FedmemRun)
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(solo, "fedmem-run"), b, 0o755))
	e.bins.FedmemRun = filepath.Join(solo, "fedmem-run") // no fedmem-cred beside it
	bin := filepath.Join(e.workdir, "bin")
	must(t, os.MkdirAll(bin, 0o755))
	e.path = bin + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
	canary := filepath.Join(e.outDir, "helper-stdin")
	prof := filepath.Join(e.outDir, "env.yaml")
	must(t, os.WriteFile(prof, []byte("name: envk\nextends: default\nnetwork: public\ncredentials:\n"+
		"  - {name: k, env: TEST_API_KEY, hosts: [api.invalid], header: x-api-key}\n"), 0o644))
	envs := []string{"TEST_API_KEY=" + realEnvKey}
	o1, s1, c1 := e.rtsbRun(t, []string{"--profile", prof, "--network", "none"}, envs, "sh", "-c",
		`printf '#!/bin/sh\ncat > "%s"\n' "$2" > "$1/fedmem-cred" && chmod +x "$1/fedmem-cred" && echo PLANTED`, "sh", bin, canary)
	t.Logf("session 1: exit %d\nstdout:\n%s\nstderr:\n%s", c1, o1, s1)
	if !strings.Contains(o1, "PLANTED") {
		t.Fatalf("session 1 did not plant the program (exit %d)", c1)
	}
	os.Remove(canary)
	o2, s2, c2 := e.rtsbRun(t, []string{"--profile", prof}, envs, "true")
	t.Logf("session 2: exit %d\nstdout:\n%s\nstderr:\n%s", c2, o2, s2)
	if c2 != 125 || !strings.Contains(s2, "which the agent writes") {
		t.Errorf("session 2: exit %d, want 125 naming the helper the agent wrote:\n%s", c2, s2)
	}
	if b, err := os.ReadFile(canary); err == nil && strings.Contains(string(b), credMarker) {
		t.Errorf("BREACH: the agent's %s/fedmem-cred ran outside the sandbox and read the real key on its stdin: %s", bin, b)
	}
}

// TestRT18SeedVisibleWhenHomeIsWorkdir: the claude profile's Console key
// credential is seeded — its file, ~/.claude.json, is the seed of the
// agent's state copy, which gets the placeholder; the file itself is
// neither covered nor watched, since an allow-list home never shows it.
// When fedmem-run runs in the home (workdir = home: the home shown whole,
// secrets masked), ~/.claude.json is in the workdir, real key and all.
// Fails on h-rt18b (cc1c15a): the agent read it, and its backup beside
// it (~/.claude.json.backup.<ms>).
func TestRT18SeedVisibleWhenHomeIsWorkdir(t *testing.T) {
	e := setup(t, layout{name: "workdir-is-home/root"})
	e.workdir = e.home
	cfg := `{"primaryApiKey": "` + rt18ClaudeKey + `", "hasCompletedOnboarding": true}`
	user := filepath.Join(e.home, ".claude.json")
	must(t, os.WriteFile(user, []byte(cfg), 0o644))
	// Claude Code up to 2.1.49 keeps its backups beside the file.
	must(t, os.WriteFile(filepath.Join(e.home, ".claude.json.backup.1769596532941"), []byte(cfg), 0o644))
	o, s, c := e.rtsbRun(t, []string{"--profile", "claude"}, nil, "python3", "-c", rt18FindProbe, e.home)
	t.Logf("exit %d\n%s\n%s", c, o, s)
	if !strings.Contains(o, "HITS ") {
		t.Fatalf("the probe did not run (exit %d)", c)
	}
	if !strings.Contains(o, "HITS []") {
		t.Errorf("BREACH: the seed ~/.claude.json, in the workdir, shows the agent the real Console key: %s", o)
	}
	if got := string(mustRead(t, user)); got != cfg {
		t.Errorf("the user's ~/.claude.json changed: %s", got)
	}
}

// linkIntoWritableSetup: a credential file that is a link in a folder the
// agent does not write (~/.oauthagent/creds.json, shown) to the caller's
// real file in one it does (~/dotfiles/oauth/, home.writable), and the
// profile naming it. It returns the env, the real token, the target's
// folder, the target, the link and the profile's path.
func linkIntoWritableSetup(t *testing.T) (e *env, real, cfg, target, credFile, prof string) {
	e = setup(t, layout{name: "beside/root"})
	real = "sk-ant-oat01-" + credMarker + "realaccess0123456789abcdefghij"
	dir := filepath.Join(e.home, ".oauthagent")
	must(t, os.MkdirAll(dir, 0o755))
	cfg = filepath.Join(e.home, "dotfiles", "oauth")
	must(t, os.MkdirAll(cfg, 0o700))
	target = filepath.Join(cfg, "creds.json")
	must(t, os.WriteFile(target, []byte(`{"oauth": {"access": "`+real+`"}}`), 0o600))
	credFile = filepath.Join(dir, "creds.json")
	must(t, os.Symlink(target, credFile))
	prof = filepath.Join(e.outDir, "oauth.yaml")
	must(t, os.WriteFile(prof, []byte("name: oauth\nextends: default\nnetwork: none\nhome:\n  show: [.oauthagent/]\n  writable: [dotfiles/]\ncredentials:\n"+
		"  - {name: oauth-access, file: ~/.oauthagent/creds.json, path: oauth.access, hosts: [\"api.invalid\"], header: \"Authorization: Bearer\"}\n"), 0o644))
	return e, real, cfg, target, credFile, prof
}

// TestRedTeamCredentialLinkIntoWritable: the credential file is a link in
// a folder the agent does not write (~/.oauthagent/creds.json) to a file
// in one it does (~/dotfiles/, home.writable): linkedCoversWritable looks
// only at the link's own folder. Inside, the link's target is the
// caller's real file in a writable bind: the agent reads (and may
// rewrite) the real tokens there unless a cover sits on it too.
func TestRedTeamCredentialLinkIntoWritable(t *testing.T) {
	e, real, _, target, credFile, prof := linkIntoWritableSetup(t)
	o, s, c := e.rtsbRun(t, []string{"--profile", prof}, nil, "sh", "-c", `cat "$1" "$2"; echo; echo DONE`, "sh", credFile, target)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", c, o, s)
	if strings.Contains(o, real) {
		t.Fatalf("BREACH: the agent read the caller's real token at %s, the target (in a writable home folder) of the credential link %s", target, credFile)
	}
	if c != 125 && !strings.Contains(o, "DONE") {
		t.Fatalf("the probe did not run (exit %d)", c)
	}
}

// TestRedTeamCredentialLinkTargetDirRenamed: under runc the cover of a
// credential link (~/.oauthagent/creds.json, in a folder the agent does
// not write) is bound where the link points, a file in a folder it does
// write (~/dotfiles/oauth/, home.writable). The agent renames that folder
// away — the cover travels with it — so the caller's real file lies,
// uncovered, under a name no later session covers: the next session reads
// the real token there.
func TestRedTeamCredentialLinkTargetDirRenamed(t *testing.T) {
	e, real, cfg, _, _, prof := linkIntoWritableSetup(t)
	moved := filepath.Join(e.home, "dotfiles", "moved")
	o, s, c := e.rtsbRun(t, []string{"--profile", prof}, nil, "sh", "-c", `mv "$1" "$2" && mkdir "$1" && echo '{"oauth": {"access": "agent"}}' > "$1/creds.json" && echo MOVED`, "sh", cfg, moved)
	t.Logf("session 1: exit %d\nstdout:\n%s\nstderr:\n%s", c, o, s)
	if c == 125 {
		return // refused before the agent ran: blocked
	}
	o, s, c = e.rtsbRun(t, []string{"--profile", prof}, nil, "sh", "-c", `cat "$1"/*; echo DONE`, "sh", moved)
	t.Logf("session 2: exit %d\nstdout:\n%s\nstderr:\n%s", c, o, s)
	if strings.Contains(o, real) {
		t.Fatalf("BREACH: session 2 read the caller's real token at %s, where session 1 moved the folder of the credential link's target", moved)
	}
}

// TestRedTeamCredentialHardLinkInWritable: the caller's credential file
// has a second name (a hard link) in a folder the agent writes
// (~/dotfiles/, home.writable). The cover sits on the file's own name; the
// other name is the same inode, uncovered: the agent reads the real token
// there (and may rewrite it in place for the caller's tool).
func TestRedTeamCredentialHardLinkInWritable(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	const real = "sk-ant-oat01-" + credMarker + "realaccess0123456789abcdefghij"
	dir := filepath.Join(e.home, ".oauthagent")
	must(t, os.MkdirAll(dir, 0o755))
	credFile := filepath.Join(dir, "creds.json")
	must(t, os.WriteFile(credFile, []byte(`{"oauth": {"access": "`+real+`"}}`), 0o600))
	dots := filepath.Join(e.home, "dotfiles")
	must(t, os.MkdirAll(dots, 0o700))
	other := filepath.Join(dots, "creds.json")
	must(t, os.Link(credFile, other))
	prof := filepath.Join(e.outDir, "oauth.yaml")
	must(t, os.WriteFile(prof, []byte("name: oauth\nextends: default\nnetwork: none\nhome:\n  show: [.oauthagent/]\n  writable: [dotfiles/]\ncredentials:\n"+
		"  - {name: oauth-access, file: ~/.oauthagent/creds.json, path: oauth.access, hosts: [\"api.invalid\"], header: \"Authorization: Bearer\"}\n"), 0o644))
	o, s, c := e.rtsbRun(t, []string{"--profile", prof}, nil, "sh", "-c", `cat "$1"; echo DONE`, "sh", other)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", c, o, s)
	if strings.Contains(o, real) {
		t.Fatalf("BREACH: the agent read the caller's real token through %s, a hard link of the credential file %s in a writable home folder", other, credFile)
	}
}

// TestRedTeamCredentialCommandChildOnWorkdirPath: commandInWritable judges
// only the command's own program. The command runs with the caller's
// environment, PATH unfiltered (credentials are read before
// useHostPATH), so a program it runs by name — `sh -c 'secret-tool …'`,
// `env secret-tool …`, pass running gpg, git running git-credential-* —
// comes from the folder of the workdir that PATH names (direnv's PATH_add
// bin): the agent's program, outside the sandbox, as the caller, at the
// next session's start.
func TestRedTeamCredentialCommandChildOnWorkdirPath(t *testing.T) {
	for name, argv := range map[string]string{"sh-c": `[sh, -c, "secret-tool lookup service fedmem-rt18"]`, "env": `[env, secret-tool, lookup, service, fedmem-rt18]`} {
		t.Run(name, func(t *testing.T) {
			e := setup(t, layout{name: "beside/root"})
			bin := filepath.Join(e.workdir, "bin")
			must(t, os.MkdirAll(bin, 0o755))
			e.path = bin + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
			canary := filepath.Join(e.outDir, "ran-outside")
			prof := filepath.Join(e.outDir, "st.yaml")
			must(t, os.WriteFile(prof, []byte("name: st\nextends: default\nnetwork: none\ncredentials:\n"+
				"  - {name: st-key, command: "+argv+", env: TEST_API_KEY, optional: true}\n"), 0o644))
			o1, s1, c1 := e.rtsbRun(t, []string{"--profile", prof}, nil, "sh", "-c",
				`printf '#!/bin/sh\necho uid $(id -u) > "%s"\necho sk-test-api03-plantedbytheagent0123456789abcdefghij\n' "$2" > "$1/secret-tool" && chmod +x "$1/secret-tool" && echo PLANTED`, "sh", bin, canary)
			if c1 != 0 || !strings.Contains(o1, "PLANTED") {
				t.Fatalf("session 1 did not plant the program (exit %d)\n%s\n%s", c1, o1, s1)
			}
			os.Remove(canary)
			o2, s2, c2 := e.rtsbRun(t, []string{"--profile", prof}, nil, "true")
			t.Logf("session 2: exit %d\nstdout:\n%s\nstderr:\n%s", c2, o2, s2)
			if b, err := os.ReadFile(canary); err == nil {
				t.Errorf("BREACH: the credential command %s ran the agent's %s/secret-tool (found on the caller's unfiltered PATH) outside the sandbox as the caller at the next session's start (%s)", argv, bin, b)
			}
		})
	}
}
