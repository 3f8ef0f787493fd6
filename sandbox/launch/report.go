package launch

import (
	"github.com/fedmem/fedmem/sandbox"
	"github.com/fedmem/fedmem/vault"
)

// Report is the JSON session report (--report), and what fedmem-run stores
// as the session record in the vault: vault.SessionRecord's fields (the
// ones the gate reads) and the rest. Fields are only ever added.
type Report struct {
	vault.SessionRecord
	Vault          string          `json:"vault"`
	Inbox          string          `json:"inbox"`
	Workdir        string          `json:"workdir"`
	DurationMS     int64           `json:"duration_ms"`
	VaultHeadStart string          `json:"vault_head_start"`
	VaultHeadEnd   string          `json:"vault_head_end"`
	InboxFiles     []InboxFile     `json:"inbox_files"`
	InboxTruncated bool            `json:"inbox_truncated,omitempty"`
	ExitCode       int             `json:"exit_code"`
	LimitsHit      []string        `json:"limits_hit,omitempty"`
	Signal         int             `json:"signal,omitempty"`
	Error          *sandbox.Error  `json:"error,omitempty"`
	Layers         *sandbox.Layers `json:"layers"`
	Network        string          `json:"network"`
	// Identity is who the agent was on the host (layers.identity).
	Identity *sandbox.Identity `json:"identity,omitempty"`
	Warnings []string          `json:"warnings,omitempty"`
	// Denials counts what the sandbox refused and reported ("denied"
	// events: docs/events.md).
	Denials *Denials `json:"denials,omitempty"`
}

// InboxFile is one entry the agent left in its inbox.
type InboxFile struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	Type string `json:"type"`
}
