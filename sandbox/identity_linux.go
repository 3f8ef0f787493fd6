package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/mounts/pin"
	"github.com/fedmem/fedmem/vault"
)

// idPlan is how one run realises the agent's identity (guarantee 5).
type idPlan struct {
	id              Identity
	uidMaps         []syscall.SysProcIDMap
	gidMaps         []syscall.SysProcIDMap
	enableSetgroups bool
	cred            *syscall.Credential
	// newgidmap, when set, writes the gid map of an unprivileged caller's
	// init (its own gid and one subordinate gid), which leaves setgroups
	// allowed so that the init drops the caller's groups.
	newgidmap string
	subgid    int
	// agentGroups: a root caller's agent's supplementary groups
	// (KeptGroups).
	agentGroups []int
}

// mapGids runs newgidmap for the init's pid: the caller's gid to itself
// and one subordinate gid (from /etc/subgid) to another inside id.
func (p *idPlan) mapGids(pid int) error {
	inside := 0
	if p.id.GID == 0 {
		inside = 1
	}
	out, err := exec.Command(p.newgidmap, strconv.Itoa(pid), strconv.Itoa(p.id.GID), strconv.Itoa(p.id.GID), "1", strconv.Itoa(inside), strconv.Itoa(p.subgid), "1").CombinedOutput()
	if err != nil {
		return &Error{Code: ExitFedmemError, Stage: mounts.StageIdentity, Msg: fmt.Sprintf("newgidmap: %v: %s", err, strings.TrimSpace(string(out)))}
	}
	return nil
}

// HasSubgid reports whether /etc/subgid gives uid a subordinate gid (for
// `fedmem-run --probe`).
func HasSubgid(uid int) bool { _, ok := subgidStart(uid); return ok }

// subgidStart returns the first subordinate gid /etc/subgid gives the
// user (by name or uid).
func subgidStart(uid int) (int, bool) {
	b, err := os.ReadFile("/etc/subgid")
	if err != nil {
		return 0, false
	}
	name := ""
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		name = u.Username
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(strings.TrimSpace(line), ":")
		if len(f) != 3 || (f[0] != name && f[0] != strconv.Itoa(uid)) {
			continue
		}
		start, err1 := strconv.Atoi(f[1])
		n, err2 := strconv.Atoi(f[2])
		if err1 == nil && err2 == nil && n > 0 {
			return start, true
		}
	}
	return 0, false
}

