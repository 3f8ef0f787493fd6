package sandbox

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpenListedSocketNoLink: the bind of a listed socket opens it with no
// link followed and only as a socket or FIFO — a folder on the way swapped
// for a link (ELOOP), the socket's name a link, a directory or a regular
// file in its place are refused (rule unix-socket-no-link), whatever the
// plan saw before.
func TestOpenListedSocketNoLink(t *testing.T) {
	d := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(d, "real"), 0o755))
	sock := filepath.Join(d, "real", "app.sock")
	ln, err := net.Listen("unix", sock)
	must(err)
	defer ln.Close()
	must(unix.Mkfifo(filepath.Join(d, "real", "fifo"), 0o600))
	must(os.WriteFile(filepath.Join(d, "real", "secret"), []byte("x"), 0o600))
	must(os.Symlink("real", filepath.Join(d, "link")))
	must(os.Symlink("app.sock", filepath.Join(d, "real", "name.sock")))
	for _, ok := range []string{sock, filepath.Join(d, "real", "fifo")} {
		fd, err := OpenListedSocket(ok)
		if err != nil {
			t.Errorf("%s: %v, want it opened", ok, err)
			continue
		}
		unix.Close(fd)
	}
	for _, bad := range []string{filepath.Join(d, "link", "app.sock"), filepath.Join(d, "real", "name.sock"), filepath.Join(d, "real"), filepath.Join(d, "real", "secret")} {
		fd, err := OpenListedSocket(bad)
		if err == nil {
			unix.Close(fd)
			t.Errorf("%s opened as a listed socket", bad)
			continue
		}
		var me *MountError
		if !errors.As(err, &me) {
			t.Errorf("%s: %v, want a MountError naming it", bad, err)
		}
	}
}
