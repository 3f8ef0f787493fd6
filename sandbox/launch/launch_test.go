package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/sandbox"
	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault"
)

// TestEnvExactAllowList: locale variables pass by exact name — "LC_*" in a
// profile stands for the POSIX/glibc locale names only, so LC_ANY_TOKEN
// does not pass; FEDMEM_* never passes; with a proxied network the
// caller's proxy settings are replaced by the sandbox's relay.
func TestEnvExactAllowList(t *testing.T) {
	environ := []string{
		"LANG=C.UTF-8", "LC_ALL=C", "LC_TIME=de_DE.UTF-8", "LC_ANY_TOKEN=secret", "LC_=x", "LCX=1",
		"PATH=/bin", "FEDMEM_GATE_TOKEN=s", "HTTPS_PROXY=http://corp:8080", "https_proxy=http://corp:8080",
		"ANTHROPIC_API_KEY=k", "AWS_SECRET_ACCESS_KEY=nope",
	}
	pl := &mounts.Plan{Vault: "/v", Inbox: "/v/90-inbox/s", Session: "s"}
	for _, name := range []string{"default", "claude"} {
		p, _, err := profiles.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		env := Env(p, pl, "/home/u", environ)
		has := func(kv string) bool { return slices.Contains(env, kv) }
		for _, want := range []string{"LANG=C.UTF-8", "LC_ALL=C", "LC_TIME=de_DE.UTF-8", "PATH=/bin", "HOME=/home/u",
			"FEDMEM_INBOX=/v/90-inbox/s", "HTTPS_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128"} {
			if !has(want) {
				t.Errorf("%s: %s missing from %q", name, want, env)
			}
		}
		for _, kv := range env {
			k, _, _ := strings.Cut(kv, "=")
			if k == "LC_ANY_TOKEN" || k == "LC_" || k == "LCX" || k == "FEDMEM_GATE_TOKEN" || k == "AWS_SECRET_ACCESS_KEY" || strings.Contains(kv, "corp:8080") {
				t.Errorf("%s: %s passed", name, kv)
			}
		}
		if got := has("ANTHROPIC_API_KEY=k"); got != (name == "claude") {
			t.Errorf("%s: ANTHROPIC_API_KEY passed = %v", name, got)
		}
	}
	// A user profile that still says LC_* gets the same exact list.
	p := &profiles.Profile{Network: profiles.NetworkNone, Env: profiles.Env{Pass: []string{"LC_*"}}}
	env := Env(p, pl, "/h", environ)
	if slices.Contains(env, "LC_ANY_TOKEN=secret") || !slices.Contains(env, "LC_ALL=C") || slices.Contains(env, "LANG=C.UTF-8") {
		t.Errorf("LC_* pattern: %q", env)
	}
}