// planIdentity decides who the init and the agent are, and fixes spec's
// UID/GID when a root caller asked for uid 0 (a launcher that predates
// ChooseAgent): the agent never holds host uid 0, nor root's groups.
//
// Root caller: the init is uid 0 inside, mapped to host 0 (it must open
// the caller's paths to build the root), with no supplementary group
// (setgroups([]) inside its user namespace, which root may allow); the
// agent is UID:GID, also mapped, and the init's forker switches to it at
// fork. The two uids differ, so the agent can neither signal, prlimit,
// renice, set the affinity or I/O priority of, nor ptrace the init.
//
// Unprivileged caller: one uid, the caller's, is all the kernel lets it
// map; its supplementary groups stay in its credentials (setgroups is
// denied in such a namespace, CVE-2014-8989). The run is refused when the
// caller holds a group other than its primary one and the vault's agent
// group, unless the profile accepts mounts.RiskKeepGroups.
func planIdentity(spec *Spec) (*idPlan, error) {
	euid, egid := os.Geteuid(), os.Getegid()
	p := &idPlan{}
	if euid == 0 {
		if spec.UID == 0 || spec.GID == 0 {
			uid, gid, src, err := ChooseAgent(0, 0, AgentChoice{SudoUID: os.Getenv("SUDO_UID"), SudoGID: os.Getenv("SUDO_GID")}, lookupUser)
			if err != nil {
				return nil, &Error{Code: ExitFedmemError, Stage: mounts.StageIdentity, Msg: err.Error()}
			}
			if err := adoptInbox(spec, uid); err != nil {
				return nil, err
			}
			spec.UID, spec.GID, spec.IdentitySource = uid, gid, src
		}
		if spec.IdentitySource == "" {
			spec.IdentitySource = "run_as"
		}
		inboxGid := -1
		var st unix.Stat_t
		if spec.Plan != nil && unix.Stat(filepath.Dir(spec.Plan.Inbox), &st) == nil {
			inboxGid = int(st.Gid)
		}
		p.agentGroups = KeptGroups(spec.UID, spec.GID, inboxGid)
		p.id = Identity{UID: spec.UID, GID: spec.GID, Source: spec.IdentitySource, Groups: p.agentGroups, GroupsHow: "setgroups([]) by root before the agent starts", InitUID: 0}
		if len(p.agentGroups) > 0 {
			p.id.GroupsHow = fmt.Sprintf("setgroups(%v) by root before the agent starts: only the vault's agent group %s, of which the agent's user is a member (it reaches nothing inside: other sessions are hidden)", p.agentGroups, vault.GroupName(inboxGid))
		}
		p.uidMaps = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: spec.UID, HostID: spec.UID, Size: 1}}
		p.gidMaps = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: spec.GID, HostID: spec.GID, Size: 1}}
		mapped := []int{0, spec.GID}
		mapGid := func(g int) {
			if g > 0 && !slices.Contains(mapped, g) {
				mapped = append(mapped, g)
				p.gidMaps = append(p.gidMaps, syscall.SysProcIDMap{ContainerID: g, HostID: g, Size: 1})
			}
		}
		for _, g := range p.agentGroups {
			mapGid(g)
		}
		// The agent user's own primary group is mapped too (not held by
		// the agent unless it is spec.GID): the init, uid 0 of this
		// namespace, may act on a file only when its owner and group
		// are both mapped, so with --agent-user UID:GROUP its home
		// (alice:alice, 0700) and the state folders in it were
		// "permission denied" to open_tree.
		if u, err := user.LookupId(strconv.Itoa(spec.UID)); err == nil {
			if g, err := strconv.Atoi(u.Gid); err == nil {
				mapGid(g)
			}
		}
		// Written by root: setgroups may stay allowed, so the init drops
		// root's groups inside (Go calls setgroups(0) for Groups: []). The
		// agent holds no CAP_SETGID to use it.
		p.enableSetgroups = true
		p.cred = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}
		return p, nil
	}
	if spec.UID != euid {
		return nil, &Error{Code: ExitFedmemError, Stage: mounts.StageIdentity, Msg: fmt.Sprintf("only root can run an agent as another user (uid %d asked, caller %d)", spec.UID, euid)}
	}
	src := spec.IdentitySource
	if src == "" {
		src = "caller"
	}
	p.id = Identity{UID: euid, GID: egid, Source: src, InitUID: euid}
	p.uidMaps = []syscall.SysProcIDMap{{ContainerID: euid, HostID: euid, Size: 1}}
	p.gidMaps = []syscall.SysProcIDMap{{ContainerID: egid, HostID: egid, Size: 1}}
	groups, err := unix.Getgroups()
	if err != nil {
		return nil, &Error{Code: ExitFedmemError, Stage: mounts.StageIdentity, Msg: "getgroups: " + err.Error()}
	}
	var inboxGid = -1
	var st unix.Stat_t
	if spec.Plan != nil && unix.Stat(filepath.Dir(spec.Plan.Inbox), &st) == nil {
		inboxGid = int(st.Gid)
	}
	var extra []int
	for _, g := range groups {
		if g != egid && g != inboxGid {
			extra = append(extra, g)
		}
	}
	p.id.Groups = append([]int{}, groups...)
	switch {
	case len(groups) == 0 || (len(groups) == 1 && groups[0] == egid):
		p.id.Groups, p.id.GroupsHow = []int{}, "none held"
	case len(extra) > 0 && newgidmapFor(p, euid):
		p.gidMaps = nil // newgidmap writes it: see Namespace.Run
		p.id.Groups = []int{}
		p.id.GroupsHow = fmt.Sprintf("setgroups([]) by the init, allowed by newgidmap (%s; subordinate gid %d)", p.newgidmap, p.subgid)
	case len(extra) == 0:
		p.id.GroupsHow = fmt.Sprintf("kept: only the vault's agent group %d, which reaches nothing inside (other sessions are hidden)", inboxGid)
	case slices.Contains(spec.AcceptRisks, mounts.RiskKeepGroups) || (spec.Plan != nil && slices.Contains(spec.Plan.AcceptRisks, mounts.RiskKeepGroups)):
		p.id.GroupsHow = "kept (profile accept_risks: keep-groups)"
	default:
		return nil, &Error{Code: ExitFedmemError, Stage: mounts.StageIdentity, Msg: fmt.Sprintf(
			"uid %d holds supplementary groups %v that an unprivileged caller's agent would keep (the kernel denies setgroups in a user namespace without newgidmap): run as a user without them, start fedmem-run as root (it drops them), or accept the risk by name in the profile (accept_risks: [keep-groups]); `fedmem doctor` explains", euid, extra)}
	}
	return p, nil
}

