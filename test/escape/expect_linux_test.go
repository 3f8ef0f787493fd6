package escape

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Result is one line of the hostile program's output (test/hostile).
type Result struct {
	Attempt  string `json:"attempt"`
	Target   string `json:"target"`
	OK       bool   `json:"ok"`
	Errno    string `json:"errno"`
	Err      string `json:"err,omitempty"`
	Positive bool   `json:"positive,omitempty"`
	Saw      string `json:"saw,omitempty"`
}

func parseResults(out []byte) ([]Result, error) {
	var rs []Result
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var r Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return rs, fmt.Errorf("hostile output line %d: %v: %q", n, err, line)
		}
		rs = append(rs, r)
	}
	return rs, sc.Err()
}

// Errno classes. "" stands for "no errno": a check that saw a safe state,
// or a read that succeeded but saw nothing (an empty masked file).
var (
	writeDenied = set("EROFS", "EACCES", "EPERM")
	crossMount  = set("EROFS", "EACCES", "EPERM", "EXDEV")
	removeDir   = set("EROFS", "EACCES", "EPERM", "EBUSY")
	syscallOff  = set("EPERM", "ENOSYS")
	procDenied  = set("EACCES", "EPERM", "EROFS", "ENOENT") // ENOENT: /proc/1 invisible (hidepid, guarantee 5)
	hidden      = set("ENOENT", "EACCES")
	safeCheck   = set("")
	noSecret    = set("", "ENOENT", "EACCES", "EPERM")
)

