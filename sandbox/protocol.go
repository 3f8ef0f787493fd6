package sandbox

import "github.com/fedmem/fedmem/mounts"

// InitArg0 is argv[0] of the re-executed fedmem-run that becomes the
// sandbox's pid 1. fedmem-run's main checks it before parsing any flag.
const InitArg0 = "fedmem-sandbox-init"

// File descriptors the parent hands to the init, besides stdio.
const (
	initConfigFd = 3 // JSON initConfig, read once
	initSyncFd   = 4 // JSON lines of initMessage, written by the init
)

// ProxyPort is where, inside a sandbox with network: allowlist, the agent
// finds the allowlist proxy (HTTP_PROXY=http://127.0.0.1:3128).
const ProxyPort = 3128

// initConfig travels from the parent to the init over initConfigFd — never
// through argv or the environment, which the agent could read.
type initConfig struct {
	Plan            *mounts.Plan `json:"plan"`
	Argv            []string     `json:"argv"`
	Env             []string     `json:"env"`
	Dir             string       `json:"dir"`
	TTY             bool         `json:"tty"`
	Hostname        string       `json:"hostname"`
	RequireLandlock bool         `json:"require_landlock"`
	RequireSeccomp  bool         `json:"require_seccomp"`
	Rlimits         []rlimit     `json:"rlimits,omitempty"`
	// ProxyFd, when not 0, is a unix socket to hand the proxy's
	// connections to; the init listens on 127.0.0.1:ProxyPort.
	ProxyFd   int `json:"proxy_fd,omitempty"`
	ProxyPort int `json:"proxy_port,omitempty"`
}

// rlimit is one resource limit the init sets before forking the agent.
type rlimit struct {
	Resource int    `json:"resource"`
	Max      uint64 `json:"max"`
}

// initMessage is one line the init writes on initSyncFd.
type initMessage struct {
	Type   string  `json:"type"` // "started", "error", "stopped", "exit"
	Layers *Layers `json:"layers,omitempty"`
	Err    *Error  `json:"error,omitempty"`
	Code   int     `json:"code,omitempty"`
	Signal int     `json:"signal,omitempty"`
}
