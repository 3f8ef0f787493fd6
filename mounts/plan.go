package mounts

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fedmem/fedmem/mounts/request"
	"github.com/fedmem/fedmem/vault"
)

// Kind says how one mount is realised.
type Kind string

const (
	// RootRO is the host root, cloned recursively and made read-only.
	RootRO Kind = "root-ro"
	// BindRO binds Source onto Target read-only.
	BindRO Kind = "ro"
	// BindRW binds Source onto Target writable.
	BindRW Kind = "rw"
	// Tmpfs mounts a private, writable tmpfs on Target.
	Tmpfs Kind = "tmpfs"
	// Masked hides a secret: an empty read-only tmpfs over a directory, or the
	// empty read-only file over a file.
	Masked Kind = "masked"
	// Hidden replaces a directory with an empty read-only directory that holds
	// only the mount points of later mounts (used for the inbox, so other
	// sessions' drafts are invisible).
	Hidden Kind = "hidden"
	// Proc is a fresh procfs of the sandbox's pid namespace.
	Proc Kind = "proc"
	// Dev is a minimal /dev: null, zero, full, random, urandom, tty, a private
	// devpts and shm.
	Dev Kind = "dev"
)

// Mount is one entry of a Plan. Mounts are applied in order.
type Mount struct {
	Kind   Kind   `json:"kind"`
	Source string `json:"source,omitempty"`
	Target string `json:"target"`
	// Dir is true when Target is a directory (false: a file). Meaningful for
	// binds and masks.
	Dir bool `json:"dir"`
	// Create asks the backend to create a missing Source (a directory if Dir,
	// else an empty file) before binding; only for writable home paths.
	Create bool `json:"create,omitempty"`
	// Seed, for a per-profile state file (request.State.Seed), is the
	// user's own file the launcher copies to Source when it is newer.
	Seed string `json:"seed,omitempty"`
	// State marks a profile state bind (request.State): the launcher
	// creates a missing Source and Target itself, without following links.
	State bool `json:"state,omitempty"`
	// Idmap asks, for a BindRO of a listed unix socket (unix_sockets), that
	// a root caller's backend attach it idmapped owner→agent like the
	// writable binds: a listed socket the caller owns then answers the
	// agent's uid (connect needs write permission on it).
	Idmap bool `json:"idmap,omitempty"`
	// Placeholder marks a Protected path that did not exist: the backend
	// holds its name with a read-only placeholder (see Protected).
	Placeholder bool `json:"placeholder,omitempty"`
	// Propose, on the workdir's BindRW (profile `workdir: propose`), asks
	// the backend for an overlay instead of the bind: Source (the real
	// tree) is its read-only lower layer, the upper a tmpfs of Size bytes
	// whose contents fedmem-run turns into a proposal after the session
	// (mounts/propose.go).
	Propose bool `json:"propose,omitempty"`
	// View, on a read-only bind of the vault or of a vault.visible folder
	// under `vault.view: in-force`, asks the backend for a read-only
	// overlay over it whose top layer hides Hide (paths relative to
	// Target: a whiteout each) and rewrites the folder pages that list
	// them (vault/view.BuildLayer).
	View bool     `json:"view,omitempty"`
	Hide []string `json:"hide,omitempty"`
	// ViewTree, on a View, is the folder of the gate's view tree the
	// overlay shows instead of Source (vault/view.TreeDir: the notes as
	// the gate judged them, from the commit; "" when the launcher judged
	// the live vault itself, a scan). The backend reaches it under the
	// root it builds, at this path, and fails when it cannot.
	ViewTree string `json:"view_tree,omitempty"`
	// Size caps a tmpfs (Tmpfs; for Dev, its /dev/shm) in bytes; 0: the
	// kernel's default (half of RAM).
	Size int64 `json:"size,omitempty"`
	// Why says in words why the mount is there.
	Why string `json:"why"`
}