func set(xs ...string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// expected maps every attack the hostile program makes to the errnos that
// count as "refused for the right reason". A name missing here is a test
// failure: a new attempt must come with its expectation.
var expected = map[string]map[string]bool{
	// the process's own state (the test re-checks "saw" itself)
	"open-fds": safeCheck, "capabilities": safeCheck, "no_new_privs": safeCheck,
	"seccomp": safeCheck, "list-inbox-root": safeCheck,
	"capset-raise": set("EPERM"), "prctl-clear-nnp": set("EINVAL", "EPERM"),
	"prctl-ambient-raise": set("EPERM"),
	// EINVAL: the other uid is not mapped in the sandbox's user namespace.
	"setuid-other": set("EPERM", "EINVAL"),
	// files of the vault
	"write": writeDenied, "append": writeDenied, "open-trunc": writeDenied, "open-rdwr": writeDenied,
	"truncate": writeDenied, "chmod": writeDenied, "chown": writeDenied, "utimes": writeDenied,
	"touch-now": writeDenied, "setxattr-user": writeDenied, "setxattr-trusted": writeDenied,
	"setxattr-security-capability": writeDenied, "removexattr": writeDenied,
	"rename-within": removeDir, "rename-out-to-inbox": set("EROFS", "EACCES", "EPERM", "EXDEV", "EBUSY"),
	"rename-over-from-inbox": crossMount, "unlink": writeDenied,
	"link-into-inbox": crossMount, "link-beside": writeDenied,
	"symlink-write-through": writeDenied, "opath-reopen-write": writeDenied,
	"mmap-shared-write": set("EACCES", "EPERM"), "dirfd-openat-write": writeDenied,
	// directories of the vault
	"create": writeDenied, "mkdir": writeDenied, "mknod-fifo": writeDenied, "mknod-chr": writeDenied,
	"symlink-create": writeDenied, "rmdir": removeDir, "rename-into-from-inbox": crossMount,
	"link-from-inbox": crossMount, "symlink-dir-create-through": writeDenied,
	"dirfd-openat-create": writeDenied, "renameat-through-dirfd": writeDenied, "fchdir-create": writeDenied,
	// device nodes in the own inbox
	"mknod-chr-inbox": set("EPERM", "EACCES"), "mknod-blk-inbox": set("EPERM", "EACCES"),
	// other sessions
	"stat-other-session": hidden, "read-other-draft": hidden, "list-other-session": hidden,
	"read-other-draft-proc1-root": set("ENOENT", "EACCES", "EPERM"),
	// the mount family, called directly
	"mount-tmpfs-over-vault": syscallOff, "mount-bind-inbox-over-dir": syscallOff,
	"remount-bind-rw": syscallOff, "remount-rw": syscallOff, "make-rprivate": syscallOff,
	"umount-vault": syscallOff, "umount-inbox-mask": syscallOff, "umount-secret-mask": syscallOff,
	"mount_setattr-clear-rdonly": syscallOff, "open_tree-clone": syscallOff,
	"mount_setattr-clone-rw": syscallOff, "move_mount-clone": syscallOff,
	"move_mount-vault": syscallOff, "fsopen": syscallOff, "fspick": syscallOff,
	"pivot_root": syscallOff, "chroot": syscallOff,
	// namespaces
	"clone-newuser":    set("EPERM", "ENOSYS", "ENOSPC", "EUSERS"),
	"unshare-newuser":  set("EPERM", "ENOSYS", "ENOSPC", "EUSERS"),
	"unshare-newns":    syscallOff,
	"clone3-reachable": set("ENOSYS", "EPERM"),
	"setns":            set("EPERM", "EACCES", "ENOSYS", "ENOENT"), // ENOENT: /proc/1 invisible
	// other processes
	"ptrace-attach": set("EPERM", "EACCES", "ENOSYS"), "process_vm_readv": syscallOff,
	"process_vm_writev": syscallOff, "proc-mem-open-rdwr": procDenied,
	"proc-exe-open-write": procDenied, "proc-exe-opath-reopen-write": procDenied,
	"proc-root-write-note": procDenied, "proc-self-root-write-note": writeDenied,
	"kill": set("EPERM"), "open_by_handle_at": syscallOff,
	// kernel surface
	"keyctl-join-session": syscallOff, "add_key": syscallOff, "bpf": syscallOff,
	"io_uring_setup": syscallOff, "perf_event_open": syscallOff, "userfaultfd": syscallOff,
	"init_module": syscallOff, "kexec_load": syscallOff,
	"tiocsti": set("EPERM", "EIO"), "tiocsti-64bit": set("EPERM", "EIO"),
	"tioclinux": set("EPERM"), "tioclinux-64bit": set("EPERM"),
	// host paths
	"etc-passwd-open-write": writeDenied, "etc-create": writeDenied,
	// ENOENT: the allow-list home does not show ~/.bashrc (issue 22);
	// home-create below proves the home itself read-only (EROFS).
	"bashrc-open-write": set("EROFS", "EACCES", "EPERM", "ENOENT"),
	"home-create":       writeDenied, "usr-bin-create": writeDenied,
	// secrets
	"read-secret": noSecret, "list-secret-dir": noSecret,
	// an abstract unix socket outside (X11, D-Bus): Landlock scoping
	// (EPERM) or a private network namespace (ECONNREFUSED)
	"connect-abstract-socket": set("EPERM", "EACCES", "ECONNREFUSED"),
}

// positives must succeed (unless the layout says otherwise).
var positives = map[string]bool{"inbox-draft": true, "workdir-write": true, "tmp-write": true, "workdir-rename-across-dirs": true}

// evaluation is the outcome of judging one run.
type evaluation struct {
	problems []string // each a sentence naming attempt, target and result
	table    []string // every attack and its result, for the log
}

// judge checks each line against its expectation. otherSession, when set,
// is a path under which ENOENT also counts as refused (it is hidden).
// failPositive lists positive attempts the layout expects to fail.
func judge(rs []Result, otherSession string, failPositive map[string]map[string]bool) evaluation {
	var ev evaluation
	done := false
	for _, r := range rs {
		res := r.Errno
		if r.OK {
			res = "SUCCEEDED"
		}
		switch {
		case r.Attempt == "done":
			done = true
		case strings.HasPrefix(r.Attempt, "info-"):
			ev.table = append(ev.table, fmt.Sprintf("info  %-28s %s %s %s", r.Attempt, r.Target, res, r.Saw))
		case strings.HasPrefix(r.Attempt, "nested-"):
			// Only reachable if a new user namespace was granted, which
			// is already a failure; the writes are what matter.
			if r.Attempt == "nested-started" || (strings.HasPrefix(r.Attempt, "nested-write") && r.OK) {
				ev.problems = append(ev.problems, fmt.Sprintf("%s on %s: %s %s", r.Attempt, r.Target, res, r.Err))
			}
		case positives[r.Attempt]:
			if want, ok := failPositive[r.Attempt]; ok {
				if r.OK || !want[r.Errno] {
					ev.problems = append(ev.problems, fmt.Sprintf("%s on %s: want refused with one of %v, got %s %s", r.Attempt, r.Target, keys(want), res, r.Err))
				}
			} else if !r.OK {
				ev.problems = append(ev.problems, fmt.Sprintf("legitimate %s on %s failed: %s %s", r.Attempt, r.Target, r.Errno, r.Err))
			}
			ev.table = append(ev.table, fmt.Sprintf("legit %-28s %s %s", r.Attempt, r.Target, res))
		default:
			want, ok := expected[r.Attempt]
			if !ok {
				ev.problems = append(ev.problems, fmt.Sprintf("attempt %q (%s) has no expectation in the test: add one", r.Attempt, r.Target))
				continue
			}
			if otherSession != "" && (r.Target == otherSession || strings.HasPrefix(r.Target, otherSession+"/")) {
				w := set("ENOENT", "EACCES")
				for k := range want {
					w[k] = true
				}
				want = w
			}
			verdict := "ok"
			if r.OK || !want[r.Errno] {
				verdict = "BAD"
				what := "succeeded"
				if !r.OK {
					what = fmt.Sprintf("failed with %s (%s), not one of %v", r.Errno, r.Err, keys(want))
				}
				if r.Saw != "" {
					what += "; saw " + r.Saw
				}
				ev.problems = append(ev.problems, fmt.Sprintf("ESCAPE? %s on %s %s", r.Attempt, r.Target, what))
			}
			ev.table = append(ev.table, fmt.Sprintf("%-5s %-28s %-55s %-10s want %v", verdict, r.Attempt, r.Target, res, keys(want)))
		}
	}
	if !done {
		ev.problems = append(ev.problems, "the hostile program did not print its final line (crashed or was killed half-way)")
	}
	return ev
}

func keys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		if k == "" {
			k = `""`
		}
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// find returns the results of one attempt.
func find(rs []Result, attempt string) []Result {
	var out []Result
	for _, r := range rs {
		if r.Attempt == attempt {
			out = append(out, r)
		}
	}
	return out
}
