package escape

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
)

// persistProbe is the hostile agent's attempt to leave code that runs later
// outside the sandbox (guarantee 6). Each attempt prints one JSON line with
// the errno it met ("" when it succeeded); the git steps that must keep
// working print their exit status.
const persistProbe = `
import errno, json, os, subprocess, sys
home = os.environ["HOME"]
def out(attempt, e):
    print(json.dumps({"attempt": attempt, "errno": e}), flush=True)
def attempt(name, fn):
    try:
        fn()
        out(name, "")
    except OSError as e:
        out(name, errno.errorcode.get(e.errno, str(e.errno)))
def write(p, data, mode="w"):
    def f():
        with open(p, mode) as fh:
            fh.write(data)
    return f
def mkdirs(p):
    return lambda: os.makedirs(p)
def plant(p, data):
    def f():
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as fh:
            fh.write(data)
    return f
attempt("hook post-checkout", write(".git/hooks/post-checkout", "#!/bin/sh\ntouch /tmp/pwned\n"))
attempt("hook pre-commit", write(".git/hooks/pre-commit", "#!/bin/sh\ntouch /tmp/pwned\n"))
attempt("git config append", write(".git/config", "[core]\n\tfsmonitor = /tmp/evil\n\thooksPath = /tmp/hooks\n", "a"))
attempt("git config replace", lambda: os.rename(".git/HEAD", ".git/config"))
attempt("git info attributes", write(".git/info/attributes", "* filter=evil\n"))
attempt("move .git aside", lambda: os.rename(".git", ".git-moved"))
attempt("move hooks aside", lambda: os.rename(".git/hooks", ".git/hooks-moved"))
attempt("envrc", write(".envrc", "touch /tmp/pwned\n"))
attempt("unlink envrc", lambda: os.unlink(".envrc"))
attempt("mcp.json", write(".mcp.json", '{"mcpServers":{"x":{"command":"/tmp/evil"}}}'))
attempt("vscode tasks", write(".vscode/tasks.json", '{"tasks":[{"command":"/tmp/evil","runOptions":{"runOn":"folderOpen"}}]}'))
attempt("vscode dir", mkdirs(".vscode/x"))
attempt("cursor mcp", plant(".cursor/mcp.json", '{"mcpServers":{"x":{"command":"/tmp/evil"}}}'))
attempt("gemini settings", plant(".gemini/settings.json", '{"mcpServers":{"x":{"command":"/tmp/evil"}}}'))
attempt("zed tasks", plant(".zed/tasks.json", '[{"label":"x","command":"/tmp/evil"}]'))
attempt("project claude settings", write(".claude/settings.json", '{"hooks":{}}'))
attempt("bashrc", write(home + "/.bashrc", "touch /tmp/pwned\n", "a"))
attempt("claude settings", write(home + "/.claude/settings.json", '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"/tmp/evil"}]}]}}'))
attempt("claude settings.local", write(home + "/.claude/settings.local.json", '{"hooks":{}}'))
attempt("claude settings rename", lambda: os.rename(home + "/.claude/settings.json", home + "/.claude/x.json"))
attempt("claude hooks dir", write(home + "/.claude/hooks/x.sh", "evil"))
# The agent's own state in ~/.claude stays writable.
attempt("claude state", write(home + "/.claude/history.jsonl", "{}\n"))
# Everyday git keeps working: a commit, a branch, gc.
with open("work.txt", "a") as fh:
    fh.write("agent work\n")
for name, argv in [("git add", ["git", "add", "work.txt"]),
                   ("git commit", ["git", "-c", "user.name=agent", "-c", "user.email=agent@example.invalid", "commit", "-q", "-m", "agent commit"]),
                   ("git branch", ["git", "branch", "agent-branch"]),
                   ("git gc", ["git", "gc", "-q"]),
                   ("git config write", ["git", "config", "core.fsmonitor", "/tmp/evil"])]:
    r = subprocess.run(argv, capture_output=True, text=True)
    print(json.dumps({"attempt": name, "exit": r.returncode, "stderr": r.stderr[-300:]}), flush=True)
# No placeholder can hold .git/commondir (git dies on one): the agent can
# create it; fedmem-run moves it aside after the session.
attempt("git commondir", write(".git/commondir", "/tmp/evil\n"))
`

