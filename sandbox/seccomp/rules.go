package seccomp

import (
	"fmt"
	"slices"
	"strings"
)

// Errno is a Linux errno value returned by a denied system call. The values
// are the same on x86_64 and aarch64.
type Errno uint16

// The errnos the filter returns.
const (
	// EPERM: "operation not permitted" — what the kernel itself answers to
	// an unprivileged caller, so well-behaved programs already handle it.
	EPERM Errno = 1
	// ENOSYS: "function not implemented" — makes libcs fall back to an
	// older system call that the filter can inspect (clone3 → clone).
	ENOSYS Errno = 38
	// EOPNOTSUPP: "operation not supported" — what a file system without
	// the feature answers; glibc's posix_fallocate then writes zeros.
	EOPNOTSUPP Errno = 95
	// EAFNOSUPPORT: "address family not supported by protocol" — what the
	// kernel answers for a family it was built without, so programs that
	// probe one (vsock, bluetooth) already take their fallback.
	EAFNOSUPPORT Errno = 97
)

func (e Errno) String() string {
	switch e {
	case EPERM:
		return "EPERM"
	case ENOSYS:
		return "ENOSYS"
	case EOPNOTSUPP:
		return "EOPNOTSUPP"
	case EAFNOSUPPORT:
		return "EAFNOSUPPORT"
	}
	return fmt.Sprintf("errno(%d)", uint16(e))
}

// Op is how a [Cond] compares the low 32 bits of an argument.
type Op int

// Condition operators. All of them look at uint32(arg) only; see [Cond].
const (
	// AnyBits matches when uint32(arg) & Mask != 0.
	AnyBits Op = iota + 1
	// In matches when uint32(arg) is one of Values.
	In
	// NotIn matches when uint32(arg) is none of Values.
	NotIn
)

func (o Op) String() string {
	switch o {
	case AnyBits:
		return "any-bits"
	case In:
		return "in"
	case NotIn:
		return "not-in"
	}
	return fmt.Sprintf("op(%d)", int(o))
}

// Cond narrows a [Rule] to calls whose argument Arg matches.
//
// Only the low 32 bits of the argument are compared. That is deliberate and
// correct for every call it is used on: clone takes lower_32_bits() of its
// flags, ioctl's cmd and personality's persona are unsigned int, and unshare
// rejects any high bit with EINVAL. Comparing all 64 bits would let a caller
// set a high bit the kernel throws away and walk past the rule: that is how
// flatpak's TIOCSTI filter was bypassed (CVE-2019-10063).
type Cond struct {
	Arg    int      // argument index, 0..5
	Op     Op       // comparison
	Mask   uint32   // for AnyBits
	Values []uint32 // for In and NotIn
	Text   string   // human description, e.g. "flags & CLONE_NEW*"
	// And, when set, must match too (open: O_CREAT in the flags and a
	// set-id bit in the mode).
	And *Cond
}

// Rule denies a set of system calls (optionally only when Cond matches) with
// Errno. Why cites the kernel behaviour or CVE the rule guards against.
type Rule struct {
	Name     string   // stable short id, used in docs and tests
	Syscalls []string // kernel names, as in the syscall tables
	Cond     *Cond    // nil: deny every call
	// CondOf overrides Cond for the calls it names, where the argument
	// sits elsewhere (chmod's mode is args[1], fchmodat's args[2]).
	CondOf map[string]*Cond
	Errno  Errno
	Why    string
}

// Namespace flags (include/uapi/linux/sched.h).
const (
	cloneNewTime   = 0x00000080
	cloneNewNS     = 0x00020000
	cloneNewCgroup = 0x02000000
	cloneNewUTS    = 0x04000000
	cloneNewIPC    = 0x08000000
	cloneNewUser   = 0x10000000
	cloneNewPID    = 0x20000000
	cloneNewNet    = 0x40000000

	// cloneNewAll is every CLONE_NEW* flag. clone(2) cannot carry
	// CLONE_NEWTIME (0x80 lies in CSIGNAL, the exit-signal byte), so the
	// clone rule leaves it out: bit 0x80 there is part of the exit signal
	// number, and the kernel rejects a signal >= 128 anyway.
	cloneNewAll      = cloneNewTime | cloneNewNS | cloneNewCgroup | cloneNewUTS | cloneNewIPC | cloneNewUser | cloneNewPID | cloneNewNet
	cloneNewAllClone = cloneNewAll &^ cloneNewTime
)

