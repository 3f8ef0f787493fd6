package seccomp

import (
	"runtime"
	"testing"
)

// TestAssembleNotify: the notifying filter differs from the errno filter
// only where the errno filter refuses with a notifying errno; there it
// hands the call to the listener, and Decide gives back that same errno
// and rule. Compatibility answers (ENOSYS, EOPNOTSUPP) stay in the kernel.
func TestAssembleNotify(t *testing.T) {
	ga := runtime.GOARCH
	plain := newVM(t, ga)
	nm, _ := newNotifyVM(t, ga, true)
	d, err := NewDecider(ga)
	if err != nil {
		t.Fatal(err)
	}
	argSets := [][]uint64{{0, 0, 0, 0, 0, 0}, {0x10000000, 0, 0, 0, 0, 0}, {0x00020000, 0, 0, 0, 0, 0}, {0x400, 0, 0, 0, 0, 0}, {0x5412, 0x5412, 0, 0, 0, 0}, {0xffffffff, 0x5412, 0, 0, 0, 0}}
	notified := 0
	for _, r := range Rules {
		for _, s := range r.Syscalls {
			nr := plain.nr(s)
			for _, args := range argSets {
				want := plain.run(plain.audit, nr, args...)
				out, err := nm.Run(seccompData(nr, plain.audit, args...))
				if err != nil {
					t.Fatal(err)
				}
				got := uint32(out)
				if want&0xffff0000 == retErrno && notifies(Errno(want&0xffff)) {
					if got != retUserNotif {
						t.Errorf("%s%v: notify filter returned %#x, want USER_NOTIF (errno filter: %#x)", s, args, got, want)
						continue
					}
					notified++
					var a [6]uint64
					copy(a[:], args)
					den := d.Decide(int32(nr), plain.audit, a)
					if uint32(den.ErrnoValue()) != want&0xffff || den.Syscall != s || den.Rule != r.Name || den.Errno == "" {
						t.Errorf("%s%v: Decide = %+v, want errno %d rule %s", s, args, den, want&0xffff, r.Name)
					}
				} else if got != want && !(want == retAllow && got == retUserNotif && isWriteCall(s)) {
					t.Errorf("%s%v: notify filter returned %#x, errno filter %#x", s, args, got, want)
				}
			}
		}
	}
	if notified == 0 {
		t.Fatal("no call reached the listener")
	}
	for _, s := range []string{"clone3", "fallocate"} {
		if out, _ := nm.Run(seccompData(plain.nr(s), plain.audit)); uint32(out) == retUserNotif {
			t.Errorf("%s (a compatibility answer) reaches the listener", s)
		}
	}
	if out, _ := nm.Run(seccompData(plain.nr("getpid"), plain.audit)); uint32(out) != retAllow {
		t.Errorf("getpid: %#x", out)
	}
}

// TestSUIDSGIDNotify: in the notifying filter a set-id fchmodat reaches
// the listener, which Decide answers EPERM by rule suid-sgid; a plain one
// reaches it too (a write call) and Decide allows it, so the listener lets
// it continue.
func TestSUIDSGIDNotify(t *testing.T) {
	ga := runtime.GOARCH
	plain := newVM(t, ga)
	nm, _ := newNotifyVM(t, ga, true)
	d, err := NewDecider(ga)
	if err != nil {
		t.Fatal(err)
	}
	nr := plain.nr("fchmodat")
	for _, c := range []struct {
		mode  uint64
		allow bool
	}{{0o4755, false}, {0o2755, false}, {0o755, true}} {
		out, _ := nm.Run(seccompData(nr, plain.audit, 0xffffff9c, 0x1000, c.mode))
		if uint32(out) != retUserNotif {
			t.Errorf("fchmodat %#o: %#x, want USER_NOTIF", c.mode, out)
		}
		den := d.Decide(int32(nr), plain.audit, [6]uint64{0xffffff9c, 0x1000, c.mode})
		if den.Allowed() != c.allow || !c.allow && (den.Rule != "suid-sgid" || den.ErrnoValue() != EPERM) {
			t.Errorf("fchmodat %#o: Decide = %+v, want allowed %v (rule suid-sgid)", c.mode, den, c.allow)
		}
	}
	// fchmod is no write call: without a set-id bit it stays in the kernel.
	if out, _ := nm.Run(seccompData(plain.nr("fchmod"), plain.audit, 3, 0o644)); uint32(out) != retAllow {
		t.Errorf("fchmod 0644: %#x, want allow", out)
	}
}
