package seccomp

import (
	"runtime"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
)

// libTables are go-seccomp-bpf's full syscall tables, for the tests only:
// the release binary carries nativeTable instead (no package-init cost).
var libTables = map[string]*arch.Info{"amd64": arch.X86_64, "arm64": arch.AARCH64}

func init() {
	for goarch, info := range libTables {
		if tables[goarch] == nil { // a foreign architecture: for the BPF VM tests
			tables[goarch] = &archTable{ID: uint32(info.ID), SyscallNames: info.SyscallNames}
		}
	}
	moreNames = func(goarch, name string) (int, bool) {
		if info := libTables[goarch]; info != nil {
			n, ok := info.SyscallNames[name]
			return n, ok
		}
		return 0, false
	}
}

// TestNativeTableMatchesLibrary: every number of the built-in table agrees
// with go-seccomp-bpf's table for this architecture, the audit arch too,
// and every system call a rule names is in it.
func TestNativeTableMatchesLibrary(t *testing.T) {
	if nativeTable == nil {
		t.Skipf("no native table on %s", runtime.GOARCH)
	}
	lib := libTables[runtime.GOARCH]
	native := nativeTable()
	if uint32(lib.ID) != native.ID {
		t.Fatalf("audit arch %#x, go-seccomp-bpf says %#x", native.ID, uint32(lib.ID))
	}
	for name, n := range native.SyscallNames {
		if want, ok := lib.SyscallNames[name]; !ok || want != n {
			t.Errorf("%s = %d, go-seccomp-bpf says %d (known: %v)", name, n, want, ok)
		}
	}
	for _, r := range Rules {
		for _, s := range r.Syscalls {
			if _, ok := native.SyscallNames[s]; !ok {
				t.Errorf("rule %s names %s, missing from the native table", r.Name, s)
			}
		}
	}
}
