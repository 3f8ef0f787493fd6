// Package request is what a profile asks of a session's sandbox, in the
// words the plan (mounts.Build) reads: plain data, made from a profile by
// profiles.(*Profile).PlanRequest, so that mounts never reads the profile
// schema. mounts types and validates what is a mode (network, require)
// once, when it builds the Plan. The names both sides share (network
// modes, home modes, accept_risks, the state root, a credential source's
// key paths and file format) are defined here once.
package request

// Network modes, as a profile's `network:` names them (mounts.NetworkMode
// types them; profiles documents them).
const (
	NetworkHost      = "host"
	NetworkNone      = "none"
	NetworkAllowlist = "allowlist"
	NetworkPublic    = "public"
)

// HomeMode is a profile's `home.mode`, as written.
type HomeMode string

// Home modes (profiles documents them).
const (
	HomeAllowlist HomeMode = "allowlist"
	HomeRO        HomeMode = "ro"
	HomeHidden    HomeMode = "hidden"
)

// RiskKeepGroups, in accept_risks, lets an unprivileged caller's agent keep
// the caller's supplementary groups where fedmem-run cannot drop them.
const RiskKeepGroups = "keep-groups"

// StateRoot is where per-profile state is kept, relative to $HOME:
// ~/.local/share/fedmem/<profile>/<path>.
const StateRoot = ".local/share/fedmem"

// Request is one profile's settings for the plan.
type Request struct {
	// Profile is the profile's name: its state lives under StateRoot/Profile.
	Profile string
	// Network is the profile's network mode as written ("": the default).
	Network string
	// Require are the profile's `require:` names.
	Require []string
	// SocketFamilies are the socket_families as AF_ numbers.
	SocketFamilies []uint32
	// InstructionsReadOnly: `instructions: read-only`.
	InstructionsReadOnly bool
	// UnixSockets are the profile's unix_sockets as written.
	UnixSockets []string
	// AcceptRisks are the profile's accept_risks.
	AcceptRisks []string
	// CgroupOptional names the limits ("memory", "pids", "cpu") the profile
	// sets and lets go without a session cgroup (limits.cgroup_optional).
	CgroupOptional []string
	// TmpBytes caps the private /tmp, /dev/shm and shared scratch tmpfs;
	// 0: the kernel's default.
	TmpBytes int64
	// ProposeWorkdir: `workdir: propose`, an overlay capped at WorkdirBytes.
	ProposeWorkdir bool
	WorkdirBytes   int64
	Home           Home
	// Writable are the profile's writable paths (absolute, as written).
	Writable []string
	// VaultVisible are the vault folders the profile shows (vault.visible).
	VaultVisible []string
	// VaultView is vault.view: "in-force" shows only the notes in force.
	VaultView string
	// State are the profile's `state:` entries.
	State []State
}

// Home is what the profile says of the caller's home.
type Home struct {
	Mode HomeMode
	// Writable are home.writable, relative to $HOME (a trailing slash
	// marks a directory).
	Writable []string
	// Show are home.show as clean paths relative to $HOME, duplicates
	// dropped.
	Show []string
	// Masks are the home paths masked, with the reason.
	Masks []Mask
}

// Mask is one home path a plan masks, with the reason.
type Mask struct {
	Path string // relative to $HOME
	Why  string
}

// State is one `state:` entry: Path (clean, relative to $HOME) where the
// agent sees it, a directory or a file (Dir); Real, the user's own path it
// binds instead of the per-profile copy; Seed, the user's file the copy
// is refreshed from (both relative to $HOME, as written).
type State struct {
	Path       string
	Dir        bool
	Real, Seed string
}
