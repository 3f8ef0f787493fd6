package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// SharedTestBase is TempBase's default: a root-made directory the sandbox
// shows as it is, outside the system directories a profile's writable:
// may not name (/var/lib, profiles.systemDirs) and the system's trees no
// workdir may be in (mounts rule workdir-system: /var but /var/tmp, /opt).
// Not /tmp nor /var/tmp: the sandbox mounts a private
// tmpfs on each (a host's shared scratch directories hold other users'
// sockets and FIFOs, issue 22), so the test's binaries and fixtures there
// would not exist inside it.
const SharedTestBase = "/srv/fedmem-test"

// TempBase is the parent of every scratch directory: FEDMEM_TEST_TMP, else
// SharedTestBase where it exists or this process can make it (root),
// else /var/tmp (an unprivileged run of the tests that start no sandbox).
func TempBase() string {
	if d := os.Getenv("FEDMEM_TEST_TMP"); d != "" {
		return d
	}
	if fi, err := os.Stat(SharedTestBase); err == nil && fi.IsDir() {
		return SharedTestBase
	}
	if err := os.MkdirAll(SharedTestBase, 0o755); err == nil {
		if os.Chmod(SharedTestBase, 0o755) == nil {
			return SharedTestBase
		}
	}
	return "/var/tmp"
}

// TempDir makes a scratch directory under TempBase, mode 0755 so that an
// unprivileged test user can traverse it, removed when t ends. Its path is
// free of symlinks.
func TempDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp(TempBase(), "fedmem-test-")
	if err != nil {
		t.Fatalf("scratch dir: %v", err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatalf("scratch dir: %v", err)
	}
	if r, err := filepath.EvalSymlinks(d); err == nil {
		d = r
	}
	t.Cleanup(func() {
		// Make everything removable again (tests chmod and chown).
		filepath.Walk(d, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
		if err := os.RemoveAll(d); err != nil {
			t.Logf("remove %s: %v", d, err)
		}
	})
	return d
}