// newgidmapFor sets p up for newgidmap when it is installed and the
// caller has a subordinate gid.
func newgidmapFor(p *idPlan, uid int) bool {
	ng, err := exec.LookPath("newgidmap")
	if err != nil {
		return false
	}
	start, ok := subgidStart(uid)
	if !ok {
		return false
	}
	p.newgidmap, p.subgid = ng, start
	return true
}

// adoptInbox gives the session inbox, which the launcher just made for
// uid 0, to the agent's uid: through its descriptor (spec.InboxDir), never
// by name (the owner of 90-inbox/ may have put another folder there).
func adoptInbox(spec *Spec, uid int) error {
	if spec.InboxDir == nil {
		return nil
	}
	if err := unix.Fchown(int(spec.InboxDir.Fd()), uid, -1); err != nil {
		return &Error{Code: ExitFedmemError, Stage: mounts.StageIdentity, Msg: fmt.Sprintf("chown %s: %v", spec.Plan.Inbox, err)}
	}
	return nil
}

// idmapper makes one session's idmapped clones (idmapBinds).
type idmapper struct {
	spec          *Spec
	cfg           *InitConfig
	id            *Identity
	cmd           *exec.Cmd
	owner, ownerG int
	files         []*os.File
	ns            *os.File // the owner→agent user namespace, made on first use
}

// hand gives the init the detached mount fd as the clone of the plan's
// i-th mount (HomeIdmapIndex: the home).
func (im *idmapper) hand(fd, i int, name string) {
	f := os.NewFile(uintptr(fd), name)
	im.files = append(im.files, f)
	im.cmd.ExtraFiles = append(im.cmd.ExtraFiles, f)
	if im.cfg.Idmapped == nil {
		im.cfg.Idmapped = map[int]int{}
	}
	im.cfg.Idmapped[i] = 2 + len(im.cmd.ExtraFiles)
}

// userns is the owner→agent user namespace, made (or taken from
// PrepareIdmap) on first use.
func (im *idmapper) userns() (*os.File, error) {
	if im.ns != nil {
		return im.ns, nil
	}
	ns, err := takeUserns(im.owner, im.spec.UID, im.ownerG, im.spec.GID)
	if err != nil {
		return nil, &Error{Code: ExitFedmemError, Stage: mounts.StageIdentity, Msg: "user namespace for idmapped mounts: " + err.Error()}
	}
	im.ns = ns
	return ns, nil
}