// Terminal ioctls (include/uapi/asm-generic/ioctls.h; same on x86_64 and
// aarch64).
const (
	tiocsti   = 0x5412
	tioclinux = 0x541C
)

// Set-id mode bits (S_ISUID|S_ISGID) and the open(2) flags that create a
// file (O_CREAT, __O_TMPFILE): the same values on x86_64 and aarch64.
const (
	modeSetID   = 0o4000 | 0o2000
	openCreates = 0x40 | 0x400000
)

// setIDMode is a set-id test of the mode argument arg.
func setIDMode(arg int) *Cond {
	return &Cond{Arg: arg, Op: AnyBits, Mask: modeSetID, Text: fmt.Sprintf("args[%d] & (S_ISUID|S_ISGID)", arg)}
}

// setIDOpen: the open flags at flags create a file and the mode at flags+1
// has a set-id bit.
func setIDOpen(flags int) *Cond {
	return &Cond{Arg: flags, Op: AnyBits, Mask: openCreates, Text: fmt.Sprintf("args[%d] & (O_CREAT|O_TMPFILE)", flags), And: setIDMode(flags + 1)}
}

// Address families (include/linux/socket.h; the same on every architecture)
// every session may open: see the socket-families rule.
const (
	afUnix    = 1
	afInet    = 2
	afInet6   = 10
	afNetlink = 16
)

// DefaultSocketFamilies are the families socket(2) and socketpair(2) may
// name in every session; a profile's socket_families adds to them
// (RulesAllowing).
var DefaultSocketFamilies = []uint32{afUnix, afInet, afInet6, afNetlink}

// legacyCalls exist on x86_64 only (aarch64 has the *at forms alone): a
// rule naming one skips it where the architecture has no such call.
var legacyCalls = map[string]bool{"open": true, "creat": true, "chmod": true, "mkdir": true, "mknod": true}

// personality(2) values a program may still set: PER_LINUX, PER_LINUX32,
// UNAME26 with either, and 0xffffffff, which only queries. The same list as
// Docker's and Podman's default profiles.
var safePersonalities = []uint32{0x0, 0x8, 0x20000, 0x20008, 0xffffffff}