// Plan is everything a backend needs to build the sandbox's filesystem.
type Plan struct {
	Vault   string  `json:"vault"`
	Inbox   string  `json:"inbox"`
	Session string  `json:"session"`
	Workdir string  `json:"workdir"`
	Home    string  `json:"home"`
	Mounts  []Mount `json:"mounts"`
	// Writable lists every path the agent may write (for Landlock).
	Writable []string `json:"writable"`
	// Network is the network mode (never empty: Build resolves the
	// profile default).
	Network NetworkMode `json:"network"`
	// Require are the layers the profile requires (its `require:`).
	Require Require `json:"require"`
	// View, under `vault.view: in-force`, is what the sandbox hides of the
	// vault and why (mounts/view.go); nil: the whole vault.
	View *View `json:"view,omitempty"`
	// Visible, when set, are the only vault folders the sandbox shows
	// (vault-relative); .git and everything else of the vault is absent.
	Visible []string `json:"visible,omitempty"`
	// AcceptRisks are the profile's accept_risks, for the backend (e.g.
	// keep-groups: an unprivileged caller's agent keeps its groups).
	AcceptRisks []string `json:"accept_risks,omitempty"`
	// Warnings name every setting that weakens the sandbox.
	Warnings []string `json:"warnings,omitempty"`
	// HomeAllowlist is true when the home is an allow-list
	// (request.HomeAllowlist): an empty read-only tmpfs at Home holding
	// only the profile's named entries. The caller's home is then never
	// attached whole (no idmapped home for a root caller).
	HomeAllowlist bool `json:"home_allowlist,omitempty"`
	// CgroupOptional names the limits ("memory", "pids", "cpu") the profile's
	// limits.cgroup_optional covers: without a session cgroup the backend
	// runs without them (pids: RLIMIT_NPROC where it holds) and says so,
	// instead of refusing.
	CgroupOptional []string `json:"cgroup_optional,omitempty"`
	// SocketFamilies are the profile's socket_families as AF_ numbers:
	// socket(2) may name them besides unix, inet, inet6 and netlink.
	SocketFamilies []uint32 `json:"socket_families,omitempty"`
	// HostReadOnly are the paths inside (under a writable bind's target)
	// of mounts that are read-only on the host: each must be served by a
	// read-only mount inside too (mounts.Verify, rule host-readonly). Filled
	// from the host's mountinfo by NoteHostReadOnly.
	HostReadOnly []string `json:"host_read_only,omitempty"`
	// InstructionsReadOnly (profile `instructions: read-only`): the files
	// the next agent reads as instructions are a persistence family.
	InstructionsReadOnly bool `json:"instructions_read_only,omitempty"`
	// UnixSockets are the profile's unix_sockets (cleaned): Landlock's
	// resolve-unix rules (ABI ≥ 9) grant exactly these.
	UnixSockets []string `json:"unix_sockets,omitempty"`
	// HomeTop, when the home lies in a writable path, is the home: its
	// top level and every dot-entry are read-only, its existing non-dot
	// entries writable (homeTop; mounts.Verify, rule home-config-readonly).
	HomeTop string `json:"home_top,omitempty"`
	// Watch are names in writable paths that the user's configuration
	// names as code and that were absent when the plan was made: no
	// placeholder holds them (it would be an entry Git shows); the backend
	// moves aside any that appeared after the session (QuarantineCandidates).
	Watch []string `json:"watch,omitempty"`
	// Sources pin the folders (and files) the plan judged: for each
	// writable bind's Source, and a home attached whole, what the launcher
	// found there with no link followed once the plan was made
	// (mounts/pin.Record). The backends bind only that folder, from a
	// descriptor, and refuse the session otherwise (rule
	// writable-source-swapped). nil: nothing pinned (a plan made by hand).
	Sources map[string]Source `json:"sources,omitempty"`
}