// bindSource opens a writable bind's source without following a link and
// stats it: the session folder (inbox) through the launcher's descriptor,
// as its name may be another folder or a link by now; a listed socket by
// its name (OpenListedSocket opens it later, no link followed); any other
// source (a home's read-only top when pinned) through pin.Open, which refuses one that is not the folder the
// plan judged (rule writable-source-swapped). pfd is -1 unless opened
// here; unix.ENOENT: absent (the init reports a missing source).
func bindSource(spec *Spec, m mounts.Mount, inbox, sock bool) (pfd int, st unix.Stat_t, err error) {
	switch {
	case inbox:
		if err := unix.Fstat(int(spec.InboxDir.Fd()), &st); err != nil {
			return -1, st, &Error{Code: ExitFedmemError, Stage: mounts.StageIdentity, Msg: fmt.Sprintf("stat %s: %v", m.Source, err)}
		}
		return -1, st, nil
	case sock && (m.Why == mounts.WhyListedSocket || !pinned(spec.Plan, m.Source)):
		return -1, st, unix.Lstat(m.Source, &st)
	}
	pfd, st, err = pin.Open(spec.Plan, m.Source)
	var pe *pin.Error
	if errors.As(err, &pe) {
		return -1, st, &Error{Code: ExitFedmemError, Stage: mounts.StageIdentity, Msg: err.Error()}
	}
	return pfd, st, err
}

// pinned reports whether pin.Record pinned src (a home's read-only top is
// the home, pinned when it is attached whole).
func pinned(pl *mounts.Plan, src string) bool {
	_, ok := pl.Sources[src]
	return ok
}

// idmapBinds, for a root caller whose agent is not the owner, makes a
// detached, idmapped clone (owner→agent) of every writable bind whose
// source the owner owns, and hands its fd to the init (cfg.Idmapped). It
// must run in the host's user namespace: only CAP_SYS_ADMIN there may
// idmap a host filesystem's mount. A filesystem that cannot be idmapped is
// bound as it is, and the identity says so. Every source is cloned from
// the descriptor bindSource opened, never by name.
func idmapBinds(spec *Spec, cfg *InitConfig, id *Identity, cmd *exec.Cmd) (closeAll func(), err error) {
	im := &idmapper{spec: spec, cfg: cfg, id: id, cmd: cmd, owner: spec.OwnerUID, ownerG: spec.OwnerGID}
	closeAll = func() {
		for _, f := range im.files {
			f.Close()
		}
	}
	if !spec.OwnerSet {
		im.owner, im.ownerG = os.Getuid(), os.Getgid()
	}
	id.Writable = map[string]string{}
	defer func() {
		if im.ns != nil {
			im.ns.Close()
		}
	}()
	for i, m := range spec.Plan.Mounts {
		if err := im.bind(i, m); err != nil {
			return closeAll, err
		}
	}
	// The home of a root caller: the agent (another uid) could not even
	// traverse a 0700 home to reach the profile's writable paths in it.
	if homeNeedsIdmap(spec, im.owner) {
		if err := im.home(); err != nil {
			return closeAll, err
		}
	}
	return closeAll, nil
}

