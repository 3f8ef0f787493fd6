package demo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/repo"
)

// newVault makes a real vault (fedmem init, same-user layout) and a demo
// home in temporary directories.
func newVault(t *testing.T) (v, home string) {
	t.Helper()
	base := t.TempDir()
	v, home = filepath.Join(base, "vault"), filepath.Join(base, "home")
	if _, err := repo.Init(v, repo.InitOptions{LauncherGroup: &vault.Group{GID: os.Getegid()}}); err != nil {
		t.Fatalf("init: %v", err)
	}
	if err := MakeHome(home); err != nil {
		t.Fatal(err)
	}
	return v, home
}

// TestCheckOutsideUnchanged: a session that wrote only its own inbox and
// its session record leaves the vault "unchanged", and the account says so.
func TestCheckOutsideUnchanged(t *testing.T) {
	v, home := newVault(t)
	const session = "s-demo"
	b, err := TakeBaseline(v, home)
	if err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(v, vault.InboxDir, session)
	if err := os.Mkdir(own, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(own, "draft.md"), []byte("---\ntype: Fact\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(v, vault.SessionsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v, vault.SessionsDir, session+".json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := CheckOutside(v, b, session)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Unchanged() {
		t.Fatalf("a session that wrote only its inbox changed the vault: %+v", o)
	}
	var w bytes.Buffer
	if PrintOutside(&w, o) {
		t.Errorf("PrintOutside failed an unchanged vault:\n%s", w.String())
	}
	for _, want := range []string{
		"HEAD           " + short(b.Head) + " before and after: unchanged\n",
		"git status     clean\n",
		"files and folders compared (content, mode, owner, size, mtime): identical\n",
		"host           /etc/passwd, ~/.bashrc, ~/.ssh and ~/.aws unchanged; nothing planted\n",
	} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("account misses %q:\n%s", want, w.String())
		}
	}
}

