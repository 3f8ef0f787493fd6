package escape

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// swapRacerEnv makes this test binary the owner of 90-inbox/ swapping a
// fresh session folder for a folder of its own (TestRedteamInboxSwappedBeforeBind).
const swapRacerEnv = "FEDMEM_TEST_INBOX_SWAP"

func init() {
	if dir := os.Getenv(swapRacerEnv); dir != "" {
		os.Exit(swapRacer(dir, os.Getenv(swapRacerEnv+"_HOME"), os.Getenv(swapRacerEnv+"_MODE")))
	}
}

// swapRacer watches the inbox as its owner (the gate user: a sticky
// directory's owner may rename any entry). Once fedmem-run has made a
// session folder and set its mode (IN_ATTRIB: createInbox's last step),
// it renames the folder to aside-NAME and puts in its place a folder of
// its own, home/t-NAME (mode 0777): a link to it (mode link) or the
// folder itself, renamed there (mode dir). It says "swapped NAME" then.
func swapRacer(dir, home, mode string) int {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return 2
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_ATTRIB|unix.IN_ONLYDIR); err != nil {
		return 2
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return 2
	}
	fmt.Println("ready")
	fresh := map[string]bool{}
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if err != nil || n <= 0 {
			return 0
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)], "\x00"))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			switch {
			case name == "" || strings.HasPrefix(name, "aside-"):
			case ev.Mask&unix.IN_CREATE != 0:
				fresh[name] = true
			case ev.Mask&unix.IN_ATTRIB != 0 && fresh[name]:
				delete(fresh, name)
				t := filepath.Join(home, "t-"+name)
				if unix.Mkdir(t, 0o700) != nil || unix.Chmod(t, 0o777) != nil {
					return 3
				}
				if unix.Renameat(dfd, name, dfd, "aside-"+name) != nil {
					continue
				}
				if mode == "link" {
					err = unix.Symlinkat(t, dfd, name)
				} else {
					err = unix.Renameat(unix.AT_FDCWD, t, dfd, name)
				}
				if err == nil {
					fmt.Println("swapped " + name)
				}
			}
		}
	}
}

// TestRedteamInboxSwappedBeforeBind: fedmem-run makes the session folder
// in 90-inbox/ and the sandbox binds it writable a few milliseconds later.
// The owner of 90-inbox/ (the gate user here; a host account with the
// agent's uid may too) renames the fresh folder away in between and puts
// a link to a folder of its own there, or that folder itself: bound by
// name, the agent got a writable bind of a folder of the attacker's
// choice, outside the inbox (its writes land there; root even chowned the
// folder to the agent). The backends bind the folder fedmem-run made,
// from its descriptor, and the init refuses a root whose inbox mount is
// another directory (rule inbox-identity): the swap either comes too late
// (the agent writes into the real folder, now aside-NAME) or the session
// is refused before the agent runs.
func TestRedteamInboxSwappedBeforeBind(t *testing.T) {
	for _, l := range []layout{{name: "gate-owned/root", gateOwned: true}, {name: "beside/user", gateOwned: true, user: true}} {
		for _, mode := range []string{"link", "dir"} {
			t.Run(l.name+"/"+mode, func(t *testing.T) {
				e := setup(t, l)
				inbox := filepath.Join(e.vault.Dir, "90-inbox")
				home := filepath.Join(e.base, "gate-home")
				must(t, os.Mkdir(home, 0o755))
				must(t, os.Chown(home, gateUID, gateUID))
				swapped := startSwapRacer(t, e, inbox, home, mode)
				const attempts = 6
				raced, refused := 0, 0
				for i := 0; i < attempts; i++ {
					r := e.run(t, nil, "sh", "-c", `echo planted-by-the-agent > "$FEDMEM_INBOX/planted"`)
					if r.session == "" {
						t.Fatalf("no session in the report: exit %d\n%s", r.code, r.stderr)
					}
					// The attacker's folder: where the link points, or the
					// folder renamed in place of the session's.
					p := filepath.Join(home, "t-"+r.session, "planted")
					if mode == "dir" {
						p = filepath.Join(inbox, r.session, "planted")
					}
					if _, err := os.Lstat(p); err == nil {
						t.Errorf("BREACH (%s): the agent's write landed in %s, a folder the owner of 90-inbox swapped in for the session folder before the bind (exit %d)", mode, p, r.code)
					}
					if !swapped(r.session) {
						continue
					}
					raced++
					aside := filepath.Join(inbox, "aside-"+r.session, "planted")
					_, err := os.Lstat(aside)
					switch {
					case err == nil && r.code == 0:
						t.Logf("attempt %d: swapped after the bind: the agent wrote into its own folder (now %s)", i, aside)
					case errors.Is(err, fs.ErrNotExist) && r.code == 125 && bytes.Contains(r.stderr, []byte("inbox")):
						refused++
						t.Logf("attempt %d: refused: %s", i, firstLine(r.stderr, "inbox"))
						// The removal of an unstarted session's folder
						// removes only the folder fedmem-run made.
						if _, err := os.Lstat(filepath.Join(inbox, r.session)); mode == "dir" && err != nil {
							t.Errorf("attempt %d: the refused run removed the owner of 90-inbox's folder put in place of the session's: %v", i, err)
						}
					default:
						t.Errorf("attempt %d: swapped; exit %d, aside draft %v: want the agent's draft in its own folder, or a refusal (125) that names the inbox\n%s", i, r.code, err, r.stderr)
					}
				}
				if raced == 0 {
					t.Fatalf("the racer swapped no session folder in %d sessions: the test proves nothing", attempts)
				}
				t.Logf("%d of %d sessions raced, %d refused before the agent ran", raced, attempts, refused)
			})
		}
	}
}

// startSwapRacer starts swapRacer as gateUID (the owner of 90-inbox/ in
// the gate-owned layouts) and returns whether it swapped a session's folder.
func startSwapRacer(t *testing.T, e *env, inbox, home, mode string) func(session string) bool {
	t.Helper()
	self, err := os.Executable()
	must(t, err)
	bin := filepath.Join(e.base, "swap-racer")
	b, err := os.ReadFile(self)
	must(t, err)
	must(t, os.WriteFile(bin, b, 0o755))
	cmd := exec.Command(bin)
	cmd.Env = []string{swapRacerEnv + "=" + inbox, swapRacerEnv + "_HOME=" + home, swapRacerEnv + "_MODE=" + mode}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: gateUID, Gid: gateUID}}
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	rd := bufio.NewReader(out)
	if line, err := rd.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("racer did not start: %q %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, rd) }()
	return func(session string) bool {
		// The real folder, renamed aside: the racer swapped this one.
		fi, err := os.Lstat(filepath.Join(inbox, "aside-"+session))
		return err == nil && fi.IsDir()
	}
}

// firstLine is the first line of b that holds s.
func firstLine(b []byte, s string) string {
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
