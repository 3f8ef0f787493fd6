package seccomp

import (
	"testing"

	"golang.org/x/net/bpf"
)

// TestWriteCallsNotInRules: no write call is one a rule refuses
// unconditionally. Were one both, the deny-list would still win in the
// filter (a refusal returns before the write section), but the data would
// say two things. A conditional rule (suid-sgid) refuses some of a write
// call's calls; the ones it allows go on to the write section.
func TestWriteCallsNotInRules(t *testing.T) {
	inRules := map[string]string{}
	for _, r := range Rules {
		for _, s := range r.Syscalls {
			if r.Cond == nil {
				inRules[s] = r.Name
			}
		}
	}
	seen := map[string]bool{}
	for _, c := range WriteCalls {
		if r, ok := inRules[c.Name]; ok {
			t.Errorf("write call %s is refused by rule %s", c.Name, r)
		}
		if seen[c.Name] || c.Op == "" || len(c.Paths) == 0 {
			t.Errorf("write call %+v: duplicate, no op or no path", c)
		}
		seen[c.Name] = true
	}
}

// TestAssembleNotifyWrites: in the notifying filter, on both
// architectures, a write-intent open and every other write call go to the
// listener; a read-only open, an fd-only utimensat and everything else the
// deny-list allows are allowed in the kernel; and a call the deny-list
// refuses, a foreign architecture and x32 keep their answers. Decide says
// the errno filter allows the write calls (the listener continues them).
func TestAssembleNotifyWrites(t *testing.T) {
	for _, ga := range []string{"amd64", "arm64"} {
		t.Run(ga, func(t *testing.T) {
			plain := newVM(t, ga)
			m, _ := newNotifyVM(t, ga, true)
			run := func(nr uint32, args ...uint64) uint32 {
				out, err := m.Run(seccompData(nr, plain.audit, args...))
				if err != nil {
					t.Fatal(err)
				}
				return uint32(out)
			}
			d, err := NewDecider(ga)
			if err != nil {
				t.Fatal(err)
			}
			w, err := NewWrites(ga)
			if err != nil {
				t.Fatal(err)
			}
			const ptr = 0x7fff_0000_1000
			for _, c := range WriteCalls {
				nr, ok := SyscallNumber(ga, c.Name)
				if !ok {
					if !c.Legacy || ga == "amd64" {
						t.Errorf("%s: no number on %s", c.Name, ga)
					}
					continue
				}
				if w.Call(int32(nr)) == nil {
					t.Errorf("%s: Writes does not know %d", c.Name, nr)
				}
				args := make([]uint64, 6)
				for _, p := range c.Paths {
					args[p.Path] = ptr
				}
				if c.Flags >= 0 {
					for _, f := range []uint64{0, 0x80000 /* O_CLOEXEC */, 0x10000 | 0x800 /* O_DIRECTORY|O_NONBLOCK */, 0xffffffff_00000000} {
						args[c.Flags] = f
						if got := run(uint32(nr), args...); got != retAllow {
							t.Errorf("%s flags %#x (read-only): %#x, want allow", c.Name, f, got)
						}
					}
					for _, f := range []uint64{1, 2, 0x40, 0x200, 0x80041, 0x410000 | 2 /* O_TMPFILE|O_RDWR */} {
						args[c.Flags] = f
						if got := run(uint32(nr), args...); got != retUserNotif {
							t.Errorf("%s flags %#x (write): %#x, want notify", c.Name, f, got)
						}
					}
				} else if got := run(uint32(nr), args...); got != retUserNotif {
					t.Errorf("%s: %#x, want notify", c.Name, got)
				}
				if c.NullPath {
					args[c.Paths[0].Path] = 0
					if got := run(uint32(nr), args...); got != retAllow {
						t.Errorf("%s with a NULL path (an fd operation): %#x, want allow", c.Name, got)
					}
					args[c.Paths[0].Path] = 1 << 32 // not NULL: the high word counts
					if got := run(uint32(nr), args...); got != retUserNotif {
						t.Errorf("%s with path 1<<32: %#x, want notify", c.Name, got)
					}
				}
				var a [6]uint64
				copy(a[:], args)
				if den := d.Decide(int32(nr), plain.audit, a); !den.Allowed() {
					t.Errorf("%s: Decide says the errno filter refuses it: %+v", c.Name, den)
				}
			}
			for _, s := range []string{"read", "write", "close", "getpid"} {
				if got := run(plain.nr(s)); got != retAllow {
					t.Errorf("%s: %#x, want allow", s, got)
				}
			}
			// The deny-list is unchanged in front of the write section.
			if got := run(plain.nr("mount")); got != retUserNotif {
				t.Errorf("mount: %#x, want notify", got)
			}
			if den := d.Decide(int32(plain.nr("mount")), plain.audit, [6]uint64{}); den.Allowed() || den.ErrnoValue() != EPERM {
				t.Errorf("mount: Decide %+v", den)
			}
			if out, _ := m.Run(seccompData(plain.nr("openat"), 0x40000003 /* AUDIT_ARCH_I386 */, 0, ptr, 1)); uint32(out) != retKillProcess {
				t.Errorf("foreign arch openat: %#x, want kill", uint32(out))
			}
			if ga == "amd64" {
				if got := run(x32SyscallBit|plain.nr("openat"), 0, ptr, 1); got != retErrno|uint32(ENOSYS) {
					t.Errorf("x32 openat: %#x, want ENOSYS", got)
				}
			}
		})
	}
}

