package seccomp

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// Why write calls reach the listener: a write the sandbox refuses — into
// the vault, under the read-only root — fails with EROFS from the
// read-only mount before any LSM hook runs, so neither Landlock's audit nor
// any other interface sees it. This filter hands the calls that may change
// the file system by path (and only those: an open without a write flag
// never leaves the kernel) to a listener that answers every one with
// SECCOMP_USER_NOTIF_FLAG_CONTINUE: the kernel then runs the call as if no
// filter were there and makes the real decision. The listener only reads
// the path to say, in the session's events, what was refused and how to
// allow it; the agent can make that report lie (it owns the memory the
// path is read from, and can change it after the read), never the policy.
//
// It is a section of the notifying filter (AssembleNotify), not a filter
// of its own: the kernel allows one listener per filter chain.

// writeFlags are the open(2) flags that make an open write-intent:
// O_WRONLY|O_RDWR|O_CREAT|O_TRUNC (the same values on x86_64 and aarch64;
// O_TMPFILE requires O_WRONLY or O_RDWR).
const writeFlags = 0x1 | 0x2 | 0x40 | 0x200

// IsWriteOpen says whether open(2) flags ask to write.
func IsWriteOpen(flags uint64) bool { return flags&writeFlags != 0 }

// PathArg is one path a call changes: the index of its directory fd
// argument (-1: none, relative to the working directory) and of its path
// argument.
type PathArg struct{ Dirfd, Path int }

// WriteCall is a system call that can change the file system by path.
type WriteCall struct {
	Name string
	// Op is what the report calls it: open, mkdir, mknod, unlink, rmdir,
	// rename, link, symlink, truncate, chmod, chown, utimes.
	Op    string
	Paths []PathArg
	// Flags is the index of the open flags argument: the call is handed
	// to the listener only when one of them asks to write. -1: always.
	Flags int
	// How: openat2, whose flags are the first word of struct open_how at
	// args[2] (not visible to BPF; the listener reads them).
	How bool
	// Entry: the call changes a directory entry (create, remove, rename),
	// so the directory holding it is what the kernel checks.
	Entry bool
	// Metadata: chmod, chown, utimes — not covered by Landlock.
	Metadata bool
	// NullPath: a NULL path makes it an operation on the dirfd itself
	// (utimensat as futimens), which does not go to the listener.
	NullPath bool
	// Legacy: x86_64 only (aarch64 has the *at forms alone).
	Legacy bool
}

// WriteCalls are the calls the reporting filter hands to its listener.
// None of them is in [Rules]: a call both filters notify would go to this
// listener, which lets it continue (TestWriteCallsNotInRules).
var WriteCalls = []WriteCall{
	{Name: "open", Op: "open", Paths: []PathArg{{-1, 0}}, Flags: 1, Legacy: true},
	{Name: "openat", Op: "open", Paths: []PathArg{{0, 1}}, Flags: 2},
	{Name: "openat2", Op: "open", Paths: []PathArg{{0, 1}}, Flags: -1, How: true},
	{Name: "creat", Op: "open", Paths: []PathArg{{-1, 0}}, Flags: -1, Legacy: true},
	{Name: "truncate", Op: "truncate", Paths: []PathArg{{-1, 0}}, Flags: -1},
	{Name: "mkdir", Op: "mkdir", Paths: []PathArg{{-1, 0}}, Flags: -1, Entry: true, Legacy: true},
	{Name: "mkdirat", Op: "mkdir", Paths: []PathArg{{0, 1}}, Flags: -1, Entry: true},
	{Name: "mknod", Op: "mknod", Paths: []PathArg{{-1, 0}}, Flags: -1, Entry: true, Legacy: true},
	{Name: "mknodat", Op: "mknod", Paths: []PathArg{{0, 1}}, Flags: -1, Entry: true},
	{Name: "unlink", Op: "unlink", Paths: []PathArg{{-1, 0}}, Flags: -1, Entry: true, Legacy: true},
	{Name: "unlinkat", Op: "unlink", Paths: []PathArg{{0, 1}}, Flags: -1, Entry: true},
	{Name: "rmdir", Op: "rmdir", Paths: []PathArg{{-1, 0}}, Flags: -1, Entry: true, Legacy: true},
	{Name: "rename", Op: "rename", Paths: []PathArg{{-1, 0}, {-1, 1}}, Flags: -1, Entry: true, Legacy: true},
	{Name: "renameat", Op: "rename", Paths: []PathArg{{0, 1}, {2, 3}}, Flags: -1, Entry: true},
	{Name: "renameat2", Op: "rename", Paths: []PathArg{{0, 1}, {2, 3}}, Flags: -1, Entry: true},
	{Name: "link", Op: "link", Paths: []PathArg{{-1, 1}}, Flags: -1, Entry: true, Legacy: true},
	{Name: "linkat", Op: "link", Paths: []PathArg{{2, 3}}, Flags: -1, Entry: true},
	{Name: "symlink", Op: "symlink", Paths: []PathArg{{-1, 1}}, Flags: -1, Entry: true, Legacy: true},
	{Name: "symlinkat", Op: "symlink", Paths: []PathArg{{1, 2}}, Flags: -1, Entry: true},
	{Name: "chmod", Op: "chmod", Paths: []PathArg{{-1, 0}}, Flags: -1, Metadata: true, Legacy: true},
	{Name: "fchmodat", Op: "chmod", Paths: []PathArg{{0, 1}}, Flags: -1, Metadata: true},
	{Name: "fchmodat2", Op: "chmod", Paths: []PathArg{{0, 1}}, Flags: -1, Metadata: true},
	{Name: "chown", Op: "chown", Paths: []PathArg{{-1, 0}}, Flags: -1, Metadata: true, Legacy: true},
	{Name: "lchown", Op: "chown", Paths: []PathArg{{-1, 0}}, Flags: -1, Metadata: true, Legacy: true},
	{Name: "fchownat", Op: "chown", Paths: []PathArg{{0, 1}}, Flags: -1, Metadata: true},
	{Name: "utime", Op: "utimes", Paths: []PathArg{{-1, 0}}, Flags: -1, Metadata: true, Legacy: true},
	{Name: "utimes", Op: "utimes", Paths: []PathArg{{-1, 0}}, Flags: -1, Metadata: true, Legacy: true},
	{Name: "futimesat", Op: "utimes", Paths: []PathArg{{0, 1}}, Flags: -1, Metadata: true, NullPath: true, Legacy: true},
	{Name: "utimensat", Op: "utimes", Paths: []PathArg{{0, 1}}, Flags: -1, Metadata: true, NullPath: true},
}

