package vault_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault"
)

// TestHelperSetgidLauncher is not a test: TestDropLauncherGroup runs a
// setgid copy of this binary as an ordinary user.
func TestHelperSetgidLauncher(t *testing.T) {
	sessions := os.Getenv("FEDMEM_LAUNCHER_SESSIONS")
	if sessions == "" {
		t.Skip("helper process for TestDropLauncherGroup")
	}
	before := syscall.Getegid()
	// While it holds the group, the launcher can write a record.
	werr := os.WriteFile(filepath.Join(sessions, "s-1.json"), []byte("{}"), 0o644)
	dropped, err := vault.DropLauncherGroup()
	// After the drop, it cannot.
	aerr := os.WriteFile(filepath.Join(sessions, "s-2.json"), []byte("{}"), 0o644)
	fmt.Printf("egid-before=%d write-before=%v dropped=%v err=%v egid-after=%d gid=%d write-after=%v\n",
		before, werr == nil, dropped, err, syscall.Getegid(), syscall.Getgid(), aerr == nil)
	os.Exit(0)
}

func TestDropLauncherGroup(t *testing.T) {
	testutil.RequireRoot(t)
	const uid, gid, launcher = 64001, 64001, 64010
	base := testutil.TempDir(t)
	sessions := filepath.Join(base, "sessions")
	os.Mkdir(sessions, 0o770)
	os.Chown(sessions, 0, launcher)
	os.Chmod(sessions, 0o3770)
	self, _ := os.Executable()
	bin := filepath.Join(base, "launcher.test")
	in, _ := os.Open(self)
	out, _ := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	io.Copy(out, in)
	in.Close()
	out.Close()
	os.Chown(bin, 0, launcher)
	if err := os.Chmod(bin, 0o755|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestHelperSetgidLauncher$")
	cmd.Env = append(os.Environ(), "FEDMEM_LAUNCHER_SESSIONS="+sessions)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}}
	o, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, o)
	}
	want := fmt.Sprintf("egid-before=%d write-before=true dropped=true err=<nil> egid-after=%d gid=%d write-after=false", launcher, gid, gid)
	if !strings.Contains(string(o), want) {
		t.Fatalf("got %s\nwant %s", o, want)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(sessions, "s-1.json"), &st); err != nil || st.Gid != launcher || st.Uid != uid {
		t.Fatalf("record written while holding the group: %+v %v", st, err)
	}
}