// Rules is fedmem's seccomp deny-list, in the order the filter checks it.
// A system call name appears in at most one rule (a test enforces it).
var Rules = []Rule{
	{
		Name:     "unshare-namespaces",
		Syscalls: []string{"unshare"},
		Cond:     &Cond{Arg: 0, Op: AnyBits, Mask: cloneNewAll, Text: "flags & CLONE_NEW* (USER|NS|PID|NET|UTS|IPC|CGROUP|TIME)"},
		Errno:    EPERM,
		Why: "A new user namespace hands the agent a full capability set again, and with it a mount namespace " +
			"it may remount, plus the kernel code that unprivileged users normally cannot reach " +
			"(CVE-2022-0185 fsconfig overflow, CVE-2023-32233 and CVE-2024-1086 nf_tables, all reached through " +
			"unshare(CLONE_NEWUSER|CLONE_NEWNET)). Other unshare flags (CLONE_FILES, CLONE_FS) stay allowed.",
	},
	{
		Name:     "clone-namespaces",
		Syscalls: []string{"clone"},
		Cond:     &Cond{Arg: 0, Op: AnyBits, Mask: cloneNewAllClone, Text: "flags & CLONE_NEW* (USER|NS|PID|NET|UTS|IPC|CGROUP)"},
		Errno:    EPERM,
		Why: "Same as unshare: clone can create the same namespaces for the child. Threads and fork " +
			"(clone without CLONE_NEW* flags) stay allowed. The kernel uses lower_32_bits(flags), so only the " +
			"low word is tested.",
	},
	{
		Name:     "clone3",
		Syscalls: []string{"clone3"},
		Errno:    ENOSYS,
		Why: "clone3 passes its flags in a struct in user memory, which seccomp cannot read, so the namespace " +
			"test above cannot be applied. ENOSYS makes glibc, musl and Go fall back to clone(2), which the " +
			"filter can inspect.",
	},
	{
		Name:     "setns",
		Syscalls: []string{"setns"},
		Errno:    EPERM,
		Why: "Joining another namespace through an inherited /proc/<pid>/ns/* or pidfd would leave the " +
			"sandbox's mount and pid namespaces.",
	},
	{
		Name: "mount",
		Syscalls: []string{"mount", "umount2", "pivot_root", "move_mount", "open_tree", "open_tree_attr",
			"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"},
		Errno: EPERM,
		Why: "The vault is read-only because of MS_RDONLY bind mounts; remounting, unmounting, moving or " +
			"re-attaching a mount (old and new mount API) could undo that. Dropped capabilities already make " +
			"the kernel refuse; this is the second wall should a capability come back (e.g. through a user " +
			"namespace), and it hides the new-mount-API parsers (CVE-2022-0185 in fsconfig).",
	},
	{
		Name:     "ptrace",
		Syscalls: []string{"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise"},
		Errno:    EPERM,
		Why: "Reading or writing another process's memory, registers or file descriptors — e.g. the sandbox's " +
			"init, which runs as the same uid — would let the agent act with that process's state and fds. " +
			"ptrace also has a history of privilege bugs (CVE-2019-13272 PTRACE_TRACEME).",
	},
	{
		Name:     "keyring",
		Syscalls: []string{"keyctl", "add_key", "request_key"},
		Errno:    EPERM,
		Why: "Kernel keyrings are not namespaced: the user's session and user keyrings (Kerberos tickets, " +
			"ecryptfs and fscrypt keys) would be readable from inside. keyctl also had a root exploit " +
			"(CVE-2016-0728).",
	},
	{
		Name:     "bpf",
		Syscalls: []string{"bpf"},
		Errno:    EPERM,
		Why: "eBPF verifier bugs turn a loaded program into kernel read/write (CVE-2021-3490, CVE-2022-23222, " +
			"CVE-2023-2163); kernel.unprivileged_bpf_disabled is a host setting we do not control.",
	},
	{
		Name:     "perf",
		Syscalls: []string{"perf_event_open"},
		Errno:    EPERM,
		Why: "perf events leak kernel addresses and timing side channels and were a root exploit " +
			"(CVE-2013-2094); kernel.perf_event_paranoid is a host setting we do not control.",
	},
	{
		Name:     "userfaultfd",
		Syscalls: []string{"userfaultfd"},
		Errno:    EPERM,
		Why: "userfaultfd lets a process stall the kernel in the middle of a copy from user memory, which " +
			"turns kernel race bugs into reliable exploits (the reason vm.unprivileged_userfaultfd exists).",
	},
	{
		Name:     "io_uring",
		Syscalls: []string{"io_uring_setup", "io_uring_enter", "io_uring_register"},
		Errno:    EPERM,
		Why: "io_uring performs open, read, write, connect… from kernel workers that seccomp never sees, so " +
			"it would bypass every rule here, and it is a rich source of privilege escalations " +
			"(CVE-2022-29582, CVE-2023-2598, CVE-2024-0582).",
	},
	{
		Name:     "file-handles",
		Syscalls: []string{"open_by_handle_at", "name_to_handle_at"},
		Errno:    EPERM,
		Why: "Opening a file by handle skips path resolution, so it escapes bind mounts and mount " +
			"namespaces entirely (the 2014 Docker \"shocker\" escape); only CAP_DAC_READ_SEARCH stands " +
			"in the way.",
	},
	{
		Name:     "kexec",
		Syscalls: []string{"kexec_load", "kexec_file_load"},
		Errno:    EPERM,
		Why:      "Loading a new kernel to boot into replaces every protection at once.",
	},
	{
		Name:     "kernel-modules",
		Syscalls: []string{"init_module", "finit_module", "delete_module"},
		Errno:    EPERM,
		Why:      "Loading or removing kernel modules is arbitrary kernel code execution.",
	},
	{
		Name:     "tty-inject",
		Syscalls: []string{"ioctl"},
		Cond:     &Cond{Arg: 1, Op: In, Values: []uint32{tiocsti, tioclinux}, Text: "uint32(cmd) is TIOCSTI or TIOCLINUX"},
		Errno:    EPERM,
		Why: "TIOCSTI pushes bytes into the terminal's input queue, so the agent could type commands into the " +
			"user's shell that run after the sandbox exits (CVE-2017-5226 bubblewrap, CVE-2016-7545 SELinux " +
			"sandbox); TIOCLINUX can paste the console selection the same way (CVE-2023-1523). The kernel " +
			"truncates cmd to 32 bits, so only those are compared: flatpak compared 64 and 0x100005412 got " +
			"through (CVE-2019-10063).",
	},
	{
		Name:     "accounting",
		Syscalls: []string{"acct"},
		Errno:    EPERM,
		Why:      "Process accounting writes a host-wide record to a file of the caller's choice.",
	},
	{
		Name:     "swap",
		Syscalls: []string{"swapon", "swapoff"},
		Errno:    EPERM,
		Why:      "Swap devices are host-wide; swapping to a file the agent controls exposes other processes' memory.",
	},
	{
		Name:     "reboot",
		Syscalls: []string{"reboot"},
		Errno:    EPERM,
		Why:      "Rebooting or halting the host (or, with CAP_SYS_BOOT in a pid namespace, killing its init).",
	},
	{
		Name:     "clock",
		Syscalls: []string{"settimeofday", "clock_settime", "adjtimex", "clock_adjtime"},
		Errno:    EPERM,
		Why: "The system clock is not namespaced: setting it breaks TLS, Git timestamps, the gate's audit " +
			"log ordering and time limits. adjtimex(2) queries are refused too.",
	},
	{
		Name:     "syslog",
		Syscalls: []string{"syslog"},
		Errno:    EPERM,
		Why:      "The kernel log leaks kernel pointers (a KASLR bypass) and other tenants' messages; kernel.dmesg_restrict is a host setting.",
	},
	{
		Name:     "quota",
		Syscalls: []string{"quotactl", "quotactl_fd"},
		Errno:    EPERM,
		Why:      "Disk quotas are host-wide administration.",
	},
	{
		Name:     "lookup-dcookie",
		Syscalls: []string{"lookup_dcookie"},
		Errno:    EPERM,
		Why:      "An oprofile interface that turns a kernel cookie into a path; it only ever leaked information.",
	},
	{
		Name:     "vhangup",
		Syscalls: []string{"vhangup"},
		Errno:    EPERM,
		Why:      "Hanging up the controlling terminal kills the user's session around the agent.",
	},
	{
		Name:     "personality",
		Syscalls: []string{"personality"},
		Cond:     &Cond{Arg: 0, Op: NotIn, Values: safePersonalities, Text: "uint32(persona) not in {PER_LINUX, PER_LINUX32, UNAME26, query}"},
		Errno:    EPERM,
		Why: "ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC and MMAP_PAGE_ZERO switch off ASLR and NX or map page " +
			"zero for every program the agent execs, helping kernel NULL-dereference exploits " +
			"(CVE-2009-1895, CVE-2009-2692).",
	},
	{
		Name:     "fallocate",
		Syscalls: []string{"fallocate"},
		Errno:    EOPNOTSUPP,
		Why: "fallocate reserves disk blocks at once, and with FALLOC_FL_KEEP_SIZE beyond the file's size: " +
			"RLIMIT_FSIZE does not apply and nothing reads as written, so a single call can fill the host's disk " +
			"under limits.file_size and faster than limits.inbox_bytes' watcher can look (300 MiB passed a 1 MiB cap). " +
			"EOPNOTSUPP is what a file system without it answers; glibc's posix_fallocate then writes zeros, " +
			"which both limits see.",
	},
	{
		Name:     "suid-sgid",
		Syscalls: []string{"chmod", "fchmod", "fchmodat", "fchmodat2", "open", "openat", "creat", "mkdir", "mkdirat", "mknod", "mknodat"},
		Cond:     setIDMode(1),
		CondOf: map[string]*Cond{
			"fchmodat": setIDMode(2), "fchmodat2": setIDMode(2), "mkdirat": setIDMode(2), "mknodat": setIDMode(2),
			"open": setIDOpen(1), "openat": setIDOpen(2),
		},
		Errno: EPERM,
		Why: "A file the agent writes in a writable workdir or home.writable path belongs on the host to the caller " +
			"(with a root caller, through the idmapped mounts, to root). The sandbox's mounts are nosuid, the host's " +
			"are not: a setuid or setgid copy of /bin/sh left there gives any local user the caller's uid or gid " +
			"(guarantees 5 and 6). As systemd's RestrictSUIDSGID=, the mode may not carry S_ISUID or S_ISGID in " +
			"chmod, fchmod, fchmodat(2), mkdir(at), mknod(at), creat, and open/openat with O_CREAT or O_TMPFILE " +
			"(the mode is ignored otherwise). Only the low 32 bits are tested: mode_t and the open flags are 32-bit.",
	},
	{
		Name:     "openat2",
		Syscalls: []string{"openat2"},
		Errno:    ENOSYS,
		Why: "openat2 passes its flags and mode in a struct open_how in user memory, which seccomp cannot read, so " +
			"the suid-sgid test cannot be applied. ENOSYS makes libcs fall back to openat, which the filter inspects.",
	},
	{
		Name:     "socket-families",
		Syscalls: []string{"socket", "socketpair"},
		Cond:     &Cond{Arg: 0, Op: NotIn, Values: DefaultSocketFamilies, Text: "uint32(domain) not in {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK} and the profile's socket_families"},
		Errno:    EAFNOSUPPORT,
		Why: "An allow-list of address families: what agents use (unix, IPv4, IPv6), never what the kernel happens to " +
			"have. AF_VSOCK reaches a VM host's vsock services even under network: none (the port space is the " +
			"host's, not the network namespace's); AF_PACKET, AF_ALG, AF_TIPC, AF_RDS, AF_X25, AF_CAN, AF_BLUETOOTH " +
			"and the rest are rarely built-in code that has been a steady source of root exploits (CVE-2016-8655 and " +
			"CVE-2020-14386 AF_PACKET, CVE-2021-26708 AF_VSOCK, CVE-2010-3904 RDS, CVE-2021-3715 AF_ALG). AF_NETLINK " +
			"stays allowed: glibc's getaddrinfo (AI_ADDRCONFIG), Go's net.Interfaces, ip and ss list addresses " +
			"and routes through it (NETLINK_ROUTE); in the sandbox's own network namespace it sees only that " +
			"namespace, and the netlink families that change anything need CAP_NET_ADMIN, which the agent has not. " +
			"EAFNOSUPPORT is the kernel's own answer for a family it lacks. Only the low 32 bits are tested: domain is an int.",
	},
	{
		Name:     "nfsservctl",
		Syscalls: []string{"nfsservctl"},
		Errno:    EPERM,
		Why:      "The old kernel NFS server control call (gone since Linux 3.1); refused so it cannot come back.",
	},
}