// Writes maps the numbers of one architecture's write calls to their
// description.
type Writes struct {
	goarch string
	byNr   map[int32]*WriteCall
}

// NewWrites numbers [WriteCalls] for goarch.
func NewWrites(goarch string) (*Writes, error) {
	w := &Writes{goarch: goarch, byNr: map[int32]*WriteCall{}}
	for i := range WriteCalls {
		c := &WriteCalls[i]
		nr, ok := SyscallNumber(goarch, c.Name)
		if !ok {
			if c.Legacy && goarch != "amd64" {
				continue
			}
			return nil, fmt.Errorf("seccomp: write call %q unknown on %s", c.Name, goarch)
		}
		w.byNr[int32(nr)] = c
	}
	return w, nil
}

// Call returns the write call numbered nr, nil for any other.
func (w *Writes) Call(nr int32) *WriteCall { return w.byNr[nr] }

// emitWrites is the notifying filter's last section, reached for every
// native call the deny-list allows: write calls (write-intent opens only)
// return SECCOMP_RET_USER_NOTIF, everything else is allowed.
func emitWrites(p *program, goarch string) error {
	w, err := NewWrites(goarch)
	if err != nil {
		return err
	}
	p.emit(bpf.LoadAbsolute{Off: offNr, Size: 4})
	var conds []*WriteCall
	for i := range WriteCalls {
		c := &WriteCalls[i]
		nr, ok := SyscallNumber(goarch, c.Name)
		if !ok || w.byNr[int32(nr)] != c {
			continue
		}
		target := "w-notify"
		if c.Flags >= 0 || c.NullPath {
			target = "w-cond-" + c.Name
			conds = append(conds, c)
		}
		p.jump(bpf.JumpEqual, uint32(nr), target, "")
	}
	p.emit(bpf.RetConstant{Val: retAllow})
	if err := p.label("w-notify"); err != nil {
		return err
	}
	p.emit(bpf.RetConstant{Val: retUserNotif})
	// Each condition ends in its own returns: jumps only go forward.
	for _, c := range conds {
		n, a := "w-cond-"+c.Name+"-notify", "w-cond-"+c.Name+"-allow"
		if err := p.label("w-cond-" + c.Name); err != nil {
			return err
		}
		if c.Flags >= 0 {
			// Low word: open's flags are an int (build_open_flags takes
			// the low 32 bits).
			p.emit(bpf.LoadAbsolute{Off: uint32(offArgs + 8*c.Flags), Size: 4})
			p.jump(bpf.JumpBitsSet, writeFlags, n, a)
		} else {
			// NullPath: both words of the path pointer zero → an
			// operation on the fd, not on a path.
			off := uint32(offArgs + 8*c.Paths[0].Path)
			p.emit(bpf.LoadAbsolute{Off: off, Size: 4})
			p.jump(bpf.JumpEqual, 0, "", n)
			p.emit(bpf.LoadAbsolute{Off: off + 4, Size: 4})
			p.jump(bpf.JumpEqual, 0, a, n)
		}
		if err := p.label(n); err != nil {
			return err
		}
		p.emit(bpf.RetConstant{Val: retUserNotif})
		if err := p.label(a); err != nil {
			return err
		}
		p.emit(bpf.RetConstant{Val: retAllow})
	}
	return nil
}