// Source is one pinned source (Plan.Sources): the path it was found at,
// links resolved once when it was pinned, and its device and inode.
type Source struct {
	Path string `json:"path"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
}

// Input is what Build needs besides the profile. Paths must be absolute and
// free of symlinks (the caller resolves them).
type Input struct {
	Vault   string
	Session string
	Workdir string
	Home    string
	// Exists reports whether a host path exists and is a directory; Build
	// uses it to skip masks of absent secrets. nil means "all exist as dirs".
	Exists func(p string) (exists, isDir bool)
	// View, when set (LoadView), is the in-force view the vault's binds
	// realise.
	View *View
	// ExtraMasks are absolute host paths to mask besides the home secrets:
	// the caller's runtime dir and forwarded agent sockets (SSH_AUTH_SOCK,
	// GPG agent), which would hand the agent the user's credentials.
	ExtraMasks []string
	// ResolvConf is where /etc/resolv.conf really is (symlinks resolved);
	// its directory stays visible when it lies under a hidden /run.
	ResolvConf string
	// RealPath resolves symlinks of a host path (nil: paths are taken as
	// they are); a /var/run that is a link to /run is not hidden twice.
	RealPath func(p string) string
	// Specials lists the unix sockets and FIFOs in the host tree at root
	// (absolute paths), for Build to mask those no unix_sockets entry
	// names. An error (the scan's bound passed, a directory it cannot
	// read) refuses the plan: fail closed. nil: nothing is scanned (the
	// plan says so in a warning).
	Specials func(root string) ([]string, error)
	// ReadFile reads a configuration file of the user's tools (Git config,
	// Claude Code settings); (nil, nil) or an error when it is absent. Build
	// holds what they name as code read-only (guarantee 6). nil: not read.
	ReadFile func(p string) ([]byte, error)
	// List returns the names in a host directory (nil: none); Build holds
	// the existing persistence names matching families.ProjectFamilies at
	// the top of each writable root read-only. nil: nothing is listed.
	List func(dir string) ([]string, error)
	// Readlink returns a link's target as written (os.Readlink); Build
	// uses it for dangling links among the dot-entries of a home in a
	// writable path (homeLinks). nil: not read.
	Readlink func(p string) (string, error)
	// PathDirs is the caller's PATH, split: a directory on it inside a
	// writable non-dot entry of a home in a writable path is held
	// read-only (homeNamed). nil: none.
	PathDirs []string
	// Homes are the accounts' home directories (host.Homes: /etc/passwd
	// and /root, links resolved): the workdir may be none of them but the
	// caller's, nor hold one (rule workdir-other-home), and no home's
	// dot-entry (workdir-home-config). A home that only NSS knows (LDAP)
	// is not listed: a workdir holding it is not refused for that. nil:
	// only Home is checked.
	Homes []string
	// Aliases returns the other paths the host's mount table shows a
	// folder at (host.Aliases); each is judged by the workdir rules like
	// the folder itself. nil: none.
	Aliases func(p string) []Alias
	// Mirrors are the folders that show the whole root filesystem at
	// another path (host.Mirrors): hidden inside unless they hold the
	// workdir or the vault, so the allow-list home, the masks and the
	// private /tmp hold there too.
	Mirrors []string
	// PasswdHome is the caller's home as /etc/passwd names it: only there
	// does a daemon tree (/var/lib/jenkins) hold the caller's projects.
	PasswdHome string
	// Links returns the number of hard links of a host file (0: unknown);
	// Build refuses a home in a writable path whose dot-entries hold a
	// startup file with more than one (homeNamed). nil: not checked.
	Links func(p string) int
}

// Alias is another path at which the host shows what a folder holds:
// through a bind mount (no symbolic link: resolving the path does not find
// it), a filesystem mounted twice, a btrfs subvolume mounted beside its
// parent, or a bind of a folder of some filesystem (a container's
// /host/etc). Path is where the host shows it ("" when it is known only as
// a folder of its filesystem); As is the path it is judged as: Path, or
// the path it has in the root tree a mirror of the root shows
// (VIEW/srv/x is /srv/x), or the folder of its filesystem a bind shows
// (/etc). Holds: Path's (As') content lies inside the folder, so the
// folder shows it under another name (host.Aliases finds them).
type Alias struct {
	Path  string
	As    string
	Holds bool
}

// ErrPlan marks an invalid plan input.
var ErrPlan = errors.New("invalid mount plan")

// Build computes the Plan. Order encodes precedence: writable paths first,
// then the vault read-only over them, then the inbox writable, then masks —
// so the vault's protection wins over every writable path and secrets stay
// masked whatever a profile opens.
func Build(rq request.Request, in Input) (*Plan, error) {
	if err := checkInput(in); err != nil {
		return nil, err
	}
	if err := checkWorkdir(rq, in); err != nil {
		return nil, err
	}
	pl, err := newPlan(&rq, in)
	if err != nil {
		return nil, err
	}
	b := &planBuilder{pl: pl, rq: &rq, in: in, exists: in.Exists}
	if b.exists == nil {
		b.exists = func(string) (bool, bool) { return true, true }
	}
	b.addSystem()
	if err := b.addWritable(); err != nil {
		return nil, err
	}
	b.addListedSockets()
	if err := b.addRunLater(); err != nil {
		return nil, err
	}
	if err := b.addVault(); err != nil {
		return nil, err
	}
	if err := b.addMasks(); err != nil {
		return nil, err
	}
	return pl, nil
}

// checkInput refuses paths that are not clean and absolute, and a session
// id that is not one.
func checkInput(in Input) error {
	for _, x := range []struct{ name, v string }{{"vault", in.Vault}, {"workdir", in.Workdir}, {"home", in.Home}} {
		if x.v == "" || !filepath.IsAbs(x.v) || filepath.Clean(x.v) != x.v {
			return fmt.Errorf("%w: %s %q must be a clean absolute path", ErrPlan, x.name, x.v)
		}
	}
	if !vault.ValidSessionID(in.Session) {
		return fmt.Errorf("%w: session id %q", ErrPlan, in.Session)
	}
	return nil
}

// newPlan is the plan's settings from the profile, before any mount: the
// typed network mode and required layers (validated here, once), the
// socket families, the listed unix sockets and the limits that may go
// without a cgroup.
func newPlan(rq *request.Request, in Input) (*Plan, error) {
	network, err := NetworkModeOf(rq.Network)
	if err != nil {
		return nil, err
	}
	require, err := RequireOf(rq.Require)
	if err != nil {
		return nil, err
	}
	pl := &Plan{
		Vault:   in.Vault,
		Inbox:   vault.InboxPath(in.Vault, in.Session),
		Session: in.Session,
		Workdir: in.Workdir,
		Home:    in.Home,
		Network: network,
		Require: require,
		// The seccomp filter's socket-families rule adds these.
		SocketFamilies: rq.SocketFamilies,

		InstructionsReadOnly: rq.InstructionsReadOnly,
		CgroupOptional:       rq.CgroupOptional,
	}
	for _, s := range rq.UnixSockets {
		// Landlock grants what is bound: not a path through a link
		// (rule unix-socket-no-link, addHostAuthority warns).
		if _, linked := socketLinked(in, filepath.Clean(s)); !linked {
			pl.UnixSockets = append(pl.UnixSockets, filepath.Clean(s))
		}
	}
	return pl, nil
}

// planBuilder adds one plan's mounts layer by layer (Build).
type planBuilder struct {
	pl     *Plan
	rq     *request.Request
	in     Input
	exists func(p string) (exists, isDir bool)
	// all is the writable layer as added (addWritable): the binds, the
	// allow-list home and its entries, parents first.
	all []Mount
	// writable are the writable binds among all.
	writable []Mount
}

func (b *planBuilder) add(m Mount) { b.pl.Mounts = append(b.pl.Mounts, m) }

func (b *planBuilder) warn(format string, args ...any) {
	b.pl.Warnings = append(b.pl.Warnings, fmt.Sprintf(format, args...))
}

// addSystem adds the host root read-only, /dev, /proc, a private /tmp and
// (guarantee 5) the host's authority held back: procfs knobs read-only,
// kernel state masked, /run hidden; a hidden home.
func (b *planBuilder) addSystem() {
	rq, in := b.rq, b.in
	b.add(Mount{Kind: RootRO, Source: "/", Target: "/", Dir: true, Why: "host filesystem, read-only"})
	b.add(Mount{Kind: Dev, Target: "/dev", Dir: true, Why: "minimal devices", Size: rq.TmpBytes})
	b.add(Mount{Kind: Proc, Target: "/proc", Dir: true, Why: "processes of the sandbox only"})
	b.add(Mount{Kind: Tmpfs, Target: "/tmp", Dir: true, Why: "private /tmp", Size: rq.TmpBytes})
	addHostAuthority(b.pl, rq, in, b.exists)
	b.pl.Writable = append(b.pl.Writable, "/tmp", "/dev/shm")
	if rq.Home.Mode == request.HomeHidden && !vault.Within(in.Vault, in.Home) {
		b.add(Mount{Kind: Hidden, Target: in.Home, Dir: true, Why: "profile hides home"})
	}
}

// homeInWritable reports whether the workdir (outside the vault) or a
// writable path is the home or holds it.
func (b *planBuilder) homeInWritable() bool {
	in := b.in
	inside := vault.Within(in.Home, in.Workdir) && !vault.Within(in.Workdir, in.Vault)
	for _, w := range b.rq.Writable {
		inside = inside || vault.Within(in.Home, filepath.Clean(w))
	}
	return inside
}

// addWritable adds the writable layer, parents before children so a child
// bind is not hidden by its parent: an allow-list home, the workdir, the
// profile's home.writable, state and writable paths, and the read-only
// top of a home inside one of them. The plan's Writable lists the binds.
func (b *planBuilder) addWritable() error {
	rq, in, pl := b.rq, b.in, b.pl
	homeInWritable := b.homeInWritable()
	var writable []Mount
	if rq.Home.Mode == request.HomeAllowlist && homeInWritable {
		// The workdir (or a writable path) is the home or holds it: the
		// whole home is shown through it; an allow-list tmpfs under it
		// would be covered (and its seal would land on the bind above).
		// Its top level and dot-entries are read-only instead (homeTop).
		b.warn("the home %s lies in a writable path (workdir or writable:): it is shown whole, with its secrets masked, not as an allow-list", in.Home)
	}
	if rq.Home.Mode == request.HomeAllowlist && !homeInWritable && in.Home != "/" && !vault.Within(in.Home, in.Vault) {
		writable = append(writable, b.allowlistHome()...)
	}
	if vault.Within(in.Workdir, in.Vault) {
		b.warn("workdir %s lies inside the vault: it stays read-only", in.Workdir)
	} else if ok, _ := b.exists(in.Workdir); ok {
		writable = append(writable, workdirMount(rq, in))
	}
	writable = append(writable, b.homeWritable()...)
	// Per-profile persistent state (caches, an agent's state file).
	sm, sw := stateMounts(rq, in, b.exists)
	writable = append(writable, sm...)
	pl.Warnings = append(pl.Warnings, sw...)
	writable = append(writable, b.profileWritable()...)
	if homeInWritable {
		// After the bind that holds the home: at the same depth, the stable
		// sort keeps the read-only home on top of it.
		ht, err := homeTop(pl, in, b.exists)
		if err != nil {
			return err
		}
		writable = append(writable, ht...)
	}
	sort.SliceStable(writable, func(i, j int) bool { return depth(writable[i].Target) < depth(writable[j].Target) })
	b.all = writable
	for _, m := range b.all {
		b.add(m)
		if m.Kind != BindRW {
			continue // the allow-list home and its read-only entries
		}
		b.writable = append(b.writable, m)
		pl.Writable = append(pl.Writable, m.Target)
		if vault.Within(in.Vault, m.Target) {
			b.warn("writable %s contains the vault: the vault is re-bound read-only over it (Landlock cannot subtract it)", m.Target)
		}
	}
	return nil
}

// allowlistHome is the home as an allow-list: an empty read-only tmpfs at
// $HOME, sorted with the writable binds (parents first) so that a workdir
// or writable path that contains the home is not covered by it; what the
// profile names (home.show) is bound into it, nothing else of the
// caller's home exists.
func (b *planBuilder) allowlistHome() []Mount {
	in := b.in
	b.pl.HomeAllowlist = true
	out := []Mount{{Kind: Hidden, Target: in.Home, Dir: true, Why: "home: an allow-list, only what the profile names exists (home.show, home.writable, state)"}}
	for _, rel := range b.rq.Home.Show {
		t := filepath.Join(in.Home, filepath.FromSlash(rel))
		if vault.Within(t, in.Vault) || vault.Within(in.Vault, t) {
			b.warn("home.show %s overlaps the vault: the vault's own mounts decide", t)
			continue
		}
		// A dotfile that is a link (~/.config/git -> ~/dotfiles/git)
		// shows what it points to: a mount point must not be a link,
		// and its kind is its target's.
		src := t
		if in.RealPath != nil {
			src = in.RealPath(t)
		}
		ok, isDir := b.exists(src)
		if !ok {
			continue
		}
		out = append(out, Mount{Kind: BindRO, Source: src, Target: t, Dir: isDir, Why: "profile: home.show"})
	}
	return out
}

// homeWritable are the profile's home.writable binds (none with a hidden
// home), created when missing; one overlapping the vault stays read-only.
func (b *planBuilder) homeWritable() []Mount {
	if b.rq.Home.Mode == request.HomeHidden {
		return nil
	}
	var out []Mount
	for _, w := range b.rq.Home.Writable {
		dir := strings.HasSuffix(w, "/")
		t := filepath.Join(b.in.Home, path.Clean(w))
		if vault.Within(t, b.in.Vault) || vault.Within(b.in.Vault, t) {
			b.warn("home.writable %s overlaps the vault: it stays read-only", t)
			continue
		}
		out = append(out, Mount{Kind: BindRW, Source: t, Target: t, Dir: dir, Create: true, Why: "profile: home.writable"})
	}
	return out
}

// profileWritable are the profile's writable paths that exist; one inside
// the vault stays read-only.
func (b *planBuilder) profileWritable() []Mount {
	var out []Mount
	for _, w := range b.rq.Writable {
		t := filepath.Clean(w)
		if vault.Within(t, b.in.Vault) {
			b.warn("writable %s lies inside the vault: it stays read-only", t)
			continue
		}
		if ok, isDir := b.exists(t); ok {
			out = append(out, Mount{Kind: BindRW, Source: t, Target: t, Dir: isDir, Why: "profile: writable"})
		}
	}
	return out
}

// addListedSockets binds the profile's unix_sockets back: those under the
// allow-list home into it, and every other (outside the hidden shared
// directories, which bind theirs back too) onto itself, idmapped
// owner→agent: a root caller's 0755 socket must answer the agent's uid as
// it answers the caller (issue 23).
func (b *planBuilder) addListedSockets() {
	in := b.in
	if b.pl.HomeAllowlist {
		for _, s := range b.rq.UnixSockets {
			s = filepath.Clean(s)
			if _, linked := socketLinked(in, s); linked || !vault.Within(s, in.Home) || s == in.Home || vault.Within(s, in.Vault) || shownBy(binds(b.all), s) {
				continue
			}
			if ok, isDir := b.exists(s); ok && !isDir {
				b.add(Mount{Kind: BindRO, Source: s, Target: s, Idmap: true, Why: WhyListedSocket})
			}
		}
	}
	b.pl.Mounts = append(b.pl.Mounts, listedSockets(b.pl, in, b.exists)...)
}

// addRunLater holds read-only (guarantee 6) what runs code later in every
// writable path, with what the user's own configuration names as code.
func (b *planBuilder) addRunLater() error {
	pl, in := b.pl, b.in
	extra, cw, err := configuredRunLater(in, b.exists)
	if err != nil {
		return err
	}
	pl.Warnings = append(pl.Warnings, cw...)
	extra = append(extra, homeLinks(pl, in, b.exists)...)
	hn, err := homeNamed(pl, b.rq, in, b.exists)
	if err != nil {
		return err
	}
	extra = append(extra, hn...)
	protectPersistence(pl, in, b.exists, b.writable, extra)
	return nil
}

// addVault binds the vault read-only as a whole over everything writable
// (only its vault.visible folders shown when the profile names them), the
// inbox hidden and this session's inbox writable.
func (b *planBuilder) addVault() error {
	pl, in := b.pl, b.in
	b.add(b.viewed(Mount{Kind: BindRO, Source: in.Vault, Target: in.Vault, Dir: true, Why: "vault, read-only as a whole (.git included)"}))
	if len(b.rq.VaultVisible) > 0 {
		b.add(Mount{Kind: Hidden, Target: in.Vault, Dir: true, Why: "profile: only vault.visible folders exist"})
		vis := append([]string{}, b.rq.VaultVisible...)
		sort.Slice(vis, func(i, j int) bool { return depth(vis[i]) < depth(vis[j]) })
		for _, v := range vis {
			t := filepath.Join(in.Vault, path.Clean(v))
			if ok, isDir := b.exists(t); !ok || !isDir {
				b.warn("vault.visible %s is not a folder of this vault: nothing to show", v)
				continue
			}
			if in.RealPath != nil {
				// A link on the way (a committed `10-projects/l -> .git`)
				// would show what it leads to — the history, the gate's
				// view tree, a home's secrets — where the plan judged a
				// vault folder (red team rtview3: TestRTView3VisibleThroughLink).
				if rp, want := in.RealPath(t), filepath.Join(in.RealPath(in.Vault), path.Clean(v)); rp != want {
					return fmt.Errorf("%w: vault.visible %s is reached through a link (%s leads to %s): a visible folder must be a folder of the vault itself (rule vault-visible-link)", ErrPlan, v, t, rp)
				}
			}
			b.add(b.viewed(Mount{Kind: BindRO, Source: t, Target: t, Dir: true, Why: "profile: vault.visible"}))
			pl.Visible = append(pl.Visible, path.Clean(v))
		}
	}
	inboxRoot := filepath.Join(in.Vault, vault.InboxDir)
	b.add(Mount{Kind: Hidden, Target: inboxRoot, Dir: true, Why: "other sessions' drafts are invisible"})
	b.add(Mount{Kind: BindRW, Source: pl.Inbox, Target: pl.Inbox, Dir: true, Why: "this session's inbox, the only writable vault path"})
	pl.Writable = append(pl.Writable, pl.Inbox)
	return nil
}

// viewed makes m, a read-only bind of the vault or one of its folders,
// an overlay that hides what the plan's view does not show.
func (b *planBuilder) viewed(m Mount) Mount {
	v := b.in.View
	if v == nil {
		return m
	}
	b.pl.View = v
	rel := viewRel(b.in.Vault, m.Target)
	m.View, m.Hide = true, v.hideUnder(rel)
	if v.Tree != "" {
		m.ViewTree = filepath.Join(v.Tree, filepath.FromSlash(rel))
		if ok, isDir := b.exists(m.ViewTree); !ok || !isDir {
			// Nothing of the folder is in force (the gate's tree holds
			// only what is): an empty folder, read-only.
			return Mount{Kind: Hidden, Target: m.Target, Dir: true, Why: "vault.visible, nothing in force there (vault.view: in-force: not in the gate's view tree)"}
		}
	}
	if m.Target == b.in.Vault {
		m.Why = "vault, read-only, in force only (vault.view: in-force): " + fmt.Sprintf("%d paths hidden", len(m.Hide))
	}
	return m
}

// addMasks masks last, over everything: the gate's private state, the
// caller's credential sockets and runtime dir, the home's secrets, and
// (guarantee 5) every unix socket or FIFO of the host in a tree shown to
// the agent that the profile does not list.
func (b *planBuilder) addMasks() error {
	rq, in := b.rq, b.in
	// The gate's private state (claimed drafts, decisions, audit log, review
	// socket) sits beside the vault: a workdir that contains the vault's
	// parent would otherwise expose it, writable.
	if ok, isDir := b.exists(vault.GateStateDir(in.Vault)); ok && isDir {
		b.add(Mount{Kind: Masked, Target: vault.GateStateDir(in.Vault), Dir: true, Why: "the gate's private state"})
	}
	b.addVaultCopyMasks()
	if err := b.addViewMasks(); err != nil {
		return err
	}
	for _, t := range in.ExtraMasks {
		t = filepath.Clean(t)
		if !filepath.IsAbs(t) || vault.Within(in.Vault, t) || vault.Within(t, in.Vault) || b.absentInHome(t) {
			continue
		}
		if ok, isDir := b.exists(t); ok {
			b.add(Mount{Kind: Masked, Target: t, Dir: isDir, Why: "credential socket or runtime dir"})
		}
	}
	if rq.Home.Mode != request.HomeHidden {
		for _, m := range rq.Home.Masks {
			t := filepath.Join(in.Home, path.Clean(m.Path))
			ok, isDir := b.exists(t)
			if !ok || b.absentInHome(t) {
				continue
			}
			b.add(Mount{Kind: Masked, Target: t, Dir: isDir, Why: m.Why})
		}
	}
	b.addHomeAliases()
	return maskSpecials(b.pl, rq, in, withoutHomeTop(b.all))
}

// addHomeAliases holds the home's allow-list and masks at every other path
// the host's mount table shows the home or a part of it at (a data disk's
// /mnt/data/home/me bound to /home/me, ~/.ssh bound to /srv/keys), and
// hides every mirror of the whole root (mount --bind / VIEW): the
// read-only host tree would show the home whole there, ~/.ssh/id_ed25519
// and all, and the host's /tmp and sockets beside it. Such a path is an
// empty read-only folder inside, unless it holds the vault or a path the
// session binds: then it keeps its tree with the home's secrets masked in
// it, and the plan warns (a workdir in an alias of the home is refused
// before: rule workdir-home-alias).
func (b *planBuilder) addHomeAliases() {
	rq, in := b.rq, b.in
	var paths []string
	paths = append(paths, in.Mirrors...)
	if in.Aliases != nil && in.Home != "" && in.Home != "/" {
		for _, a := range in.Aliases(in.Home) {
			paths = append(paths, a.Path)
		}
	}
	seen := map[string]bool{}
	for _, t := range paths {
		t = filepath.Clean(t)
		if t == "" || t == "." || t == "/" || !filepath.IsAbs(t) || seen[t] || vault.Within(t, in.Home) || b.hiddenAt(t) {
			continue
		}
		seen[t] = true
		if ok, isDir := b.exists(t); !ok || !isDir {
			continue
		}
		if !b.holdsBound(t) {
			b.add(Mount{Kind: Hidden, Target: t, Dir: true, Why: "another path of the home " + in.Home + " or of the whole root: the home's allow-list holds there too"})
			continue
		}
		b.warn("%s shows the home %s (or the whole root) at another path and holds the vault or a path the session binds: only the home's secrets are masked there", t, in.Home)
		for _, m := range rq.Home.Masks {
			mt := filepath.Join(t, path.Clean(m.Path))
			if ok, isDir := b.exists(mt); ok {
				b.add(Mount{Kind: Masked, Target: mt, Dir: isDir, Why: m.Why + " (another path of the home " + in.Home + ")"})
			}
		}
	}
}

// hiddenAt says whether t lies under a tree the plan already hides or
// replaces (the private /tmp, /run's empty folder, a mask) and no bind of
// the plan shows it again. It reads the whole plan so far: the system's
// tmpfs and hidden folders are not among the writable group (b.all),
// which it read before, so a mirror under /tmp or /run (a container
// runtime's rootfs) was given a hidden mount of its own in a tree that
// does not exist inside.
func (b *planBuilder) hiddenAt(t string) bool {
	for _, m := range b.pl.Mounts {
		if (m.Kind == Hidden || m.Kind == Tmpfs || m.Kind == Masked || m.Kind == Dev || m.Kind == Proc) && m.Target != b.in.Home && vault.Within(t, m.Target) {
			return !shownBy(binds(b.pl.Mounts), t)
		}
	}
	return false
}

// holdsBound says whether t holds the vault or the target of a bind of
// the plan (the workdir, a writable path, the inbox).
func (b *planBuilder) holdsBound(t string) bool {
	if vault.Within(b.in.Vault, t) || vault.Within(t, b.in.Vault) {
		return true
	}
	for _, m := range b.all {
		if (m.Kind == BindRW || m.Kind == BindRO) && m.Target != "/" && vault.Within(m.Target, t) {
			return true
		}
	}
	return false
}

// absentInHome: in an allow-list home a mask matters only where something
// of the caller's home is bound (a second layer); elsewhere its path does
// not exist inside.
func (b *planBuilder) absentInHome(t string) bool {
	return b.pl.HomeAllowlist && vault.Within(t, b.in.Home) && !shownBy(binds(b.all), t)
}

// binds are the bind mounts of ms (the allow-list home's tmpfs left out).
func binds(ms []Mount) []Mount {
	var out []Mount
	for _, m := range ms {
		if m.Kind == BindRO || m.Kind == BindRW {
			out = append(out, m)
		}
	}
	return out
}

// shownBy reports whether t lies in the target of one of ms.
func shownBy(ms []Mount, t string) bool {
	for _, m := range ms {
		if vault.Within(t, m.Target) {
			return true
		}
	}
	return false
}

func depth(p string) int { return strings.Count(p, "/") }