// RulesAllowing returns [Rules] with the socket-families rule also allowing
// families (the profile's socket_families, as numbers): the rules of one
// session. With none it is Rules itself.
func RulesAllowing(families []uint32) []Rule {
	if len(families) == 0 {
		return Rules
	}
	out := slices.Clone(Rules)
	for i := range out {
		if out[i].Name != "socket-families" {
			continue
		}
		c := *out[i].Cond
		c.Values = slices.Clone(c.Values)
		for _, f := range families {
			if !slices.Contains(c.Values, f) {
				c.Values = append(c.Values, f)
			}
		}
		c.Text = fmt.Sprintf("%s (this session: %v)", c.Text, c.Values)
		out[i].Cond = &c
	}
	return out
}

// Describe renders [Rules] one line per rule, for `fedmem-run --explain`.
//
// families are the session's socket_families (RulesAllowing).
func Describe(families ...uint32) []string {
	rules := RulesAllowing(families)
	out := make([]string, 0, len(rules)+1)
	out = append(out, "seccomp: foreign-ABI syscalls (i386 on x86_64, arm32 on arm64) kill the process; x32 syscalls get ENOSYS")
	for _, r := range rules {
		cond := ""
		if r.Cond != nil {
			cond = " when " + condText(r)
		}
		out = append(out, fmt.Sprintf("seccomp: %s: %s%s -> %s: %s", r.Name, strings.Join(r.Syscalls, ","), cond, r.Errno, r.Why))
	}
	return out
}

