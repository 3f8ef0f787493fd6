package sandbox

import (
	"context"
	"errors"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/sandbox/receipts"
)

// Exit codes of fedmem-run besides the agent's own.
const (
	ExitFedmemError   = 125
	ExitCannotExecute = 126
	ExitNotFound      = 127
)

// Spec is one sandboxed run.
type Spec struct {
	Plan *mounts.Plan
	// Argv is the command; Argv[0] is looked up in PATH of Env inside the sandbox.
	Argv []string
	Env  []string
	// Dir is the working directory inside the sandbox.
	Dir string
	// UID and GID the agent runs as (host ids; the user namespace maps them
	// one to one). Under a root caller they are never 0: a Spec with UID 0
	// gets the agent ChooseAgent picks (SUDO_UID, fedmem-agent, 65533).
	UID, GID int
	// IdentitySource says what chose UID ("run_as", "agent-user", "sudo",
	// ChooseAgent's sources); reported in Layers.Identity.
	IdentitySource string
	// OwnerUID and OwnerGID own the writable binds on disk (the caller; the
	// invoking user under sudo). With OwnerSet and a root caller, a
	// writable bind owned by OwnerUID is idmapped OwnerUID→UID, so what
	// the agent creates stays the owner's. Unset: the caller's ids.
	OwnerUID, OwnerGID int
	OwnerSet           bool
	// AcceptRisks are the profile's accept_risks (mounts.RiskKeepGroups).
	AcceptRisks []string
	// TTY gives the agent a private pseudo-terminal relayed to Stdin/Stdout.
	TTY             bool
	Stdin           *os.File
	Stdout, Stderr  *os.File
	Hostname        string
	RequireLandlock bool
	RequireSeccomp  bool
	// FSDenials reports refused filesystem writes (the write section of
	// the notifying seccomp filter: every write call makes a round trip
	// to pid 1). Off: only refused system calls are reported, and write
	// calls never leave the kernel (docs/events.md, "Denials").
	FSDenials bool
	Limits    Limits
	// InboxDir is the session folder the launcher made (Plan.Inbox),
	// opened without following a link. The backends bind this directory,
	// never whatever the name points to later: the owner of 90-inbox/
	// (the gate user, or a host account with the agent's uid) may rename
	// the folder away and put a link or another folder in its place
	// before the bind. The init refuses a root whose inbox mount is not
	// this inode (InitConfig.InboxDev, InboxIno). Nil: the backend opens
	// Plan.Inbox itself when it starts.
	InboxDir *os.File
	// Receipts says whether the backend records which vault files the
	// agent opens (VaultReads in the Result): off, on (when it cannot,
	// VaultReads.Unavailable says why and the agent runs), required
	// (when it cannot, the session is refused at stage receipts).
	Receipts ReceiptMode
	// Event, when set, is called as the run goes: "started" (with the
	// active layers) once the agent runs, "stopped" when it is suspended,
	// "limit" for each limit hit. It must not block.
	Event func(name string, fields map[string]any)
	// Proxy serves the sandbox's outgoing connections with network:
	// allowlist.
	Proxy interface{ Serve(net.Conn) }
	// Signals, when set, is the caller's channel registered with
	// signal.Notify for ForwardedSignals (HoldSignals); the backend
	// forwards what arrives on it to the sandbox and leaves it registered
	// when it returns. The caller stops it once its own work is done (the
	// launcher: after the report is written), so a Ctrl-C arriving just
	// as the agent ends cannot kill the caller by the default action
	// before then. Unset: the backend registers its own for the run.
	Signals <-chan os.Signal
}

// ForwardedSignals are the signals fedmem-run forwards to the sandbox's
// pid 1, which forwards them to the agent.
var ForwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// HoldSignals registers a channel for ForwardedSignals: from now until
// stop is called, none of them ends this process by its default action.
// Pass the channel as Spec.Signals.
func HoldSignals() (sigs chan os.Signal, stop func()) {
	sigs = make(chan os.Signal, 8)
	signal.Notify(sigs, ForwardedSignals...)
	return sigs, func() { signal.Stop(sigs) }
}

// forwarded is the run's signal channel: the caller's (Spec.Signals),
// left registered, else one held for the run alone.
func forwarded(spec *Spec) (<-chan os.Signal, func()) {
	if spec.Signals != nil {
		return spec.Signals, func() {}
	}
	sigs, stop := HoldSignals()
	return sigs, stop
}

// Limits are the session's hard limits; zero means none.
type Limits struct {
	WallTime time.Duration
	Pids     int
	Memory   int64
	// CPU is cores of CPU time (cgroup cpu.max); 0: none.
	CPU       float64
	FileSize  int64
	OpenFiles int
	// InboxBytes: the session is killed once its inbox holds more.
	InboxBytes int64
}

