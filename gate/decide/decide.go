package decide

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/gate/decide/shape"
	"github.com/fedmem/fedmem/gate/origin"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/vault/note"
)

// GateActor is the OKF actor the gate records when it verifies a note.
const GateActor = "process:fedmem-gate"

// reviewFolders always need a human: the agent contract and decisions.
var reviewFolders = []string{"00-global", "70-decisions"}

// The gate is a typed pipeline: a claimed draft (bytes read once) is
// validated, judged into a verdict (judge), promoted by the one promotion
// path both auto-promotion and reviewer approval use (promoteDraft), and its
// decision is recorded once with a receipt (finish / recordReview).

// Input is everything a verdict may depend on. Nothing in it comes from
// the draft's claims about itself: origin is the session record fedmem-run
// wrote (checked by originOf), rates are the gate's own counts.
type Input struct {
	Policy *policy.Policy
	Result validate.Result
	// Head reads a path at the branch HEAD the verdict is taken against (nil:
	// absent).
	Head    func(string) ([]byte, error)
	Session string
	// Name is the draft's file name in the inbox ("" when unknown): the
	// note's path falls back to it when the draft has no title.
	Name   string
	Origin origin.Origin
	// SessionAuto and DayAuto are auto-promotions already recorded for this
	// session and this UTC day.
	SessionAuto, DayAuto int
	// Env gives evidence checks the repository at HEAD, the vault and the
	// clock (evidence.go); nil skips them.
	Env *Env
}

// Verdict is the gate's judgement of one validated draft.
type Verdict struct {
	State   string
	Reasons []note.Finding
	Type    string
	Risk    string
	// Confidence is what the draft claimed (kept for display only).
	Confidence string
	Folder     string
	// Auto is true when the draft promotes without a reviewer: valid, low
	// risk, a trusted origin within its rates, and every evidence check held.
	Auto bool
	// Fields are gate-owned keys an evidence check adds to the promoted note
	// (for example source fingerprints), as key, value node pairs rendered
	// after the gate's own fields.
	Fields []*yaml.Node
	// Verified are `verified` entries evidence adds after the gate's own
	// (an approved verifier that passed: process:<name>).
	Verified []*yaml.Node
	// unknown are the words of a shaped note its lexicon does not know
	// (shape.UnknownWords); the evidence step drops those the vault uses.
	unknown []shape.UnknownWord
}

// evidenceCheck is one step of judgement that runs after the content,
// supersession, risk and origin rules on a draft that is not rejected. It
// may add reasons (a Flag holds the draft for review, an Error rejects it)
// and fields the promoted note carries. Evidence checks (sources resolving
// at HEAD, verifiers, conflicts with notes in force) register here from
// their own files.
type evidenceCheck func(in *Input, v *Verdict) error

// evidenceChecks run in order; see evidenceCheck.
var evidenceChecks []evidenceCheck

func flag(rule string, line int, format string, args ...any) note.Finding {
	return note.Finding{Rule: rule, Line: line, Severity: note.Flag, Message: fmt.Sprintf(format, args...)}
}

// advisoryKeys are OKF fields an author may fill in honestly (in lower
// case): kept as claims, not held for them.
var advisoryKeys = map[string]bool{"confidence": true, "risk": true}

// knownKeys are keys the gate or readers act on (note.AuthorKeys); a
// variant in another letter case (`Supersedes:`) could be taken for the real
// key by a reader, so it is held for review.
var knownKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range note.AuthorKeys {
		m[k] = true
	}
	return m
}()

// suggestKeys are what an unknown key is compared with for a did-you-mean:
// the author keys and the two claims an author may honestly fill in.
var suggestKeys = append(append([]string(nil), note.AuthorKeys...), "confidence", "risk")

