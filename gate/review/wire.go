package review

import (
	"strings"
	"time"

	"github.com/fedmem/fedmem/gate/audit"
	"github.com/fedmem/fedmem/gate/record"
	"github.com/fedmem/fedmem/gate/sign"
	"github.com/fedmem/fedmem/gate/sweep"
)

// The review protocol: one JSON request per connection on the gate's
// review socket, one response.

// SocketName is the review socket's name in the state directory.
const SocketName = "review.sock"

// Request is one request on the review socket (one per connection).
type Request struct {
	Op     string `json:"op"` // list | show | select | approve | reject | reverify
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Supersede and Title: a reviewer's choice for a draft that
	// contradicts a note in force (op approve; approvechoice.go).
	Supersede bool   `json:"supersede,omitempty"`
	Title     string `json:"title,omitempty"`
	// IDs (approve, reject: a batch of full ids; select: ids or unique
	// prefixes) and Filter (select) — reviewbatch.go.
	IDs    []string `json:"ids,omitempty"`
	Filter *Filter  `json:"filter,omitempty"`
	// Change and Reviewer (op reviewers): add or remove a reviewer in the
	// policy by a gate commit (policyedit.go).
	Change   string `json:"change,omitempty"`
	Reviewer string `json:"reviewer,omitempty"`
}

// Response answers a Request. Fields are only ever added.
type Response struct {
	OK        bool                  `json:"ok"`
	Error     string                `json:"error,omitempty"`
	Reviewer  string                `json:"reviewer,omitempty"`
	Decisions []record.Decision     `json:"decisions,omitempty"`
	Decision  *record.Decision      `json:"decision,omitempty"`
	Draft     string                `json:"draft,omitempty"`
	Reverify  *sweep.ReverifyResult `json:"reverify,omitempty"` // op reverify (gate/sweep)
	// Batch: one item per id of a batch approve or reject.
	Batch []BatchItem `json:"batch,omitempty"`
	// Context: what a reviewer decides a held draft with (op show).
	Context *ShowContext `json:"context,omitempty"`
	// Commit and Reviewers answer op reviewers.
	Commit    string   `json:"commit,omitempty"`
	Reviewers []string `json:"reviewers,omitempty"`
	// Audit answers op audit-verify (reviewers may not read the gate's
	// state directory; the gate verifies its log for them).
	Audit *AuditResult `json:"audit,omitempty"`
	// Short: the unique short id of each listed decision (op list, select).
	Short map[string]string `json:"short,omitempty"`
}

// AuditResult is the gate's own check of its audit log against the vault's
// history, for a reviewer who cannot read the state directory.
type AuditResult struct {
	Entries  int64           `json:"entries"`
	Problems []audit.Problem `json:"problems,omitempty"`
	History  *sign.History   `json:"history,omitempty"`
	Anchors  int             `json:"anchors"`
	Error    string          `json:"error,omitempty"`
}

// MaxBatch bounds the drafts one batch request may decide.
const MaxBatch = 10000

// Filter narrows a batch to held drafts of one session, profile,
// type or risk. Empty fields match everything; All must be set to select
// every held draft with no other criterion, so an empty filter never
// decides the whole queue by accident.
type Filter struct {
	Session string `json:"session,omitempty"`
	Profile string `json:"profile,omitempty"`
	Type    string `json:"type,omitempty"`
	Risk    string `json:"risk,omitempty"`
	All     bool   `json:"all,omitempty"`
}

// Criteria reports whether the filter names any criterion (All included).
func (f Filter) Criteria() bool {
	return f.Session != "" || f.Profile != "" || f.Type != "" || f.Risk != "" || f.All
}

// Match reports whether a held draft passes the filter. The profile is the
// one the gate proved for the session (Origin), never the draft's claim: an
// unverified session has no profile and matches no --profile filter.
func (f Filter) Match(d record.Decision) bool {
	if f.Session != "" && d.Session != f.Session {
		return false
	}
	if f.Profile != "" && OriginProfile(d.Origin) != f.Profile {
		return false
	}
	if f.Type != "" && !strings.EqualFold(d.Type, f.Type) {
		return false
	}
	if f.Risk != "" && !strings.EqualFold(d.Risk, f.Risk) {
		return false
	}
	return true
}

// String names the filter's criteria for messages.
func (f Filter) String() string {
	var p []string
	for _, kv := range [][2]string{{"session", f.Session}, {"profile", f.Profile}, {"type", f.Type}, {"risk", f.Risk}} {
		if kv[1] != "" {
			p = append(p, "--"+kv[0]+" "+kv[1])
		}
	}
	if f.All {
		p = append(p, "--all")
	}
	return strings.Join(p, " ")
}

// OriginProfile is the profile an origin names (verified:P or trusted:P),
// "" for an unverified or unknown origin.
func OriginProfile(origin string) string {
	for _, pre := range []string{"verified:", "trusted:"} {
		if p, ok := strings.CutPrefix(origin, pre); ok {
			return p
		}
	}
	return ""
}

