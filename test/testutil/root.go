package testutil

import (
	"os"
	"testing"
)

// RequireRoot skips t unless the process runs as root. When the environment
// sets FEDMEM_REQUIRE_ROOT=1 (CI does), a missing root fails the test
// instead: root-only suites never skip silently where they must run.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("FEDMEM_REQUIRE_ROOT") == "1" {
		t.Fatalf("this test needs root and FEDMEM_REQUIRE_ROOT=1 is set (euid %d)", os.Geteuid())
	}
	t.Skipf("needs root (euid %d); set FEDMEM_REQUIRE_ROOT=1 to make this a failure", os.Geteuid())
}