// unknownFields flags every top-level key the gate does not know
// (note.IsKnownKey; a letter-case variant of a known key has its own rule,
// key-case). No reader acts on such a key, so a typo (`titel:`) silently
// loses the field and other text (`agent_memo:`) would reach memory unseen;
// the draft waits for a reviewer, told which key was probably meant. It runs
// on rejected drafts too: `tpye:` is why `type` is missing.
func unknownFields(n *note.Note) []note.Finding {
	var out []note.Finding
	for i := 0; i+1 < len(n.Front.Content); i += 2 {
		k := n.Front.Content[i]
		if note.IsKnownKey(k.Value) || note.IsClaimedKey(k.Value) || knownKeys[strings.ToLower(k.Value)] {
			continue
		}
		hint := ""
		if s := profiles.Nearest(k.Value, suggestKeys); s != "" {
			hint = fmt.Sprintf("; did you mean `%s`?", s)
		}
		out = append(out, flag("unknown-field", k.Line, "`%s` is not a field the gate or any reader acts on%s; the draft waits for a reviewer (fields: %s)", clip(k.Value), hint, strings.Join(note.AuthorKeys, ", ")))
	}
	return out
}

// nearType is a did-you-mean for a type the policy does not list: the
// nearest listed type ("" if none is near).
func nearType(pol *policy.Policy, typ string) string {
	types := make([]string, 0, len(pol.Targets))
	for t := range pol.Targets {
		types = append(types, t)
	}
	sort.Strings(types)
	if s := profiles.Nearest(typ, types); s != "" {
		return fmt.Sprintf("; did you mean %q? (a misspelt type is not taken for another)", s)
	}
	return ""
}

// claimedRisk is the highest `risk` the draft declares under any letter
// case; "" if none is a risk level.
func claimedRisk(n *note.Note) (string, int) {
	risk, line := "", 0
	for i := 0; i+1 < len(n.Front.Content); i += 2 {
		k, v := n.Front.Content[i], n.Front.Content[i+1]
		if !strings.EqualFold(k.Value, "risk") || v.Kind != yaml.ScalarNode {
			continue
		}
		r := strings.ToLower(strings.TrimSpace(v.Value))
		if r != note.RiskLow && r != note.RiskMedium && r != note.RiskHigh {
			continue
		}
		if risk == "" {
			risk, line = r, k.Line
		} else if policy.MaxRisk(risk, r) != risk {
			risk, line = r, k.Line
		}
	}
	return risk, line
}