func TestIsWriteOpen(t *testing.T) {
	for f, want := range map[uint64]bool{0: false, 0x80000: false, 1: true, 2: true, 0x40: true, 0x200: true, 0x400: false /* O_APPEND alone */} {
		if IsWriteOpen(f) != want {
			t.Errorf("IsWriteOpen(%#x) = %v", f, !want)
		}
	}
}

// TestAssembleNotifyWithoutWrites: with the write section off
// (--fs-denials off), on both architectures, every write call — a
// write-intent open included — is allowed in the kernel and never reaches
// the listener, while the deny-list answers exactly as in the filter with
// the write section (refusals still notified), and the foreign-arch kill
// and x32 ENOSYS are unchanged. The program is shorter by the section.
func TestAssembleNotifyWithoutWrites(t *testing.T) {
	for _, ga := range []string{"amd64", "arm64"} {
		t.Run(ga, func(t *testing.T) {
			plain := newVM(t, ga)
			off, nOff := newNotifyVM(t, ga, false)
			on, nOn := newNotifyVM(t, ga, true)
			if nOff >= nOn {
				t.Errorf("without writes %d instructions, with %d: the section is still there", nOff, nOn)
			}
			run := func(m *bpf.VM, arch, nr uint32, args ...uint64) uint32 {
				out, err := m.Run(seccompData(nr, arch, args...))
				if err != nil {
					t.Fatal(err)
				}
				return uint32(out)
			}
			const ptr = 0x7fff_0000_1000
			for _, c := range WriteCalls {
				nr, ok := SyscallNumber(ga, c.Name)
				if !ok {
					continue
				}
				args := make([]uint64, 6)
				for _, p := range c.Paths {
					args[p.Path] = ptr
				}
				flags := []uint64{0}
				if c.Flags >= 0 {
					flags = []uint64{0, 1, 2, 0x40, 0x200, 0x80041}
				}
				for _, f := range flags {
					if c.Flags >= 0 {
						args[c.Flags] = f
					}
					if got := run(off, plain.audit, uint32(nr), args...); got != retAllow {
						t.Errorf("%s flags %#x: %#x, want allow (no write section)", c.Name, f, got)
					}
				}
				// Sanity: the same call with write intent does notify when
				// the section is on, so the loop above can fail.
				if c.Flags >= 0 {
					args[c.Flags] = 0x41
				}
				if got := run(on, plain.audit, uint32(nr), args...); got != retUserNotif {
					t.Errorf("%s with the write section: %#x, want notify", c.Name, got)
				}
			}
			argSets := [][]uint64{{0, 0, 0, 0, 0, 0}, {0x10000000, 0, 0, 0, 0, 0}, {0x00020000, 0, 0, 0, 0, 0}, {0x5412, 0x5412, 0, 0, 0, 0}}
			notified := 0
			for _, r := range Rules {
				for _, s := range r.Syscalls {
					if _, ok := SyscallNumber(ga, s); !ok && legacyCalls[s] {
						continue
					}
					for _, args := range argSets {
						a, b := run(off, plain.audit, plain.nr(s), args...), run(on, plain.audit, plain.nr(s), args...)
						// A write call the suid-sgid rule allows goes on to
						// the write section.
						if a == retAllow && b == retUserNotif && isWriteCall(s) {
							continue
						}
						if b == retUserNotif && a != b || b&0xffff0000 == retErrno && a != b {
							t.Errorf("%s%v: without writes %#x, with writes %#x", s, args, a, b)
						}
						if a == retUserNotif {
							notified++
						}
					}
				}
			}
			if notified == 0 {
				t.Error("no refusal reaches the listener without the write section")
			}
			if got := run(off, plain.audit, plain.nr("mount")); got != retUserNotif {
				t.Errorf("mount: %#x, want notify", got)
			}
			for _, s := range []string{"read", "write", "close", "getpid"} {
				if got := run(off, plain.audit, plain.nr(s)); got != retAllow {
					t.Errorf("%s: %#x, want allow", s, got)
				}
			}
			if got := run(off, 0x40000003 /* AUDIT_ARCH_I386 */, plain.nr("openat"), 0, ptr, 1); got != retKillProcess {
				t.Errorf("foreign arch openat: %#x, want kill", got)
			}
			if ga == "amd64" {
				if got := run(off, plain.audit, x32SyscallBit|plain.nr("openat"), 0, ptr, 1); got != retErrno|uint32(ENOSYS) {
					t.Errorf("x32 openat: %#x, want ENOSYS", got)
				}
			}
		})
	}
}

func isWriteCall(name string) bool {
	for _, c := range WriteCalls {
		if c.Name == name {
			return true
		}
	}
	return false
}