// TestOpenOutputRefusesPlanted: the report and events paths are never
// followed: a symlink, a FIFO, a hard link to another file and a directory
// at the path are refused with a reason, the link's target untouched; a new
// file is created, an existing regular file of the caller is reused and
// rewritten through the descriptor.
func TestOpenOutputRefusesPlanted(t *testing.T) {
	dir := t.TempDir()
	canary := filepath.Join(dir, "canary")
	if err := os.WriteFile(canary, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	os.Symlink(canary, link)
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.json")
	if err := os.Link(canary, hard); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub.json")
	os.Mkdir(sub, 0o755)
	for path, why := range map[string]string{link: "symbolic link", fifo: "not a regular file", hard: "2 hard links", sub: "is a directory"} {
		for _, app := range []bool{false, true} {
			f, err := openOutput("--report", path, app, []string{dir})
			if err == nil {
				f.Close()
				t.Errorf("%s (append %v): opened", path, app)
				continue
			}
			if !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "--report "+path) {
				t.Errorf("%s: %v, want the reason %q and the path", path, err, why)
			}
		}
	}
	// A directory of the path replaced by a link, inside the writable
	// area: refused; the same link outside it (the caller's own layout)
	// is followed.
	elsewhere := t.TempDir()
	os.Symlink(elsewhere, filepath.Join(dir, "out"))
	if f, err := openOutput("--report", filepath.Join(dir, "out", "r.json"), false, []string{dir}); err == nil || !strings.Contains(err.Error(), "is a symbolic link in a path the agent can write") {
		if f != nil {
			f.Close()
		}
		t.Errorf("a linked directory under the writable area: %v", err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "r.json")); err == nil {
		t.Errorf("created through the planted directory link")
	}
	// Outside it: followed for an unprivileged caller (the link is its
	// own); refused for root, whose agents' links in an idmapped workdir
	// are root's on disk (TestRedteamReportDirLinkFromOtherWorkdir).
	f, err := openOutput("--report", filepath.Join(dir, "out", "r.json"), false, []string{"/nowhere"})
	if os.Geteuid() == 0 {
		if err == nil || !strings.Contains(err.Error(), "run as root follows no link") {
			t.Fatalf("root, a link outside the writable area: %v, want refused", err)
		}
		if _, err := os.Stat(filepath.Join(elsewhere, "r.json")); err == nil {
			t.Errorf("root created the report through a link")
		}
	} else {
		if err != nil {
			t.Fatalf("a link outside the writable area: %v", err)
		}
		f.Close()
	}
	if b, _ := os.ReadFile(canary); string(b) != "precious\n" {
		t.Fatalf("canary changed: %q", b)
	}
	fresh := filepath.Join(dir, "fresh.json")
	f, err = openOutput("--report", fresh, false, []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := rewrite(f, []byte("a long first version\n")); err != nil {
		t.Fatal(err)
	}
	if err := rewrite(f, []byte("short\n")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b, _ := os.ReadFile(fresh); string(b) != "short\n" {
		t.Errorf("rewrite: %q", b)
	}
	f, err = openOutput("--report", fresh, false, []string{dir})
	if err != nil {
		t.Fatalf("an existing regular file of the caller: %v", err)
	}
	f.Close()
}

// fakeBackend stands in for the sandbox in lifecycle tests: it checks what
// Run hands a backend and writes through the spec's stdio.
type fakeBackend struct {
	spec *sandbox.Spec
	code int
}

func (*fakeBackend) Name() string { return "fake" }
func (f *fakeBackend) Run(_ context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	f.spec = spec
	spec.Stdout.WriteString("agent out\n")
	spec.Stderr.WriteString("agent err\n")
	if spec.Event != nil {
		spec.Event("started", map[string]any{"layers": "fake"})
	}
	return &sandbox.Result{ExitCode: f.code, Layers: sandbox.Layers{Backend: "fake"}}, nil
}

func newVault(t *testing.T) (string, string) {
	t.Helper()
	base := testutil.TempDir(t)
	v := testutil.NewVault(t, filepath.Join(base, "vault"), testutil.VaultOptions{})
	wd := filepath.Join(base, "work")
	if err := os.Mkdir(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	return v.Dir, wd
}

// TestRunLifecycle: Run with buffers for stdio resolves the session,
// relays the agent's output into the buffers (never handing a non-file to
// the backend), writes the report and the session record (one type, read
// back as vault.SessionRecord), appends events, and returns the agent's
// exit code.
func TestRunLifecycle(t *testing.T) {
	v, wd := newVault(t)
	var stdout, stderr bytes.Buffer
	fb := &fakeBackend{code: 3}
	rep := filepath.Join(wd, "session.json")
	evs := filepath.Join(wd, "events.jsonl")
	o := &Options{Vault: v, Workdir: wd, Argv: []string{"agent", "--x"}, Report: rep, Events: evs,
		Stdin: strings.NewReader("in"), Stdout: &stdout, Stderr: &stderr, Backend: fb,
		Environ: []string{"LC_ANY_TOKEN=secret", "LANG=C"}}
	code, err := Run(context.Background(), o)
	if err != nil || code != 3 {
		t.Fatalf("Run = %d, %v\nstderr: %s", code, err, stderr.String())
	}
	if stdout.String() != "agent out\n" || !strings.Contains(stderr.String(), "agent err\n") {
		t.Errorf("stdio relays: stdout %q stderr %q", stdout.String(), stderr.String())
	}
	s := fb.spec
	if s.Plan.Network != profiles.NetworkPublic || s.Proxy == nil || slices.Contains(s.Env, "LC_ANY_TOKEN=secret") || !slices.Contains(s.Env, "LANG=C") {
		t.Errorf("spec: network %s proxy %v env %q", s.Plan.Network, s.Proxy, s.Env)
	}
	var r Report
	b, err := os.ReadFile(rep)
	if err != nil || json.Unmarshal(b, &r) != nil {
		t.Fatalf("report: %v %s", err, b)
	}
	if r.ExitCode != 3 || r.Profile != "default" || r.Session == "" || r.Network != "public" || r.Layers == nil || r.Layers.Backend != "fake" {
		t.Errorf("report: %+v", r)
	}
	var rec vault.SessionRecord
	b, err = os.ReadFile(vault.SessionRecordPath(v, r.Session))
	if err != nil || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("session record: %v %s", err, b)
	}
	if rec.Session != r.Session || rec.Profile != "default" || rec.ProfileHash != r.ProfileHash || rec.UID != s.UID || (os.Getuid() == 0 && (s.UID == 0 || s.GID == 0)) || rec.Started != r.Started || !slices.Equal(rec.Command, []string{"agent", "--x"}) {
		t.Errorf("record %+v, report %+v", rec, r.SessionRecord)
	}
	// Not setgid here: the record is rewritten at exit with its end.
	if st, err1 := time.Parse(time.RFC3339Nano, rec.Started); err1 != nil {
		t.Errorf("record started %q: %v", rec.Started, err1)
	} else if end, err2 := time.Parse(time.RFC3339Nano, rec.Ended); err2 != nil || end.Before(st) {
		t.Errorf("record ended %q (started %q): %v", rec.Ended, rec.Started, err2)
	}
	ev, _ := os.ReadFile(evs)
	for _, want := range []string{`"event":"start"`, `"event":"started"`, `"event":"exit"`, `"network":"public"`} {
		if !strings.Contains(string(ev), want) {
			t.Errorf("events lack %s:\n%s", want, ev)
		}
	}
}

// TestRunRefuses: what cannot run exits 125 before anything is created: a
// profile `fedmem profile check` calls invalid (named by file, line and
// rule), a flag that loosens the profile, a planted link at --report.
func TestRunRefuses(t *testing.T) {
	v, wd := newVault(t)
	bad := filepath.Join(wd, "bad.yaml")
	os.WriteFile(bad, []byte("name: bad\nextends: default\nwritable: [/etc]\n"), 0o644)
	canary := filepath.Join(wd, "canary")
	os.WriteFile(canary, []byte("keep"), 0o644)
	os.Symlink(canary, filepath.Join(wd, "planted.json"))
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Profile: bad}, bad + `:3: writable[0] "/etc" lies inside the system directory /etc`},
		{Options{Profile: bad}, "(rule writable-system-dir)"},
		{Options{Profile: "strict", Network: "public"}, "--network public would loosen profile strict (network: none)"},
		{Options{Network: "host"}, "--network host would loosen profile default (network: public)"},
		{Options{Report: filepath.Join(wd, "planted.json")}, "is a symbolic link: refused"},
		{Options{Events: filepath.Join(wd, "planted.json")}, "is a symbolic link: refused"},
	} {
		o := tc.o
		o.Vault, o.Workdir, o.Argv = v, wd, []string{"true"}
		fb := &fakeBackend{}
		o.Backend = fb
		code, err := Run(context.Background(), &o)
		if code != sandbox.ExitFedmemError || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %d %v, want 125 and %q", tc.o, code, err, tc.want)
		}
		if fb.spec != nil {
			t.Errorf("%+v: the backend ran", tc.o)
		}
	}
	if b, _ := os.ReadFile(canary); string(b) != "keep" {
		t.Errorf("canary: %q", b)
	}
	ents, _ := os.ReadDir(filepath.Join(v, vault.InboxDir))
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(e.Name(), "other-session") {
			t.Errorf("a refused run left an inbox: %s", e.Name())
		}
	}
}

// TestExplainSharesResolve: --explain output comes from the same
// resolution as the run (buffers, no host change).
func TestExplainSharesResolve(t *testing.T) {
	v, wd := newVault(t)
	var out bytes.Buffer
	code, err := Run(context.Background(), &Options{Vault: v, Workdir: wd, Explain: true, Profile: "claude", Stdout: &out})
	if err != nil || code != 0 {
		t.Fatalf("explain: %d %v", code, err)
	}
	for _, want := range []string{"profile claude", "network public", "KIND", "layers:", "to public addresses only", "writable: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("explain lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if _, err := Run(context.Background(), &Options{Vault: v, Workdir: wd, Explain: true, ExplainJSON: true, Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	var j struct {
		Network string      `json:"network"`
		Plan    mounts.Plan `json:"plan"`
		Layers  []string    `json:"layers"`
	}
	if err := json.Unmarshal(out.Bytes(), &j); err != nil || j.Network != "public" || j.Plan.Vault != v || len(j.Layers) == 0 {
		t.Errorf("explain --json: %v %+v", err, j)
	}
}