// Judge decides what happens to a validated draft. It is pure apart from
// the HEAD reads and the registered evidence checks.
func Judge(in *Input) (Verdict, error) {
	pol, res := in.Policy, in.Result
	v := Verdict{Reasons: append([]note.Finding(nil), res.Findings...)}
	if res.Note != nil {
		v.Reasons = append(v.Reasons, unknownFields(res.Note)...)
	}
	if res.Note == nil || note.HasErrors(res.Findings) {
		v.State = StateRejected
		validate.Sort(v.Reasons)
		return v, nil
	}
	m := res.Meta
	v.Type, v.Confidence = m.Type, m.Confidence
	folder, listed := pol.Target(m.Type)
	v.Folder = folder
	if !listed {
		v.Reasons = append(v.Reasons, flag("policy-type", m.TypeLine, "type %q has no target folder in the policy; held for review (would land in %s)%s", m.Type, folder, nearType(pol, m.Type)))
	}
	v.Reasons = append(v.Reasons, validate.Links(res, folder)...)
	for i := 0; i+1 < len(res.Note.Front.Content); i += 2 {
		k := res.Note.Front.Content[i]
		switch {
		case note.IsClaimedKey(k.Value) && (advisoryKeys[k.Value]):
			v.Reasons = append(v.Reasons, note.Finding{Rule: "gate-owned", Line: k.Line, Severity: note.Info,
				Message: fmt.Sprintf("`%s` is the draft's claim about itself; it is kept only under `claimed:` and never decides anything", clip(k.Value))})
		case note.IsClaimedKey(k.Value):
			// A draft that claims a status, a verifier, an author or a
			// reviewer lies about its own authority: it is kept as a claim
			// and a human sees it before it becomes memory.
			v.Reasons = append(v.Reasons, flag("claims-authority", k.Line, "`%s` claims what only the gate or a reviewer records; it is kept only under `claimed:` and the draft waits for a reviewer", clip(k.Value)))
		case knownKeys[strings.ToLower(k.Value)] && k.Value != strings.ToLower(k.Value):
			v.Reasons = append(v.Reasons, flag("key-case", k.Line, "`%s` differs from `%s` only in letter case; a reader could take it for the real key", clip(k.Value), strings.ToLower(k.Value)))
		}
	}
	v.Reasons = append(v.Reasons, nestedClaims(res.Note)...) // claims.go
	if note.HasErrors(v.Reasons) {
		v.State = StateRejected
		validate.Sort(v.Reasons)
		return v, nil
	}
	// Supersession: of a note in force needs a human; of anything in a
	// review folder (the agent contract, decisions) too.
	for _, ref := range m.Supersedes {
		target := path.Clean(strings.TrimPrefix(ref.Value, "/"))
		for _, f := range reviewFolders {
			if target == f || strings.HasPrefix(target, f+"/") {
				v.Reasons = append(v.Reasons, flag("review-folder", ref.Line, "`supersedes` names %s in %s/, which only a human may change", target, f))
			}
		}
		b, err := in.Head(target)
		if err != nil {
			return v, err
		}
		if b == nil {
			v.Reasons = append(v.Reasons, flag("supersedes-missing", ref.Line, "`supersedes` names %s, which is not in the vault", target))
			continue
		}
		status := note.StatusStable
		if old, _ := note.Parse(b); old != nil {
			if s, ok := old.Scalar("status"); ok {
				status = s
			}
		}
		if status != note.StatusDeprecated {
			v.Reasons = append(v.Reasons, flag("supersedes-approved", ref.Line, "supersedes %s, which is in force (status %s); a human must approve", target, status))
		}
	}
	v.Reasons = append(v.Reasons, contractReferences(res)...)
	risk := pol.RiskFor(m.Type, folder)
	riskLine := 0
	if r, l := claimedRisk(res.Note); r != "" && policy.MaxRisk(risk, r) != risk {
		risk, riskLine = r, l // a draft can raise its risk, never lower it
	}
	if note.HasFlags(v.Reasons) {
		risk = note.RiskHigh // detector findings
	}
	v.Risk = risk
	for _, f := range reviewFolders {
		if folder == f || strings.HasPrefix(folder, f+"/") {
			v.Reasons = append(v.Reasons, flag("review-folder", m.TypeLine, "notes in %s/ always need a human", f))
		}
	}
	if risk != note.RiskLow {
		v.Reasons = append(v.Reasons, note.Finding{Rule: "risk", Line: riskLine, Severity: note.Flag,
			Message: fmt.Sprintf("risk is %s (policy for type %s in %s, the draft's own `risk`, and the detectors); only low risk promotes without a reviewer", risk, m.Type, folder)})
	}
	v.Reasons = append(v.Reasons, originReasons(in, m.Type)...)
	v.Reasons = append(v.Reasons, shapeReasons(in, m.Type)...) // shapehook.go
	v.unknown = shapeUnknownWords(in, m.Type)                  // shapehook.go
	for _, check := range evidenceChecks {
		if err := check(in, &v); err != nil {
			return v, err
		}
	}
	v.Reasons = append(v.Reasons, shape.LexiconReasons(m.Type, v.unknown)...)
	validate.Sort(v.Reasons)
	switch {
	case note.HasErrors(v.Reasons):
		v.State = StateRejected
	case note.HasFlags(v.Reasons):
		v.State = StatePending
	default:
		v.State, v.Auto = StatePromoted, true
	}
	return v, nil
}

// originReasons holds a draft for review unless the policy trusts the
// session's proven origin for this type and the rates allow another
// auto-promotion. Line 0: these are about the session, not a line.
func originReasons(in *Input, typ string) []note.Finding {
	ap := in.Policy.AutoPromote
	o := in.Origin
	switch {
	case ap == nil:
		return []note.Finding{flag("review-required", 0, "the policy has no `auto_promote`: every draft waits for a reviewer")}
	case !o.Verified:
		return []note.Finding{flag("origin-unverified", 0, "the session record is not proven to be fedmem-run's (%s); drafts of this session never promote on their own", o.Why)}
	case !o.Trusted:
		return []note.Finding{flag("origin-untrusted", 0, "%s", o.Why)}
	case !ap.TypeAllowed(typ):
		return []note.Finding{flag("auto-promote-type", 0, "auto_promote does not cover type %q (types: %s)", typ, strings.Join(ap.Types, ", "))}
	case in.SessionAuto >= ap.MaxPerSession:
		return []note.Finding{flag("auto-promote-rate", 0, "session %s already auto-promoted %d drafts (auto_promote.max_per_session)", in.Session, in.SessionAuto)}
	case in.DayAuto >= ap.MaxPerDay:
		return []note.Finding{flag("auto-promote-rate", 0, "%d drafts were already auto-promoted today, UTC (auto_promote.max_per_day)", in.DayAuto)}
	}
	return nil
}

