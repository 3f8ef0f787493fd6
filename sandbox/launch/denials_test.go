package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/sandbox"
	"github.com/fedmem/fedmem/vault"
)

// TestExplainInbox: --explain runs the inbox check a launch runs first
// and says when the inbox's mode would refuse the agent.
func TestExplainInbox(t *testing.T) {
	v, wd := newVault(t)
	explain := func() string {
		var out bytes.Buffer
		if code, err := Run(context.Background(), &Options{Vault: v, Workdir: wd, Explain: true, Stdout: &out}); err != nil || code != 0 {
			t.Fatalf("explain: %d %v", code, err)
		}
		return out.String()
	}
	if out := explain(); !strings.Contains(out, "inbox check: ok") {
		t.Errorf("explain lacks the inbox check:\n%s", out)
	}
	inbox := filepath.Join(v, vault.InboxDir)
	st, err := os.Stat(inbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(inbox, 0o500); err != nil {
		t.Fatal(err)
	}
	defer unix.Chmod(inbox, uint32(st.Sys().(*syscall.Stat_t).Mode&0o7777))
	out := explain()
	if !strings.Contains(out, "inbox check: a run would be REFUSED") || !strings.Contains(out, "mode 0500") {
		t.Errorf("explain does not say the inbox refuses the run:\n%s", out)
	}
	// Each other rule, with its fix (the group-only modes refuse this
	// uid too, which is not in the group: only the warnings are checked).
	for _, c := range []struct {
		mode       uint32
		rule, want string
	}{
		{0o770, "warning [inbox-setgid]", "fedmem init --agent-group"},
		{0o777, "warning [inbox-sticky]", "mode 01777"},
		{0o3770, "", ""},
		{0o1777, "", ""},
	} {
		if err := unix.Chmod(inbox, c.mode); err != nil {
			t.Fatal(err)
		}
		out := explain()
		if c.rule == "" {
			if strings.Contains(out, "inbox check: warning") {
				t.Errorf("mode %04o: %s", c.mode, out)
			}
			continue
		}
		if !strings.Contains(out, c.rule) || !strings.Contains(out, c.want) {
			t.Errorf("mode %04o: explain lacks %q with %q:\n%s", c.mode, c.rule, c.want, out)
		}
	}
	if err := os.Chmod(inbox, 0o500); err != nil {
		t.Fatal(err)
	}
	// And a run is refused the same way, before the backend starts.
	fb := &fakeBackend{}
	code, err := Run(context.Background(), &Options{Vault: v, Workdir: wd, Argv: []string{"true"}, Backend: fb})
	if code != sandbox.ExitFedmemError || err == nil || !strings.Contains(err.Error(), "mode 0500") || fb.spec != nil {
		t.Errorf("run: %d %v (backend ran: %v)", code, err, fb.spec != nil)
	}
}

// denyingBackend reports two refused system calls and a flood marker, as
// the namespace backend does from the init's messages.
type denyingBackend struct{ fakeBackend }

func (f *denyingBackend) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	for _, d := range []*sandbox.Denied{
		{Kind: "syscall", Syscall: "mount", Rule: "mount", Errno: "EPERM", Hint: "h"},
		{Kind: "syscall", Syscall: "mount", Rule: "mount", Errno: "EPERM", Hint: "h"},
		{Kind: "syscall", Syscall: "unshare", Rule: "unshare-namespaces", Errno: "EPERM", Hint: "h"},
		{Kind: "filesystem", Op: "open", Syscall: "openat", Path: "/vault/a.md", Errno: "EROFS", Hint: "h"},
		{Kind: "filesystem", Op: "mkdir", Syscall: "mkdirat", Path: "/vault/d", Errno: "EROFS", Hint: "h"},
		{Kind: "filesystem", Op: "open", Syscall: "open", Path: "/b", Errno: "EROFS", Hint: "h"},
		{Kind: "syscall", Truncated: true},
	} {
		spec.Event("denied", d.Fields())
	}
	return f.fakeBackend.Run(ctx, spec)
}

// TestReportCountsDenials: "denied" events are counted in the report by
// kind, by system call (kind syscall) and by operation (kind filesystem),
// even without --events, and stderr says so.
func TestReportCountsDenials(t *testing.T) {
	v, wd := newVault(t)
	rep := filepath.Join(wd, "r.json")
	var stderr bytes.Buffer
	if _, err := Run(context.Background(), &Options{Vault: v, Workdir: wd, Argv: []string{"true"}, Report: rep, Stderr: &stderr, Backend: &denyingBackend{}}); err != nil {
		t.Fatal(err)
	}
	var r Report
	b, _ := os.ReadFile(rep)
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	d := r.Denials
	if d == nil || d.Total != 6 || d.ByKind["syscall"] != 3 || d.ByKind["filesystem"] != 3 || d.BySyscall["mount"] != 2 || d.BySyscall["unshare"] != 1 ||
		len(d.BySyscall) != 2 || d.ByOp["open"] != 2 || d.ByOp["mkdir"] != 1 || !d.Truncated {
		t.Errorf("report denials: %+v", d)
	}
	if !strings.Contains(stderr.String(), "6 operation(s) refused by the sandbox") {
		t.Errorf("stderr: %q", stderr.String())
	}
}