// bind makes the clone of the plan's i-th mount, m, if it needs one.
func (im *idmapper) bind(i int, m mounts.Mount) error {
	spec, id, owner := im.spec, im.id, im.owner
	// A listed unix socket (mounts.Mount.Idmap) is idmapped too, and
	// stays read-only: it must answer the agent's uid as it answers the
	// caller.
	sock := m.Kind == mounts.BindRO && m.Idmap
	if (m.Kind != mounts.BindRW && !sock) || i == HomeIdmapIndex {
		return nil
	}
	inbox := m.Source == spec.Plan.Inbox && spec.InboxDir != nil
	pfd, st, err := bindSource(spec, m, inbox, sock)
	if pfd >= 0 {
		defer unix.Close(pfd)
	}
	var fe *Error
	if err != nil && (inbox || errors.As(err, &fe)) {
		return err
	}
	if err != nil {
		return nil // the init reports a missing source
	}
	switch {
	case int(st.Uid) == spec.UID:
		id.Writable[m.Target] = "same owner (the agent, uid " + strconv.Itoa(spec.UID) + ")"
		if inbox {
			// The init (host uid 0 without groups, no capability over
			// the gate's files) cannot search a 90-inbox/ closed to all
			// but the agents' group (03770): root clones the folder made,
			// from its descriptor, and hands it over (no idmap).
			fd, err := cloneInboxFd(spec)
			if err != nil {
				return err
			}
			attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Attr_clr: unix.MOUNT_ATTR_RDONLY, Propagation: unix.MS_PRIVATE}
			if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
				unix.Close(fd)
				return &Error{Code: ExitFedmemError, Stage: mounts.StageIdentity, Msg: fmt.Sprintf("mount_setattr %s: %v", m.Source, err)}
			}
			im.hand(fd, i, "inbox")
		}
		return nil
	case int(st.Uid) != owner || owner == spec.UID:
		id.Writable[m.Target] = fmt.Sprintf("not idmapped: owned by uid %d, neither the caller (%d) nor the agent (%d); only its mode lets the agent write", st.Uid, owner, spec.UID)
		return nil
	}
	userns, err := im.userns()
	if err != nil {
		return err
	}
	var fd int
	switch {
	case sock && m.Why == mounts.WhyListedSocket:
		// No link followed, a socket or FIFO only: the plan refused a
		// path through a link, and another session's agent may swap a
		// folder on the way since (mounts rule unix-socket-no-link).
		sfd, err := OpenListedSocket(m.Source)
		if err != nil {
			return &Error{Code: ExitFedmemError, Stage: mounts.StageIdentity, Msg: err.Error()}
		}
		fd, err = unix.OpenTree(sfd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
		unix.Close(sfd)
		if err != nil {
			return &Error{Code: ExitFedmemError, Stage: mounts.StageIdentity, Msg: fmt.Sprintf("open_tree %s: %v", m.Source, err)}
		}
	case inbox:
		if fd, err = cloneInboxFd(spec); err != nil {
			return err
		}
	case pfd < 0:
		// The read-only top of a home in a writable path that nothing
		// pinned (a plan made by hand): by name, as before.
		if fd, err = unix.OpenTree(unix.AT_FDCWD, m.Source, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE); err != nil {
			return &Error{Code: ExitFedmemError, Stage: mounts.StageIdentity, Msg: fmt.Sprintf("open_tree %s: %v", m.Source, err)}
		}
	default:
		// The folder the plan judged, from bindSource's descriptor.
		if fd, err = unix.OpenTree(pfd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH); err != nil {
			return &Error{Code: ExitFedmemError, Stage: mounts.StageIdentity, Msg: fmt.Sprintf("open_tree %s: %v", m.Source, err)}
		}
	}
	// No Attr_clr of MOUNT_ATTR_RDONLY: with AT_RECURSIVE it made every
	// submount that is read-only on the host writable inside (a
	// read-only bind alias of the vault in the project: guarantee 1).
	// The clone keeps the host's flags, top and below (issue 22).
	attr := unix.MountAttr{
		Attr_set:    unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
		Propagation: unix.MS_PRIVATE,
		Userns_fd:   uint64(userns.Fd()),
	}
	if sock {
		attr.Attr_set, attr.Attr_clr = attr.Attr_set|unix.MOUNT_ATTR_RDONLY, 0
	}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		unix.Close(fd)
		id.Writable[m.Target] = fmt.Sprintf("not idmapped (%v): files keep their owner, uid %d may not write them", err, owner)
		return nil
	}
	im.hand(fd, i, "idmapped")
	id.Writable[m.Target] = fmt.Sprintf("idmapped %d→%d", owner, spec.UID)
	return nil
}

