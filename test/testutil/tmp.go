package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// TempBase is the parent of every scratch directory. It must not be /tmp:
// the sandbox mounts a private tmpfs there, so paths under the host's /tmp
// do not exist inside it. FEDMEM_TEST_TMP overrides the default /var/tmp.
func TempBase() string {
	if d := os.Getenv("FEDMEM_TEST_TMP"); d != "" {
		return d
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