// Layers reports what protected the agent.
type Layers struct {
	Backend    string   `json:"backend"`
	Namespaces []string `json:"namespaces"`
	NoNewPrivs bool     `json:"no_new_privs"`
	Caps       string   `json:"capabilities"`
	Seccomp    bool     `json:"seccomp"`
	// FSDenials: refused filesystem writes are reported ("denied" events
	// of kind filesystem); false when the run did not ask for it
	// (--fs-denials) or the kernel has no seccomp listener.
	FSDenials   bool     `json:"filesystem_denials"`
	Landlock    int      `json:"landlock_abi"`
	LandlockFS  bool     `json:"landlock_fs"`
	LandlockNet bool     `json:"landlock_net"`
	Scoped      []string `json:"landlock_scopes,omitempty"`
	Verified    bool     `json:"mounts_verified"`
	// Receipts: fedmem-run recorded the agent's opens of vault files
	// from outside the sandbox (fanotify on the sandbox's vault mounts;
	// docs/threat-model.md, "Read receipts").
	Receipts bool `json:"vault_receipts"`
	// Limits says how each limit is enforced, e.g. "pids=512 (cgroup v2 pids.max, fedmem.slice)".
	Limits []string `json:"limits,omitempty"`
	PTY    bool     `json:"pty"`
	// Identity is who the agent is on the host (guarantee 5).
	Identity *Identity `json:"identity,omitempty"`
	// EnforcedBy says which piece of the backend enforces what (the
	// backend's own words, as --explain prints them).
	EnforcedBy []string `json:"enforced_by,omitempty"`
	Notes      []string `json:"notes,omitempty"`
}

// Result is the outcome of Run.
type Result struct {
	// ExitCode is what fedmem-run exits with: the agent's code, 128+n when a
	// signal n killed it, or 125/126/127.
	ExitCode int `json:"exit_code"`
	// Signal is the signal that killed the agent, 0 if it exited.
	Signal int    `json:"signal,omitempty"`
	Layers Layers `json:"layers"`
	// LimitsHit names the limits the kernel or fedmem-run enforced:
	// wall_time, pids, memory, file_size.
	LimitsHit []string `json:"limits_hit,omitempty"`
	// CoversLost says how the sandbox's mount table no longer matched the
	// plan when the agent ended (a protected name's cover detached from
	// outside during the session); "" when it matched. The after-session
	// sweep then checks the protected names too.
	CoversLost string `json:"covers_lost,omitempty"`
	// Proposal, with a proposed workdir (profile `workdir: propose`), is
	// the root of the tmpfs that holds the overlay's upper layer (upper/)
	// after the sandbox is gone; the caller turns it into a proposal and
	// closes it. nil otherwise, or when the sandbox never mounted it.
	Proposal *os.File `json:"-"`
	// VaultReads are the vault files the agent opened, recorded from
	// outside the sandbox (Spec.Receipts); nil when not asked for.
	VaultReads *VaultReads `json:"-"`
}

// ReceiptMode is Spec.Receipts (package receipts).
type ReceiptMode = receipts.Mode

// The receipt modes.
const (
	ReceiptsOff      = receipts.Off
	ReceiptsOn       = receipts.On
	ReceiptsRequired = receipts.Required
)

// VaultRead and VaultReads are the recorder's (package receipts).
type (
	VaultRead  = receipts.VaultRead
	VaultReads = receipts.VaultReads
)

// The recorder's Attribution values (receipts.Sandbox, receipts.AnyProcess).
const (
	AttributionSandbox    = receipts.Sandbox
	AttributionAnyProcess = receipts.AnyProcess
)

// ExitTimedOut is fedmem-run's exit code when the wall-time limit ended
// the session, as timeout(1) does.
const ExitTimedOut = 124

// Error is a fedmem failure (not the agent's): it carries the exit code and
// the stage that failed.
type Error struct {
	Code  int          `json:"code"`
	Stage mounts.Stage `json:"stage"`
	Msg   string       `json:"msg"`
}

func (e *Error) Error() string { return string(e.Stage) + ": " + e.Msg }

// ExitCodeOf maps an error from Run to fedmem-run's exit code.
func ExitCodeOf(err error) int {
	var se *Error
	if errors.As(err, &se) && se.Code != 0 {
		return se.Code
	}
	return ExitFedmemError
}

// Backend realises a Plan and runs the command in it.
type Backend interface {
	Name() string
	Run(ctx context.Context, spec *Spec) (*Result, error)
}