// home attaches the caller's home idmapped and read-only (HomeIdmapIndex),
// cloned from the pinned folder (pin.Open): a home swapped since the plan
// refuses the session.
func (im *idmapper) home() error {
	h := im.spec.Plan.Home
	userns, err := im.userns()
	if err != nil {
		return err
	}
	pfd, _, err := pin.Open(im.spec.Plan, h)
	var pe *pin.Error
	if errors.As(err, &pe) {
		return &Error{Code: ExitFedmemError, Stage: mounts.StageIdentity, Msg: err.Error()}
	}
	if err != nil {
		return nil
	}
	defer unix.Close(pfd)
	fd, err := unix.OpenTree(pfd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return nil
	}
	attr := unix.MountAttr{
		Attr_set:    unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
		Propagation: unix.MS_PRIVATE,
		Userns_fd:   uint64(userns.Fd()),
	}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		unix.Close(fd)
		im.id.Writable[h+" (home, read-only)"] = fmt.Sprintf("not idmapped (%v): the agent cannot traverse it", err)
		return nil
	}
	im.hand(fd, HomeIdmapIndex, "idmapped-home")
	im.id.Writable[h+" (home, read-only)"] = fmt.Sprintf("idmapped %d→%d", im.owner, im.spec.UID)
	return nil
}

