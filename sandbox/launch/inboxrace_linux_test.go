package launch

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault"
)

// inboxRacerEnv makes the test binary the owner of 90-inbox racing a root
// caller's createInbox (TestCreateInboxNoFollowAfterMkdir).
const inboxRacerEnv = "FEDMEM_TEST_INBOX_RACER"

// racerUID owns 90-inbox, as the gate user does (fedmem init --gate-user
// without --agent-group: 90-inbox is 01777 and the gate user's).
const racerUID = 4242

func init() {
	if dir := os.Getenv(inboxRacerEnv); dir != "" {
		os.Exit(inboxRacer(dir, os.Getenv(inboxRacerEnv+"_TARGET")))
	}
}

// inboxRacer watches the inbox; every session folder a root caller makes
// there it moves aside (the owner of a sticky directory may) and puts a
// link to target in its place, before the caller's chmod.
func inboxRacer(dir, target string) int {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return 2
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_ONLYDIR); err != nil {
		return 2
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return 2
	}
	fmt.Println("ready")
	buf := make([]byte, 64*1024)
	for {
		n, err := unix.Read(fd, buf)
		if err != nil || n <= 0 {
			return 0
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			s := string(name)
			if len(s) == 0 || s[0] != 's' {
				continue
			}
			if unix.Renameat(dfd, s, dfd, "aside-"+s) == nil {
				_ = unix.Symlinkat(target, dfd, s)
			}
		}
	}
}

// TestCreateInboxNoFollowAfterMkdir: a root caller makes the session folder
// in 90-inbox, then chowns and chmods it by name. The owner of 90-inbox
// (the gate user, a less trusted uid than root) may rename the fresh
// folder away and put a link in its place between the mkdir and the
// chmod: root then chmods the link's target 02770 — any file or directory
// of the host (/etc: nobody else can traverse it). The folder is chowned
// and chmodded through a descriptor of the directory it made, never by
// name.
func TestCreateInboxNoFollowAfterMkdir(t *testing.T) {
	testutil.RequireRoot(t)
	base := testutil.TempDir(t)
	v := filepath.Join(base, "vault")
	inbox := filepath.Join(v, vault.InboxDir)
	for _, d := range []string{v, inbox} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(inbox, racerUID, racerUID); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(inbox, 0o1777); err != nil {
		t.Fatal(err)
	}
	canary := filepath.Join(base, "canary-system-file")
	if err := os.WriteFile(canary, []byte("root's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The racer is this test binary as racerUID, copied where it can run it.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "racer")
	if b, err := os.ReadFile(self); err != nil || os.WriteFile(bin, b, 0o755) != nil {
		t.Fatalf("copy the test binary: %v", err)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{inboxRacerEnv + "=" + inbox, inboxRacerEnv + "_TARGET=" + canary}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: racerUID, Gid: racerUID}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("racer did not start: %q %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	const attempts = 50000
	refused := 0
	for i := 0; i < attempts; i++ {
		sess := filepath.Join(inbox, fmt.Sprintf("s%d", i))
		if f, err := createInbox(v, sess, 1000); err != nil {
			refused++
		} else {
			f.Close()
		}
		var st unix.Stat_t
		if err := unix.Lstat(canary, &st); err != nil {
			t.Fatal(err)
		}
		if st.Mode&0o7777 != 0o644 || st.Uid != 0 {
			t.Fatalf("BREACH after %d sessions: root's chmod followed the link the owner of 90-inbox put in place of the session folder: %s is now mode %04o uid %d gid %d", i+1, canary, st.Mode&0o7777, st.Uid, st.Gid)
		}
	}
	t.Logf("%d of %d session folders refused as replaced", refused, attempts)
}