// TestPersistenceReadOnly: the hostile agent, under the claude profile, in
// a workdir that is a git repository, tries to plant hooks, git config,
// direnv, MCP, editor and agent settings and shell startup code. What
// exists on the host (the repository's hooks and config, the user's .envrc,
// ~/.bashrc, ~/.claude/settings.json) is read-only: every attempt fails with
// the expected errno and the host files are unchanged. A family name absent
// from the top of the workdir (.mcp.json, .vscode, .cursor, .gemini, .zed)
// has no placeholder — one would be an entry Git shows (issue 23) — so the
// agent may make it; after the session it is moved aside with a persistence
// event. No placeholder is left behind, and git commit/branch/gc still work
// inside.
func TestPersistenceReadOnly(t *testing.T) {
	for _, l := range []layout{{name: "beside/root"}, {name: "own-vault/user", user: true, agentOwned: true}} {
		t.Run(l.name, func(t *testing.T) { testPersistence(t, l) })
	}
}

func testPersistence(t *testing.T, l layout) {
	e := setup(t, l)
	repo := e.workdir
	gitRun := func(args ...string) string {
		t.Helper()
		out, err := testutil.Git(repo, args...)
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return out
	}
	gitRun("init", "-q")
	os.WriteFile(filepath.Join(repo, "work.txt"), []byte("start\n"), 0o644)
	os.WriteFile(filepath.Join(repo, ".envrc"), []byte("export FOO=1\n"), 0o644)
	gitRun("add", "work.txt", ".envrc")
	gitRun("-c", "user.name=user", "-c", "user.email=user@example.invalid", "commit", "-q", "-m", "start")
	claudeDir := filepath.Join(e.home, ".claude")
	os.MkdirAll(claudeDir, 0o755)
	os.WriteFile(filepath.Join(claudeDir, "settings.json"), []byte(`{"theme":"dark"}`+"\n"), 0o644)
	if l.user {
		// The unprivileged caller owns its workdir repository and home.
		for _, d := range []string{repo, e.home} {
			if err := testutil.ChownTree(d, agentUID, agentUID); err != nil {
				t.Fatal(err)
			}
		}
	}

	watched := []string{
		filepath.Join(repo, ".git", "config"), filepath.Join(repo, ".git", "hooks"), filepath.Join(repo, ".git", "info"),
		filepath.Join(e.home, ".bashrc"), filepath.Join(claudeDir, "settings.json"), filepath.Join(repo, ".envrc"),
	}
	before := map[string]string{}
	for _, p := range watched {
		before[p] = fingerprint(t, p)
	}
	absent := []string{".mcp.json", ".vscode", ".idea", ".claude", ".codex", ".cursor", ".gemini", ".zed", ".husky", ".devcontainer",
		".pre-commit-config.yaml", ".git/commondir", ".git/modules", ".git/worktrees"}

	evs := filepath.Join(e.outDir, "persist-events.jsonl")
	r := e.run(t, []string{"--profile", "claude", "--events", evs}, "python3", "-c", persistProbe)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	type line struct {
		Attempt string `json:"attempt"`
		Errno   string `json:"errno"`
		Exit    *int   `json:"exit"`
		Stderr  string `json:"stderr"`
	}
	got := map[string]line{}
	for _, l := range bytes.Split(bytes.TrimSpace(r.stdout), []byte("\n")) {
		var x line
		if err := json.Unmarshal(l, &x); err != nil {
			t.Fatalf("probe output %q: %v", l, err)
		}
		got[x.Attempt] = x
	}
	readOnly := set("EROFS", "EACCES")
	busy := set("EBUSY")
	want := map[string]map[string]bool{
		"hook post-checkout": readOnly, "hook pre-commit": readOnly, "git config append": readOnly,
		"git config replace": busy, "git info attributes": readOnly, "git commondir": set(""),
		"move .git aside": busy, "move hooks aside": busy, "envrc": readOnly, "unlink envrc": busy,
		// Absent at the top: free inside, judged after the session (below).
		"mcp.json": set(""), "vscode tasks": set("ENOENT"), "vscode dir": set(""), "cursor mcp": set(""), "gemini settings": set(""), "zed tasks": set(""), "project claude settings": set("ENOENT"),
		"bashrc": readOnly, "claude settings": readOnly, "claude settings.local": readOnly,
		"claude settings rename": busy, "claude hooks dir": readOnly,
		"claude state": set(""),
	}
	for name, ok := range want {
		x, seen := got[name]
		if !seen {
			t.Errorf("%s: no result (probe died?)\n%s", name, r.stderr)
			continue
		}
		if !ok[x.Errno] {
			t.Errorf("BREACH %s: errno %q, want one of %v", name, x.Errno, keys(ok))
		}
	}
	for _, name := range []string{"git add", "git commit", "git branch", "git gc"} {
		if x := got[name]; x.Exit == nil || *x.Exit != 0 {
			t.Errorf("%s inside the sandbox: %+v, want exit 0", name, x)
		}
	}
	if x := got["git config write"]; x.Exit == nil || *x.Exit == 0 {
		t.Errorf("git config core.fsmonitor inside the sandbox succeeded: %+v", x)
	}

	// The host: protected files unchanged, no placeholder left behind,
	// the agent's commit and branch are there.
	for _, p := range watched {
		if now := fingerprint(t, p); now != before[p] {
			t.Errorf("BREACH %s changed on the host:\nbefore %s\nafter  %s", p, before[p], now)
		}
	}
	for _, rel := range absent {
		if _, err := os.Lstat(filepath.Join(repo, rel)); !os.IsNotExist(err) {
			t.Errorf("%s left in the host workdir after the session (err %v)", rel, err)
		}
	}
	// What the agent made at absent family names was moved aside, each
	// with an event naming its family.
	for rel, family := range map[string]string{".mcp.json": "agents' project config", ".vscode": "editors", ".cursor": "agents' project config", ".gemini": "agents' project config", ".zed": "editors"} {
		p := filepath.Join(repo, rel)
		if !persistenceEventNames(t, evs, p, family) {
			t.Errorf("%s, made by the agent, was not moved aside with a %q persistence event", rel, family)
		}
		os.RemoveAll(p + ".fedmem-quarantined-" + r.session)
	}
	for _, rel := range []string{"settings.local.json", "commands", "agents", "hooks"} {
		if _, err := os.Lstat(filepath.Join(claudeDir, rel)); !os.IsNotExist(err) {
			t.Errorf("~/.claude/%s left on the host after the session (err %v)", rel, err)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "commondir.fedmem-quarantined-"+r.session)); err != nil {
		t.Errorf("the planted .git/commondir was not moved aside: %v", err)
	}
	os.Remove(filepath.Join(repo, ".git", "commondir.fedmem-quarantined-"+r.session))
	if log := gitRun("log", "--format=%s", "-1"); strings.TrimSpace(log) != "agent commit" {
		t.Errorf("host HEAD is %q, want the agent's commit", log)
	}
	gitRun("rev-parse", "--verify", "agent-branch")
	gitRun("fsck", "--no-progress")
	if st := gitRun("status", "--porcelain", "--ignored"); strings.TrimSpace(st) != "" {
		t.Errorf("host workdir not clean after the session:\n%s", st)
	}
}

// fingerprint is the content of a file, or the names, modes and contents
// of a directory's entries.
func fingerprint(t *testing.T, p string) string {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		return "absent"
	}
	if !fi.IsDir() {
		b, _ := os.ReadFile(p)
		return fi.Mode().String() + " " + string(b)
	}
	var b strings.Builder
	filepath.Walk(p, func(q string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		b.WriteString(q + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			c, _ := os.ReadFile(q)
			b.Write(c)
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}