// MarkdownTable renders [Rules] as the table in docs/seccomp.md.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| rule | system calls | when | errno | why |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, r := range Rules {
		names := make([]string, len(r.Syscalls))
		for i, n := range r.Syscalls {
			names[i] = "`" + n + "`"
		}
		cond := "always"
		if r.Cond != nil {
			cond = condText(r)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.Name, strings.Join(names, ", "), strings.ReplaceAll(cond, "|", "\\|"), r.Errno, strings.ReplaceAll(r.Why, "|", "\\|"))
	}
	return b.String()
}

// condText describes a rule's condition, per call where CondOf differs.
func condText(r Rule) string {
	if len(r.CondOf) == 0 {
		return r.Cond.Text
	}
	var parts []string
	groups := map[string][]string{}
	for _, s := range r.Syscalls {
		c := r.Cond
		if o := r.CondOf[s]; o != nil {
			c = o
		}
		t := c.fullText()
		if groups[t] == nil {
			parts = append(parts, t)
		}
		groups[t] = append(groups[t], s)
	}
	for i, t := range parts {
		parts[i] = strings.Join(groups[t], ", ") + ": " + t
	}
	return strings.Join(parts, "; ")
}

func (c *Cond) fullText() string {
	if c.And != nil {
		return c.Text + " and " + c.And.fullText()
	}
	return c.Text
}
