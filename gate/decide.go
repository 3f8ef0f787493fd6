package gate

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/vault/note"
)

// GateActor is the OKF actor the gate records when it verifies a note.
const GateActor = "process:fedmem-gate"

// reviewFolders always need a human: the agent contract and decisions.
var reviewFolders = []string{"00-global", "70-decisions"}

// plan is what the gate will do with a validated draft.
type plan struct {
	State      string
	Reasons    []note.Finding
	Type       string
	Risk       string
	Confidence string
	Folder     string
}

func flag(rule string, line int, format string, args ...any) note.Finding {
	return note.Finding{Rule: rule, Line: line, Severity: note.Flag, Message: fmt.Sprintf(format, args...)}
}

// decide classifies a validated draft. headFile reads a path at HEAD (nil:
// absent). It is pure apart from those reads.
func decide(pol *policy.Policy, res validate.Result, headFile func(string) ([]byte, error)) (plan, error) {
	p := plan{Reasons: res.Findings}
	if res.Note == nil || note.HasErrors(res.Findings) {
		p.State = StateRejected
		return p, nil
	}
	m := res.Meta
	p.Type, p.Confidence = m.Type, m.Confidence
	folder, listed := pol.Target(m.Type)
	p.Folder = folder
	if !listed {
		p.Reasons = append(p.Reasons, flag("policy-type", m.TypeLine, "type %q has no target folder in the policy; held for review (would land in %s)", m.Type, folder))
	}
	p.Reasons = append(p.Reasons, validate.Links(res, folder)...)
	for _, k := range note.GateOwned {
		if v := res.Note.Get(k); v != nil {
			p.Reasons = append(p.Reasons, note.Finding{Rule: "gate-owned", Line: res.Note.KeyLine(k), Severity: note.Info,
				Message: fmt.Sprintf("`%s` is set by the gate; the draft's value is kept only under `claimed:`", k)})
		}
	}
	if note.HasErrors(p.Reasons) {
		p.State = StateRejected
		validate.Sort(p.Reasons)
		return p, nil
	}
	// Supersession of a note in force needs a human.
	for _, ref := range m.Supersedes {
		target := path.Clean(strings.TrimPrefix(ref.Value, "/"))
		b, err := headFile(target)
		if err != nil {
			return p, err
		}
		if b == nil {
			p.Reasons = append(p.Reasons, flag("supersedes-missing", ref.Line, "`supersedes` names %s, which is not in the vault", target))
			continue
		}
		status := note.StatusStable
		if old, _ := note.Parse(b); old != nil {
			if s, ok := old.Scalar("status"); ok {
				status = s
			}
		}
		if status != note.StatusDeprecated {
			p.Reasons = append(p.Reasons, flag("supersedes-approved", ref.Line, "supersedes %s, which is in force (status %s); a human must approve", target, status))
		}
	}
	risk := pol.RiskFor(m.Type, folder)
	if m.Risk != "" {
		risk = policy.MaxRisk(risk, m.Risk) // a draft can raise its risk, never lower it
	}
	if note.HasFlags(p.Reasons) {
		risk = note.RiskHigh // detector findings
	}
	p.Risk = risk
	for _, f := range reviewFolders {
		if folder == f || strings.HasPrefix(folder, f+"/") {
			p.Reasons = append(p.Reasons, flag("review-folder", m.TypeLine, "notes in %s/ always need a human", f))
		}
	}
	if risk != note.RiskLow {
		p.Reasons = append(p.Reasons, note.Finding{Rule: "risk", Line: m.RiskLine, Severity: note.Flag,
			Message: fmt.Sprintf("risk is %s (policy for type %s in %s, the draft's own `risk`, and the detectors); only low risk promotes automatically", risk, m.Type, folder)})
	}
	if m.Confidence != note.ConfidenceVerified {
		p.Reasons = append(p.Reasons, flag("confidence", 0, "confidence is %s; only `confidence: verified` promotes automatically", m.Confidence))
	}
	validate.Sort(p.Reasons)
	if note.HasFlags(p.Reasons) {
		p.State = StatePending
	} else {
		p.State = StatePromoted
	}
	return p, nil
}

func str(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }

func keyed(pairs ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(pairs); i += 2 {
		v, ok := pairs[i+1].(*yaml.Node)
		if !ok {
			v = str(fmt.Sprint(pairs[i+1]))
		}
		m.Content = append(m.Content, str(pairs[i].(string)), v)
	}
	return m
}

// provenance is what the gate knows about where a draft came from.
type provenance struct {
	Session string
	Record  *SessionRecord // nil: unknown agent
}

func (p provenance) actor() string {
	if p.Record == nil || len(p.Record.Command) == 0 {
		return "agent:unknown"
	}
	return "agent:" + cleanSlug(path.Base(p.Record.Command[0]))
}

// render writes the promoted note: the draft's own keys in order, minus the
// gate-owned ones (moved under `claimed:`), then the gate's fields. Every
// time comes from the gate's first sight of the draft, so rendering the same
// claim twice gives the same bytes (a restarted gate recognises its own
// earlier commit instead of committing again).
func render(n *note.Note, pol *policy.Policy, typ string, prov provenance, firstSeen time.Time, verifiedBy string) ([]byte, error) {
	front := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	claimed := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	owned := map[string]bool{}
	for _, k := range note.GateOwned {
		owned[k] = true
	}
	for i := 0; i+1 < len(n.Front.Content); i += 2 {
		k, v := n.Front.Content[i], n.Front.Content[i+1]
		if owned[k.Value] {
			claimed.Content = append(claimed.Content, k, v)
		} else {
			front.Content = append(front.Content, k, v)
		}
	}
	at := firstSeen.UTC().Format(time.RFC3339)
	gen := keyed("by", prov.actor(), "at", at, "session", prov.Session)
	if r := prov.Record; r != nil {
		gen.Content = append(gen.Content, keyed("profile", r.Profile, "profile_hash", r.ProfileHash, "uid", strconv.Itoa(r.UID), "started", r.Started).Content...)
	}
	ttl := pol.TTLDays(typ)
	front.Content = append(front.Content,
		str("status"), str(note.StatusStable),
		str("generated"), gen,
		str("verified"), &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{keyed("by", verifiedBy, "at", at)}},
		str("stale_after"), str(firstSeen.UTC().AddDate(0, 0, ttl).Format(time.RFC3339)),
	)
	if len(claimed.Content) > 0 {
		front.Content = append(front.Content, str("claimed"), claimed)
	}
	return note.Render(front, n.Body)
}