// TestCheckOutsideChanged: a note changed, a file planted in .git and the
// demo home's ~/.bashrc appended to are each found, and fail the demo.
func TestCheckOutsideChanged(t *testing.T) {
	v, home := newVault(t)
	b, err := TakeBaseline(v, home)
	if err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(v, filepath.FromSlash(vault.RulesFile))
	if err := os.WriteFile(rules, []byte("# rules rewritten by the agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v, ".git", "planted"), []byte(Mark), 0o644); err != nil {
		t.Fatal(err)
	}
	rc, err := os.OpenFile(filepath.Join(home, ".bashrc"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.WriteString(Mark + "\n"); err != nil {
		t.Fatal(err)
	}
	rc.Close()

	o, err := CheckOutside(v, b, "s-demo")
	if err != nil {
		t.Fatal(err)
	}
	if o.Unchanged() {
		t.Fatalf("changes outside the inbox went unseen: %+v", o)
	}
	if !strings.Contains(o.Status, vault.RulesFile) {
		t.Errorf("git status %q does not name %s", o.Status, vault.RulesFile)
	}
	diffs := strings.Join(o.Diffs, "\n")
	for _, want := range []string{vault.RulesFile + ": changed (content", ".git/planted: created"} {
		if !strings.Contains(diffs, want) {
			t.Errorf("diffs miss %q:\n%s", want, diffs)
		}
	}
	if want := []string{filepath.Join(home, ".bashrc")}; !reflect.DeepEqual(o.HostChanged, want) {
		t.Errorf("host changes %q, want %q", o.HostChanged, want)
	}
	var w bytes.Buffer
	if !PrintOutside(&w, o) {
		t.Errorf("PrintOutside passed a changed vault:\n%s", w.String())
	}
	for _, want := range []string{"git status     NOT CLEAN:\n", " CHANGED:\n                  .git/planted: created\n", "home/.bashrc CHANGED\n"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("account misses %q:\n%s", want, w.String())
		}
	}
	if strings.Contains(w.String(), "nothing planted") {
		t.Errorf("account says the host is unchanged:\n%s", w.String())
	}
}

// TestAgentCommandRunsTheEmbeddedScript: fedmem-run gets the agent script
// byte for byte as agent.sh holds it, after the demo's own arguments, from
// the workdir; as root the agent user and the agents' group are named.
func TestAgentCommandRunsTheEmbeddedScript(t *testing.T) {
	script, err := os.ReadFile("agent.sh")
	if err != nil {
		t.Fatal(err)
	}
	if AgentScript != string(script) {
		t.Fatalf("the embedded agent script (%d bytes) is not agent.sh (%d bytes)", len(AgentScript), len(script))
	}
	l := Layout{Base: "/d", Vault: "/d/vault", Work: "/d/work", Home: "/d/home", Report: "/d/report.json"}
	env := AgentEnv([]string{"HOME=/root", "FEDMEM_SESSION=x", "PATH=/bin"}, l.Home)
	if want := []string{"PATH=/bin", "HOME=/d/home"}; !reflect.DeepEqual(env, want) {
		t.Errorf("agent env %q, want %q", env, want)
	}
	cmd := AgentCommand(context.Background(), l, "/bin/fedmem-run", l.AgentArgs(), env)
	want := []string{"/bin/fedmem-run", "--vault", "/d/vault", "--workdir", "/d/work", "--report", "/d/report.json", "--", "/bin/sh", "-c", string(script), "fedmem-demo-agent"}
	if !reflect.DeepEqual(cmd.Args, want) {
		t.Errorf("fedmem-run args\n%q\nwant\n%q", cmd.Args, want)
	}
	if cmd.Dir != l.Work || cmd.SysProcAttr != nil {
		t.Errorf("dir %q, credential %+v: want the workdir and no credential change", cmd.Dir, cmd.SysProcAttr)
	}

	l.TwoUsers = true
	cmd = AgentCommand(context.Background(), l, "/bin/fedmem-run", l.AgentArgs(), env)
	if got := strings.Join(cmd.Args[:7], " "); got != "/bin/fedmem-run --vault /d/vault --workdir /d/work --agent-user "+AgentUser {
		t.Errorf("two-user args start %q", got)
	}
	if runtime.GOOS == "linux" {
		c := cmd.SysProcAttr.Credential
		if c == nil || c.Uid != 0 || c.Gid != 0 || !reflect.DeepEqual(c.Groups, []uint32{AgentGID}) {
			t.Errorf("two-user credential %+v, want root with group %d", c, AgentGID)
		}
	}
}

// TestPrintAttempts: the summary of the agent's attempts, and which of
// them fail the demo.
func TestPrintAttempts(t *testing.T) {
	good := []Result{
		{"info", "ok", "whoami", "uid=1000 gid=1000 session=2026-abc"},
		{"blocked", "failed", "append to 00-global/AGENT.md", "Read-only file system"},
		{"allowed", "ok", "draft a note", "/v/90-inbox/2026-abc/a.md"},
	}
	a := Classify(good)
	if SessionFromInfo(a.Info) != "2026-abc" {
		t.Errorf("session %q", SessionFromInfo(a.Info))
	}
	var w bytes.Buffer
	if PrintAttempts(&w, a, "") {
		t.Errorf("failed with every attempt blocked:\n%s", w.String())
	}
	want := "1. What the agent is (as it sees itself)\n" +
		"   whoami                       uid=1000 gid=1000 session=2026-abc\n" +
		"\n2. Attempts that must fail: 1 blocked, 0 NOT blocked\n" +
		"   blocked  append to 00-global/AGENT.md\n            Read-only file system\n" +
		"\n3. What it was allowed to do\n" +
		"   ok     draft a note  /v/90-inbox/2026-abc/a.md\n"
	if w.String() != want {
		t.Errorf("account\n%s\nwant\n%s", w.String(), want)
	}

	for name, tc := range map[string]struct {
		results []Result
		want    string
	}{
		"leaked":     {append(good, Result{"blocked", "ok", "write /etc", "done"}), "   NOT BLOCKED  write /etc\n                done\n"},
		"not-let":    {append(good, Result{"allowed", "failed", "draft two", "EACCES"}), "   FAILED draft two  EACCES\n"},
		"no-attempt": {good[:1], "   the agent reported no attempt at all (stdout: \"noise\")\n"},
	} {
		var w bytes.Buffer
		if !PrintAttempts(&w, Classify(tc.results), "noise") {
			t.Errorf("%s: the demo passed:\n%s", name, w.String())
		}
		if !strings.Contains(w.String(), tc.want) {
			t.Errorf("%s: account misses %q:\n%s", name, tc.want, w.String())
		}
	}
}

// TestFinish: the last line is the RESULT only when nothing failed.
func TestFinish(t *testing.T) {
	var w bytes.Buffer
	if err := Finish(&w, false, "/d", false); err != nil || w.String() != "\nRESULT: every write outside the session's inbox was blocked; the vault and the host are unchanged.\n" {
		t.Errorf("passed: %v %q", err, w.String())
	}
	w.Reset()
	if err := Finish(&w, true, "/d", true); !errors.Is(err, ErrFailed) || w.String() != "\nThe demo files are kept in /d\n" {
		t.Errorf("failed: %v %q", err, w.String())
	}
}

// TestPrintReportAndInbox: a missing report or session id fails the demo.
func TestPrintReportAndInbox(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "report.json")
	rep, err := ReadReport(missing)
	if err == nil {
		t.Fatal("read a missing report")
	}
	var w bytes.Buffer
	if !PrintReport(&w, missing, rep, err) || !strings.Contains(w.String(), "   no report: ") {
		t.Errorf("missing report passed: %q", w.String())
	}
	w.Reset()
	if !PrintInbox(&w, t.TempDir(), "../x", err) || !strings.Contains(w.String(), "   no session id in the report (") {
		t.Errorf("bad session id passed: %q", w.String())
	}
	good := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(good, []byte(`{"session":"s1","profile":"default","profile_hash":"0123456789abcdef","exit_code":0,"duration_ms":7,"layers":{ "seccomp": true },"inbox_files":[{"path":"a.md","size":3,"type":"file"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = ReadReport(good)
	if err != nil {
		t.Fatal(err)
	}
	w.Reset()
	if PrintReport(&w, good, rep, nil) {
		t.Errorf("a good report failed: %q", w.String())
	}
	for _, want := range []string{"   session s1, profile default (0123456789ab), agent exit 0, 7 ms\n", "   vault HEAD at start (none), at end (none)\n", "   drafted a.md (3 bytes, file)\n", "   layers {\"seccomp\":true}\n"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("report misses %q:\n%s", want, w.String())
		}
	}
}
