package sandbox

import "github.com/fedmem/fedmem/mounts"

// InitArg0 is argv[0] of the re-executed fedmem-run that becomes the
// sandbox's pid 1. fedmem-run's main checks it before parsing any flag.
const InitArg0 = "fedmem-sandbox-init"

// File descriptors the parent hands to the init, besides stdio.
const (
	InitConfigFd = 3 // JSON InitConfig, read once
	InitSyncFd   = 4 // JSON lines of InitMessage, written by the init
)

// ProxyPort is where, inside a sandbox with network: allowlist, the agent
// finds the allowlist proxy (HTTP_PROXY=http://127.0.0.1:3128).
const ProxyPort = 3128

// InitConfig travels from the parent to the init over InitConfigFd — never
// through argv or the environment, which the agent could read.
type InitConfig struct {
	Plan            *mounts.Plan `json:"plan"`
	Argv            []string     `json:"argv"`
	Env             []string     `json:"env"`
	Dir             string       `json:"dir"`
	TTY             bool         `json:"tty"`
	Hostname        string       `json:"hostname"`
	RequireLandlock bool         `json:"require_landlock"`
	RequireSeccomp  bool         `json:"require_seccomp"`
	// FSDenials: the notifying filter has its write section (Spec.FSDenials).
	FSDenials bool     `json:"fs_denials,omitempty"`
	Rlimits   []Rlimit `json:"rlimits,omitempty"`
	// ProxyFd, when not 0, is a unix socket to hand the proxy's
	// connections to; the init listens on 127.0.0.1:ProxyPort.
	ProxyFd   int `json:"proxy_fd,omitempty"`
	ProxyPort int `json:"proxy_port,omitempty"`
	// ProposeFd, when not 0, is a unix socket the init hands a proposed
	// workdir's upper tmpfs to fedmem-run over (mountProposal).
	ProposeFd int `json:"propose_fd,omitempty"`
	// ReceiptsFd, when not 0, is a unix socket the init hands fedmem-run
	// an O_PATH descriptor of every mount of the vault over, once the root
	// is built and before the agent exists; it waits for the answer
	// (receiptsMarked, receiptsUnmarked, or a refusal) before going on
	// (pid1/receipts_linux.go, receipts_linux.go).
	ReceiptsFd int `json:"receipts_fd,omitempty"`
	// AgentUID and AgentGID, when AgentSwitch, are what the agent becomes
	// at fork (the init keeps another uid: a root caller's agent can
	// signal, prlimit, renice or trace nothing of it). Groups are
	// AgentGroups only.
	AgentSwitch bool `json:"agent_switch,omitempty"`
	// DropGroups: the init empties its supplementary groups first thing
	// (an unprivileged caller whose gid map newgidmap wrote, which leaves
	// setgroups allowed).
	DropGroups bool `json:"drop_groups,omitempty"`
	AgentUID   int  `json:"agent_uid,omitempty"`
	AgentGID   int  `json:"agent_gid,omitempty"`
	// AgentGroups are the agent's supplementary groups at fork: the
	// vault's agent group when its user is a member (KeptGroups), else
	// none.
	AgentGroups []int `json:"agent_groups,omitempty"`
	// Idmapped maps a plan mount's index to the fd of a detached,
	// idmapped clone of its source that the parent (host root) made.
	Idmapped map[int]int `json:"idmapped,omitempty"`
	// InboxDev and InboxIno name the session folder the launcher made
	// (Spec.InboxDir): the init refuses a root whose inbox mount is not
	// this directory (verifyInbox), whatever the backend bound.
	InboxDev uint64 `json:"inbox_dev,omitempty"`
	InboxIno uint64 `json:"inbox_ino,omitempty"`
}

// UsernsHoldArg, as argv[1] of the init, makes it a placeholder that only
// holds a user namespace (for idmapped mounts) until its stdin closes.
const UsernsHoldArg = "userns-hold"

// Rlimit is one resource limit the init sets before forking the agent.
type Rlimit struct {
	Resource int    `json:"resource"`
	Max      uint64 `json:"max"`
}

// MsgType names an InitMessage: the whole vocabulary of the init's sync
// pipe, typed so that a misspelt message is a compile error (runc's
// libcontainer/sync.go does the same).
type MsgType string

const (
	MsgStarted MsgType = "started" // every layer is in place; Layers set
	MsgError   MsgType = "error"   // the init failed; Err set, nothing ran
	MsgStopped MsgType = "stopped" // the agent was suspended; Signal set
	MsgExit    MsgType = "exit"    // the agent ended; Code (and Signal) set
)

// InitMessage is one line the init writes on InitSyncFd.
type InitMessage struct {
	Type   MsgType `json:"type"`
	Layers *Layers `json:"layers,omitempty"`
	Err    *Error  `json:"error,omitempty"`
	Code   int     `json:"code,omitempty"`
	Signal int     `json:"signal,omitempty"`
	Denial *Denied `json:"denial,omitempty"` // MsgDenied (denials.go)
	// CoversLost (MsgExit): the live mount table no longer matched the
	// plan when the agent ended — a cover detached from outside the
	// sandbox during the session (reverify); empty when it still matched.
	CoversLost string `json:"covers_lost,omitempty"`
	// Phases: CLOCK_MONOTONIC ns at the init's start ("init") and at the end
	// of its root build, verification, layers and the agent's exec
	// (MsgStarted; phases_linux.go).
	Phases map[string]int64 `json:"phases,omitempty"`
}

// OCIFdSocketArg, after OCIInitArg, says the runtime cannot hand
// descriptors to the container's process (containerd gives a task only its
// stdio): the init receives them first, over the unix socket the helper
// listens on in OCIFdDir, and puts them at 3, 4… where the protocol
// expects them.
const OCIFdSocketArg = "fds-socket"

// OCIFdDir is where the helper's descriptor socket appears inside (bound
// read-only: connect needs no write access to the mount). The helper
// unlinks the socket as soon as the init has its descriptors, before the
// agent exists.
const OCIFdDir = "/dev/.fedmem/fds"

// OCIFdSocket is the socket's name in OCIFdDir (and in the bundle's fds
// directory the helper binds there).
const OCIFdSocket = "s"