// contractNames are the files of the agent contract (00-global/).
var contractNames = []string{"00-global", "agent.md", "rules.md", "policy.yaml"}

// contractReferences holds a draft that talks about the agent contract
// (AGENT.md, RULES.md, the policy, anything in 00-global/): a note that says
// a rule is void changes the contract without touching 00-global/, so a
// human reads it first (rule review-folder, like a change in 00-global/).
// Every string of the note counts, decoded and normalised as a reader gets
// it (validate.Mentions: escapes, character references, fullwidth forms),
// except the paths a draft cites as its sources or supersedes, which other
// rules check.
func contractReferences(res validate.Result) []note.Finding {
	c, line := validate.Mentions(res, contractNames, func(p string) bool {
		return p == "sources/-" || p == "sources/-/resource" || p == "supersedes" || p == "supersedes/-"
	})
	if c == "" {
		return nil
	}
	return []note.Finding{flag("review-folder", line, "the draft refers to %s, part of the agent contract in 00-global/; only a human may change what it says", c)}
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func Str(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }

func Keyed(pairs ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(pairs); i += 2 {
		v, ok := pairs[i+1].(*yaml.Node)
		if !ok {
			v = Str(fmt.Sprint(pairs[i+1]))
		}
		m.Content = append(m.Content, Str(pairs[i].(string)), v)
	}
	return m
}

// Provenance is what the gate knows about where a draft came from.
type Provenance struct {
	Session string
	Origin  origin.Origin
}

func (p Provenance) actor() string {
	r := p.Origin.Record
	if r == nil || !p.Origin.Verified || len(r.Command) == 0 {
		return "agent:unknown"
	}
	return "agent:" + CleanSlug(path.Base(r.Command[0]))
}

// Render writes the promoted note: the draft's own keys in order, minus the
// claims (gate-owned and trust-bearing keys in any letter case, moved under
// `claimed:`), then the gate's fields, then evidence fields. Every time
// comes from the gate's first sight of the draft. Provenance comes from the
// session record only when it is proven to be the launcher's; otherwise the
// note says `origin: unverified`.
func Render(n *note.Note, pol *policy.Policy, v Verdict, prov Provenance, firstSeen time.Time, verifiedBy string) ([]byte, error) {
	front := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	claimed := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(n.Front.Content); i += 2 {
		k, val := n.Front.Content[i], n.Front.Content[i+1]
		if note.IsClaimedKey(k.Value) {
			claimed.Content = append(claimed.Content, k, val)
		} else {
			front.Content = append(front.Content, k, val)
		}
	}
	moveNestedClaims(front, nil) // claims.go: provenance below the top level is a claim too
	at := firstSeen.UTC().Format(time.RFC3339)
	gen := Keyed("by", prov.actor(), "at", at, "session", prov.Session)
	if r := prov.Origin.Record; r != nil && prov.Origin.Verified {
		gen.Content = append(gen.Content, Keyed("origin", "verified", "profile", r.Profile, "profile_hash", r.ProfileHash, "uid", strconv.Itoa(r.UID), "started", r.Started).Content...)
	} else {
		gen.Content = append(gen.Content, Keyed("origin", "unverified").Content...)
	}
	ttl := pol.TTLDays(v.Type)
	front.Content = append(front.Content,
		Str("status"), Str(note.StatusStable),
		Str("generated"), gen,
		Str("verified"), &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: append([]*yaml.Node{Keyed("by", verifiedBy, "at", at)}, v.Verified...)},
		Str("stale_after"), Str(firstSeen.UTC().AddDate(0, 0, ttl).Format(time.RFC3339)),
	)
	front.Content = append(front.Content, v.Fields...)
	if len(claimed.Content) > 0 {
		front.Content = append(front.Content, Str("claimed"), claimed)
	}
	return note.Render(front, n.Body)
}

// Decision states.
const (
	StatePromoted = "promoted"
	StatePending  = "pending"
	StateRejected = "rejected"
)

// Clip cuts s to 64 bytes for a reason's message.
func Clip(s string) string { return clip(s) }
