package receipts

import "time"

// Mode says whether a session records its reads: off, on (a session that
// cannot is reported), required (it is refused).
type Mode string

// The receipt modes.
const (
	Off      Mode = "off"
	On       Mode = "on"
	Required Mode = "required"
)

// VaultRead is one vault file the agent opened: its path relative to the
// vault and when the recorder first saw it opened.
type VaultRead struct {
	Path  string    `json:"path"`
	First time.Time `json:"first"`
}

// VaultReads is what the recorder saw of a session: every vault file
// opened (once each, in the order first seen), the number of files under
// .git opened (Git's objects: which notes they hold is not known), and what it
// could not see or attribute. Unavailable is set, and nothing else, when
// the session's reads were not recorded at all.
type VaultReads struct {
	Reads    []VaultRead
	GitOpens int
	// Unattributed counts opens the recorder could not name (a folder
	// removed before it resolved its handle, a handle outside the vault).
	Unattributed int
	// Lost: the kernel's event queue overflowed; some opens are missing.
	Lost        bool
	Unavailable string
	// Attribution says whose opens Reads holds: Sandbox (mount marks on
	// the sandbox's own vault mounts, a root caller) or AnyProcess (inode
	// marks on the vault's folders, an unprivileged caller: every open of
	// them on the host while the session ran, the agent's among them).
	Attribution string
}

// The Attribution values.
const (
	Sandbox    = "sandbox"
	AnyProcess = "any-process"
)

// Answers fedmem-run gives the init on the receipts socket (the first
// byte of its reply; a refusal's text follows Refused).
const (
	Marked   = 'y' // every vault mount is marked: the agent's opens are recorded
	Unmarked = 'n' // not recorded (the report says why); go on
	Refused  = 'f' // receipts are required and could not be made: fail
)

// MaxMounts bounds the descriptors in one SCM_RIGHTS message (the
// kernel's SCM_MAX_FD is 253).
const MaxMounts = 250
