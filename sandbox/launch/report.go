package launch

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/sandbox"
	"github.com/fedmem/fedmem/sandbox/propose"
	"github.com/fedmem/fedmem/vault"
)

// ReportSchemaVersion is the report's schema_version (docs/report.md). It
// changes only if a field changes meaning or goes away; fields are added
// without a new version.
const ReportSchemaVersion = 1

// Report is the JSON session report (--report), and what fedmem-run stores
// as the session record in the vault: vault.SessionRecord's fields (the
// ones the gate reads) and the rest. Fields are only ever added. The report
// is written on every exit path once --report is parsed, failures before a
// session exists included (then session is "" and error says why:
// WriteEarlyReport).
type Report struct {
	SchemaVersion int `json:"schema_version"`
	vault.SessionRecord
	Vault          string      `json:"vault"`
	Inbox          string      `json:"inbox"`
	Workdir        string      `json:"workdir"`
	DurationMS     int64       `json:"duration_ms"`
	VaultHeadStart string      `json:"vault_head_start"`
	VaultHeadEnd   string      `json:"vault_head_end"`
	InboxFiles     []InboxFile `json:"inbox_files"`
	InboxTruncated bool        `json:"inbox_truncated,omitempty"`
	// InboxRemoved: the agent never started, so fedmem-run removed the
	// empty session folder it had made (Inbox no longer exists).
	InboxRemoved bool     `json:"inbox_removed,omitempty"`
	ExitCode     int      `json:"exit_code"`
	LimitsHit    []string `json:"limits_hit,omitempty"`
	// CoversLost: the sandbox's mount table no longer matched the plan
	// when the agent ended (a protected name's cover detached from
	// outside); the after-session sweep then checked the protected names.
	CoversLost string          `json:"covers_lost,omitempty"`
	Signal     int             `json:"signal,omitempty"`
	Error      *sandbox.Error  `json:"error,omitempty"`
	Layers     *sandbox.Layers `json:"layers"`
	Network    string          `json:"network"`
	// Identity is who the agent was on the host (layers.identity).
	Identity *sandbox.Identity `json:"identity,omitempty"`
	Warnings []string          `json:"warnings,omitempty"`
	// NetAllowed are the hosts `fedmem net allow` added while the agent
	// ran (net-allow events).
	NetAllowed []string `json:"net_allowed,omitempty"`
	// Denials counts what the sandbox refused and reported ("denied"
	// events: docs/events.md).
	Denials *Denials `json:"denials,omitempty"`
	// Proposal is what became of a proposed workdir's writes (profile
	// `workdir: propose`): the branch or patch, what it holds, what is
	// flagged, the command that applies it.
	Proposal *propose.Proposal `json:"proposal,omitempty"`
}

// InboxFile is one entry the agent left in its inbox.
type InboxFile struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	Type string `json:"type"`
}

// Error stages of failures before the sandbox is built (error.stage in the
// report; the sandbox's own stages are sandbox.Error's: setup, init, …).
// The values are mounts.Stage's.
const (
	StageFlags   = mounts.StageFlags   // the command line
	StageProfile = mounts.StageProfile // finding, parsing or checking the profile
	StageResolve = mounts.StageResolve // vault, workdir, identity, the mount plan
	StageOutput  = mounts.StageOutput  // --events could not be opened
	StageState   = mounts.StageState   // the gate's state dir, the profile's state
	StageInbox   = mounts.StageInbox   // the session inbox cannot be reached or made
	StageBackend = mounts.StageBackend // the backend is unknown or unavailable
	StageLaunch  = mounts.StageLaunch  // any other failure before the agent ran
)

// stageError tags an error with its report stage; its text is the
// error's own.
type stageError struct {
	stage mounts.Stage
	err   error
}

func (e *stageError) Error() string { return e.err.Error() }
func (e *stageError) Unwrap() error { return e.err }

// staged tags err with stage (nil stays nil).
func staged(stage mounts.Stage, err error) error {
	if err == nil {
		return nil
	}
	return &stageError{stage, err}
}

// StageOf is the report stage of err: its tag, the sandbox's stage, or
// "profile" for a profile that could not be loaded or checked; else def.
func StageOf(err error, def mounts.Stage) mounts.Stage {
	var st *stageError
	var se *sandbox.Error
	var le *profiles.LoadError
	var ce *profiles.CheckError
	switch {
	case errors.As(err, &st):
		return st.stage
	case errors.As(err, &se) && se.Stage != "":
		return se.Stage
	case errors.As(err, &le), errors.As(err, &ce):
		return StageProfile
	}
	return def
}

// WriteEarlyReport writes the report of a run refused before its session
// existed (bad flags, unknown profile, YAML error, …): schema_version,
// exit_code and error {code, stage, msg}, with what the command line said
// (profile, command, vault, workdir). The file is opened as for a session
// (openOutput: never through a link); with no plan yet, the paths an agent
// of any earlier session may have written — the workdir, the caller's
// home, the vault — are the guarded ones.
func WriteEarlyReport(o *Options, code int, stage mounts.Stage, cause error) error {
	if o.Report == "" {
		return nil
	}
	rep := &Report{SchemaVersion: ReportSchemaVersion, Vault: o.Vault, Workdir: o.Workdir, ExitCode: code,
		Error: &sandbox.Error{Code: code, Stage: stage, Msg: cause.Error()}}
	rep.Profile, rep.Command = o.Profile, o.Argv
	wd := o.Workdir
	if wd == "" {
		wd, _ = os.Getwd()
	}
	home, _ := os.UserHomeDir()
	var guard []string
	for _, p := range []string{wd, home, o.Vault} {
		if p == "" {
			continue
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		if a, err := filepath.Abs(p); err == nil {
			guard = append(guard, a)
		}
	}
	f, err := openReport(o.Report, guard)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return f.commit(append(b, '\n'))
}