// BatchItem is the outcome for one draft of a batch: its decision, or why
// it was not decided.
type BatchItem struct {
	ID       string           `json:"id"`
	Decision *record.Decision `json:"decision,omitempty"`
	Error    string           `json:"error,omitempty"`
}

// BatchFailed counts the items of a batch that were not decided.
func BatchFailed(items []BatchItem) int {
	n := 0
	for _, it := range items {
		if it.Error != "" {
			n++
		}
	}
	return n
}

// ShowContext accompanies a held draft in a show response.
type ShowContext struct {
	Provenance Provenance `json:"provenance"`
	// Target is where approving would write the note (the path the
	// promotion computes from the policy's folder and the title).
	Target string `json:"target,omitempty"`
	// Rendered is the note as an approval would commit it (gate fields
	// included; verified names the approving reviewer as human:<you>).
	Rendered string        `json:"rendered,omitempty"`
	Related  []RelatedNote `json:"related,omitempty"`
	Sources  []SourceState `json:"sources,omitempty"`
	// Previous is the earlier version of this draft (same session and
	// name) a reviewer saw, held or rejected, with the diff to this one
	// (reviewversion.go).
	Previous *PreviousVersion `json:"previous,omitempty"`
	// Verifiers: the approved verifiers' outcomes recorded when the gate
	// decided the draft, and the policy's verifiers that did not run.
	Verifiers []VerifierOutcome `json:"verifiers,omitempty"`
	// Problem says why part of the context could not be computed (a draft
	// no longer valid, say); the rest is still shown.
	Problem string `json:"problem,omitempty"`
}

// Provenance is the session a draft came from, as the gate knows it.
type Provenance struct {
	Session     string   `json:"session"`
	Profile     string   `json:"profile,omitempty"`
	ProfileHash string   `json:"profile_hash,omitempty"`
	UID         int      `json:"uid"`
	User        string   `json:"user,omitempty"`
	Command     []string `json:"command,omitempty"`
	Started     string   `json:"started,omitempty"`
	Ended       string   `json:"ended,omitempty"`
	Workdir     string   `json:"workdir,omitempty"`
	VaultHead   string   `json:"vault_head_start,omitempty"`
	// Origin is the decision's origin word; Meaning says what it means for
	// this draft, Why what failed when the origin is not proven.
	Origin  string `json:"origin"`
	Meaning string `json:"meaning"`
	Why     string `json:"why,omitempty"`
}

// RelatedNote is a note in force a draft would change or stand beside.
type RelatedNote struct {
	Path string `json:"path"`
	// Relation: "same path" (approving replaces its slot), "supersedes"
	// (the draft names it), "contradicts" (same title or subject in force).
	Relation string `json:"relation"`
	Status   string `json:"status,omitempty"`
	// Diff is a unified diff from the note at HEAD to what approving would
	// commit.
	Diff string `json:"diff,omitempty"`
}

// SourceState is one source a draft cites, looked up at HEAD.
type SourceState struct {
	Path    string `json:"path"`
	Blob    string `json:"blob,omitempty"` // its fingerprint at HEAD
	Status  string `json:"status,omitempty"`
	InForce bool   `json:"in_force"`
	Problem string `json:"problem,omitempty"`
}

// OriginMeaning explains an origin word to a reviewer.
func OriginMeaning(origin string) string {
	switch {
	case origin == "" || origin == "unknown":
		return "recorded before the gate kept origins: nothing about the session is proven"
	case origin == "unverified":
		return "the gate could not prove that fedmem-run wrote this session's record: the profile, user and command below are what the record says, not facts; the draft could come from anyone who can write the inbox"
	case strings.HasPrefix(origin, "trusted:"):
		return "fedmem-run wrote the session record (proven by its owner and mode) and the policy's auto_promote trusts profile " + OriginProfile(origin) + ": the draft was held only for the reasons below"
	case strings.HasPrefix(origin, "verified:"):
		return "fedmem-run wrote the session record (proven by its owner and mode) under profile " + OriginProfile(origin) + ", which the policy's auto_promote does not trust: every draft of it waits for a human"
	}
	return "unknown origin word"
}

// PreviousVersion is the earlier draft a held draft replaces.
type PreviousVersion struct {
	ID        string    `json:"id"`
	State     string    `json:"state"`
	Reviewer  string    `json:"reviewer,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	FirstSeen time.Time `json:"first_seen"`
	// Diff is a unified diff from the earlier draft's bytes to this one's.
	Diff string `json:"diff"`
}

// VerifierOutcome is what an approved verifier said about the draft when the
// gate decided it (from the decision's reasons), or that it did not run.
type VerifierOutcome struct {
	Name    string `json:"name"`
	Outcome string `json:"outcome"` // passed | failed | timeout | not run
	Detail  string `json:"detail,omitempty"`
}

// ApproveOptions is a reviewer's decision about a contradicting draft.
type ApproveOptions struct {
	// Supersede deprecates the notes the draft contradicts, in the
	// promotion's commit.
	Supersede bool `json:"supersede,omitempty"`
	// Title promotes the draft under this title instead of its own.
	Title string `json:"title,omitempty"`
}