// homeNeedsIdmap: the caller's home is a directory the owner owns that
// the agent (another uid) may not traverse: it is attached idmapped
// owner→agent and read-only under every plan mount (both backends).
func homeNeedsIdmap(spec *Spec, owner int) bool {
	var st unix.Stat_t
	h := spec.Plan.Home
	// An allow-list home is a tmpfs: the caller's home is never attached
	// whole, only the entries the profile names.
	return !spec.Plan.HomeAllowlist && h != "" && h != "/" && unix.Lstat(h, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && int(st.Uid) == owner && owner != spec.UID && st.Mode&0o001 == 0
}

// HomeIdmapIndex is the key of cfg.Idmapped for the caller's home (not a
// plan mount: it is attached right over the read-only root).
const HomeIdmapIndex = -1

// holdUserns returns a user namespace mapping uid from→to and gid
// gfrom→gto, made by a short-lived child.
//
// A second line maps to→0 (and gto→0), so what fedmem's pid 1 (host uid
// and gid 0) creates on such a mount — the mount points of guarantee 6's
// placeholders — has an owner on disk (the agent's ids) instead of failing
// with EOVERFLOW; the agent sees those as root's.
//
// The child runs none of its own code: it asks to be traced before its
// execve, so the kernel stops it right after the exec, before the new
// program's first instruction; the namespace is opened and the child
// killed (and reaped off the critical path). A start-up of a Go runtime
// per launch is saved (issue 9). Where ptrace is not allowed (Yama
// ptrace_scope 3) the child is this binary holding the namespace until
// its stdin closes, as before.
func holdUserns(from, to, gfrom, gto int) (*os.File, error) {
	uids := []syscall.SysProcIDMap{{ContainerID: from, HostID: to, Size: 1}}
	if to != 0 && to != from {
		uids = append(uids, syscall.SysProcIDMap{ContainerID: to, HostID: 0, Size: 1})
	}
	gids := []syscall.SysProcIDMap{{ContainerID: gfrom, HostID: gto, Size: 1}}
	if gto != 0 && gto != gfrom {
		gids = append(gids, syscall.SysProcIDMap{ContainerID: gto, HostID: 0, Size: 1})
	}
	if f, err := holdUsernsStopped(uids, gids); err == nil {
		return f, nil
	}
	return holdUsernsRunning(uids, gids)
}

// ahead is the user namespace PrepareIdmap started making, for the
// mapping key: one session per launcher.
var ahead struct {
	sync.Mutex
	key [4]int
	ch  chan usernsResult
}

type usernsResult struct {
	f   *os.File
	err error
}

// PrepareIdmap starts making, concurrently with the rest of the launch,
// the user namespace a root caller's idmapped binds will use (owner→agent
// uid, ownerG→agent gid), so its child's fork and exec are off the
// start-up's critical path (issue 9). Run takes it if the mapping is the
// same, and makes its own otherwise; nothing is done for another caller.
func PrepareIdmap(owner, uid, ownerG, gid int) {
	if os.Geteuid() != 0 || owner == uid {
		return
	}
	ch := make(chan usernsResult, 1)
	ahead.Lock()
	defer ahead.Unlock()
	if ahead.ch != nil {
		return // one already on its way (it is checked against its key)
	}
	ahead.key, ahead.ch = [4]int{owner, uid, ownerG, gid}, ch
	go func() {
		f, err := holdUserns(owner, uid, ownerG, gid)
		ch <- usernsResult{f, err}
	}()
}

// takeUserns returns the namespace PrepareIdmap made for this mapping, or
// makes one. One made for another mapping is closed.
func takeUserns(from, to, gfrom, gto int) (*os.File, error) {
	ahead.Lock()
	key, ch := ahead.key, ahead.ch
	ahead.key, ahead.ch = [4]int{}, nil
	ahead.Unlock()
	if ch != nil {
		r := <-ch
		if key == [4]int{from, to, gfrom, gto} {
			return r.f, r.err
		}
		if r.f != nil {
			r.f.Close()
		}
	}
	return holdUserns(from, to, gfrom, gto)
}

// holdUsernsStopped makes the namespace with a child stopped by ptrace
// at its exec (see holdUserns).
func holdUsernsStopped(uids, gids []syscall.SysProcIDMap) (*os.File, error) {
	proc, err := os.StartProcess("/proc/self/exe", []string{InitArg0, UsernsHoldArg}, &os.ProcAttr{
		Env: initEnv(),
		Sys: &syscall.SysProcAttr{
			Cloneflags:  unix.CLONE_NEWUSER,
			UidMappings: uids,
			GidMappings: gids,
			Ptrace:      true,
			Pdeathsig:   unix.SIGKILL,
		},
	})
	if err != nil {
		return nil, err
	}
	pid := proc.Pid
	// The child is ours and not reaped: its pid cannot be reused before
	// the Wait4 below, whatever os.Process does with its handle.
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", pid))
	_ = unix.Kill(pid, unix.SIGKILL)
	_ = proc.Release()
	go func() {
		// A traced child reports its stop too: reap until it is gone.
		for {
			var ws unix.WaitStatus
			wpid, werr := unix.Wait4(pid, &ws, unix.WALL, nil)
			if werr == unix.EINTR {
				continue
			}
			if werr != nil || (wpid == pid && (ws.Exited() || ws.Signaled())) {
				return
			}
		}
	}()
	return f, err
}

// holdUsernsRunning makes the namespace with this binary as a child that
// holds it until its stdin closes (holdMain).
func holdUsernsRunning(uids, gids []syscall.SysProcIDMap) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	defer w.Close()
	cmd := &exec.Cmd{
		Path:  "/proc/self/exe",
		Args:  []string{InitArg0, UsernsHoldArg},
		Env:   initEnv(),
		Stdin: r,
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:  unix.CLONE_NEWUSER,
			UidMappings: uids,
			GidMappings: gids,
			Pdeathsig:   unix.SIGKILL,
		},
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
	w.Close()
	_ = cmd.Wait()
	return f, err
}

// ProbeIdmap reports whether a mount of dir can be idmapped on this
// machine, as a run of a root caller does for its writable binds (for
// `fedmem-run --probe` and `fedmem doctor`). Only root can: nil otherwise
// means nothing.
func ProbeIdmap(dir string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("only root idmaps mounts (an unprivileged caller's agent is the caller: nothing to map)")
	}
	userns, err := holdUserns(0, DefaultAgentID, 0, DefaultAgentID)
	if err != nil {
		return fmt.Errorf("user namespace: %w", err)
	}
	defer userns.Close()
	fd, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("open_tree %s: %w", dir, err)
	}
	defer unix.Close(fd)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(userns.Fd())}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fmt.Errorf("mount_setattr(MOUNT_ATTR_IDMAP) on %s: %w", dir, err)
	}
	return nil
}
