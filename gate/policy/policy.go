package policy

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/note"
)

// Policy is the gate's configuration. See docs/policy.md for every key.
type Policy struct {
	Version   int
	Reviewers []string
	// Targets maps a note type to the folder a promotion lands in.
	Targets map[string]string
	// DefaultTarget is where a note of an unlisted type would land; such a
	// note is always held for review.
	DefaultTarget string
	RiskDefault   string
	RiskTypes     map[string]string
	RiskFolders   map[string]string
	TTLDefault    int // days
	TTLTypes      map[string]int
	MaxDraftBytes int64
	MaxDrafts     int // per session
	// PruneEmptyAfterHours is the grace period after which the gate's sweep
	// removes an empty session folder 90-inbox/<session>/ (counted from
	// the session record's end, or from the folder's last change when the
	// record says nothing); 0 never prunes. A live session's folder and a
	// folder holding anything are never removed (gate/sweep/prune_linux.go).
	PruneEmptyAfterHours int
	GateName             string
	GateEmail            string
	// AutoPromote, when set, lets drafts from trusted origins promote
	// without a reviewer. Nil (what `fedmem init` writes): every valid draft
	// waits for a reviewer.
	AutoPromote *AutoPromote
	// Verifiers are the approved verification processes, by name
	// (verifiers.go).
	Verifiers map[string]Verifier
	// Remote, when set, is the Git remote the gate synchronises the vault
	// with (remote.go; gate/sync.go).
	Remote *Remote
}

// AutoPromote says which sessions' drafts may promote on their own. Origin is
// read from the session record fedmem-run wrote, never from the draft, and
// only a record the gate can prove is the launcher's counts (see
// docs/gate.md, "Trust model").
type AutoPromote struct {
	// Profiles are trusted profile names. A built-in name is trusted only
	// when the record's profile hash is the built-in's; any other name must
	// be pinned as "name@<sha256 hex>" (the hash fedmem-run reports).
	Profiles []string
	// Types limits auto-promotion to these note types (case-insensitive);
	// empty means any type.
	Types []string
	// MaxPerSession and MaxPerDay cap auto-promotions per session and per
	// UTC day, counted by the gate from its own decisions.
	MaxPerSession int
	MaxPerDay     int
	// LauncherGroup is the group (name or gid) that fedmem-run is installed
	// setgid to and that owns 90-inbox/.sessions/. Without it only records
	// written by root are trusted.
	LauncherGroup string
	// Shapes are the content shapes, by folded type name, that a note must
	// have to promote on its own (gate/decide/shape/shape.go); nil: DefaultShapes. A type
	// with no shape never auto-promotes.
	Shapes map[string]*Shape
	// AnySubject, when set (`same_subject: false`), lets a source that is a
	// note in force count as evidence whatever it is about (the source's
	// other rules still hold). A weakening: Warnings names it.
	AnySubject bool
	// Line is where the block starts in the policy file.
	Line int
}

// Auto-promotion defaults when the block omits a cap.
const (
	DefaultMaxPerSession = 20
	DefaultMaxPerDay     = 200
)

// Warnings names settings that parse but will not do what they seem to:
// auto_promote without a launcher group (only root-written session records
// are proven), and trusted profiles that are neither built in (builtins)
// nor pinned (they never match).
func (p *Policy) Warnings(builtins []string) []string {
	a := p.AutoPromote
	if a == nil {
		return nil
	}
	var out []string
	if a.LauncherGroup == "" {
		out = append(out, fmt.Sprintf("auto_promote (line %d) has no launcher_group: only session records written by root are proven, so sessions started by other users never auto-promote (see docs/gate.md, \"Trust model\")", a.Line))
	}
	if a.AnySubject {
		out = append(out, fmt.Sprintf("auto_promote (line %d) has same_subject: false: a draft's source counts as evidence whatever it is about, so a true note on one subject vouches for any claim on another (see docs/policy.md, \"Evidence bound to the claim\")", a.Line))
	}
	for _, e := range a.Profiles {
		if name, pin := ProfilePin(e); pin == "" && !slices.Contains(builtins, name) {
			out = append(out, fmt.Sprintf("auto_promote.profiles: %q is not a built-in profile and has no @sha256 pin: it never matches a session (pin it as %s@<hash from fedmem-run --explain>)", name, name))
		}
	}
	return out
}

// ProfilePin splits a trusted profile entry "name[@sha256]".
func ProfilePin(entry string) (name, hash string) {
	name, hash, _ = strings.Cut(entry, "@")
	return name, hash
}

// TypeAllowed reports whether auto-promotion covers a note type.
func (a *AutoPromote) TypeAllowed(typ string) bool {
	if len(a.Types) == 0 {
		return true
	}
	for _, t := range a.Types {
		if strings.EqualFold(t, typ) {
			return true
		}
	}
	return false
}

// RiskFloor is the least risk of a type, whatever the policy's `risk.types`
// says: these notes tell agents what to run or how to behave (agent
// adapters, workflows, runbooks). Medium is not low, so they always wait for
// a reviewer, even from a trusted origin.
var RiskFloor = map[string]string{"Adapter": note.RiskMedium, "Workflow": note.RiskMedium, "Runbook": note.RiskMedium}

// RiskFolderFloor is the least risk of a folder, whatever the type and the
// policy's `risk.folders` say: these folders hold what agents are told to
// run and how to behave (workflows, context packs loaded into agents,
// agent adapters), so a note of any type there waits for a reviewer.
var RiskFolderFloor = map[string]string{"40-workflows": note.RiskMedium, "60-context-packs": note.RiskMedium, "80-agent-adapters": note.RiskMedium}

// Default is the policy used when the vault has no policy file. It matches
// the file `fedmem init` writes.
func Default() *Policy {
	return &Policy{
		Version: 1,
		Targets: map[string]string{
			"Fact": "20-domains", "Decision": "70-decisions", "Workflow": "40-workflows",
			"Runbook": "40-workflows", "Skill": "50-skills/proposed",
			"ContextPack": "60-context-packs", "Adapter": "80-agent-adapters",
		},
		DefaultTarget: "20-domains",
		RiskDefault:   note.RiskLow,
		RiskTypes: map[string]string{"Decision": note.RiskHigh, "Skill": note.RiskMedium,
			"Adapter": note.RiskMedium, "Workflow": note.RiskMedium, "Runbook": note.RiskMedium},
		RiskFolders: map[string]string{"00-global": note.RiskHigh, "70-decisions": note.RiskHigh, "50-skills/published": note.RiskHigh,
			"40-workflows": note.RiskMedium, "60-context-packs": note.RiskMedium, "80-agent-adapters": note.RiskMedium},
		TTLDefault:           90,
		TTLTypes:             map[string]int{"Runbook": 30, "Decision": 365},
		MaxDraftBytes:        256 << 10,
		MaxDrafts:            500,
		PruneEmptyAfterHours: DefaultPruneEmptyAfterHours,
		GateName:             "fedmem-gate",
		GateEmail:            "gate@fedmem.invalid",
	}
}

// DefaultPruneEmptyAfterHours is inbox.prune_empty_sessions_after_hours
// when the policy does not set it.
const DefaultPruneEmptyAfterHours = 24

// Error is one problem in a policy file.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// MaxPolicyBytes bounds the policy file.
const MaxPolicyBytes = 256 << 10

// Load reads the policy at path; a missing file yields Default().
func Load(path string) (*Policy, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Default(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return Parse(path, b)
}

// Parse parses policy text; file names the source in errors. The returned
// error joins every *Error found.
func Parse(file string, b []byte) (*Policy, error) {
	p := Default()
	if len(b) > MaxPolicyBytes {
		return nil, &Error{file, 1, fmt.Sprintf("policy is %d bytes; the limit is %d", len(b), MaxPolicyBytes)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		if line, msg, ok := vault.YAMLErrorLine(err); ok {
			return nil, &Error{file, line, "yaml: " + msg}
		}
		return nil, &Error{file, 1, err.Error()}
	}
	if len(doc.Content) == 0 {
		return p, nil
	}
	c := &checker{file: file}
	root := doc.Content[0]
	c.strict(root, 1)
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	c.mapping(root, "", func(k string, v *yaml.Node) {
		switch k {
		case "version":
			if n := c.int(v, k, 1, 1); n == 1 {
				p.Version = n
			}
		case "reviewers":
			p.Reviewers = c.strings(v, k)
			for i, r := range p.Reviewers {
				if r == "" || strings.ContainsAny(r, " \t\n:/") {
					c.errf(v.Content[i], "reviewers: %q is not a user name or uid", r)
				}
			}
		case "targets":
			p.Targets = map[string]string{}
			c.mapping(v, k, func(t string, f *yaml.Node) {
				p.Targets[t] = c.folder(f, k+"."+t)
			})
		case "default_target":
			p.DefaultTarget = c.folder(v, k)
		case "risk":
			c.mapping(v, k, func(k2 string, v2 *yaml.Node) {
				switch k2 {
				case "default":
					p.RiskDefault = c.risk(v2, "risk.default")
				case "types":
					p.RiskTypes = map[string]string{}
					c.mapping(v2, "risk.types", func(t string, r *yaml.Node) { p.RiskTypes[t] = c.risk(r, "risk.types."+t) })
				case "folders":
					p.RiskFolders = map[string]string{}
					c.mapping(v2, "risk.folders", func(f string, r *yaml.Node) {
						c.folderName(v2, f, "risk.folders")
						p.RiskFolders[f] = c.risk(r, "risk.folders."+f)
					})
				default:
					c.unknown(v, "risk", k2)
				}
			})
		case "ttl_days":
			c.mapping(v, k, func(k2 string, v2 *yaml.Node) {
				switch k2 {
				case "default":
					p.TTLDefault = c.int(v2, "ttl_days.default", 1, 3650)
				case "types":
					p.TTLTypes = map[string]int{}
					c.mapping(v2, "ttl_days.types", func(t string, d *yaml.Node) { p.TTLTypes[t] = c.int(d, "ttl_days.types."+t, 1, 3650) })
				default:
					c.unknown(v, "ttl_days", k2)
				}
			})
		case "limits":
			c.mapping(v, k, func(k2 string, v2 *yaml.Node) {
				switch k2 {
				case "max_draft_bytes":
					p.MaxDraftBytes = int64(c.int(v2, "limits.max_draft_bytes", 1, 16<<20))
				case "max_drafts_per_session":
					p.MaxDrafts = c.int(v2, "limits.max_drafts_per_session", 1, 1000000)
				default:
					c.unknown(v, "limits", k2)
				}
			})
		case "inbox":
			c.mapping(v, k, func(k2 string, v2 *yaml.Node) {
				switch k2 {
				case "prune_empty_sessions_after_hours":
					p.PruneEmptyAfterHours = c.int(v2, "inbox.prune_empty_sessions_after_hours", 0, 87600)
				default:
					c.unknown(v, "inbox", k2)
				}
			})
		case "verifiers":
			p.Verifiers = c.verifiers(v)
		case "gate":
			c.mapping(v, k, func(k2 string, v2 *yaml.Node) {
				s := c.str(v2, "gate."+k2)
				if strings.ContainsAny(s, "<>\n\r\x00") || s == "" || len(s) > 100 {
					c.errf(v2, "gate.%s must be one line without < or > (at most 100)", k2)
				}
				switch k2 {
				case "name":
					p.GateName = s
				case "email":
					p.GateEmail = s
				default:
					c.unknown(v, "gate", k2)
				}
			})
		case "auto_promote":
			p.AutoPromote = c.autoPromote(v)
		case "remote":
			p.Remote = c.remote(v)
		default:
			c.unknown(root, "", k)
		}
	})
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	return p, nil
}

func (c *checker) autoPromote(v *yaml.Node) *AutoPromote {
	a := &AutoPromote{MaxPerSession: DefaultMaxPerSession, MaxPerDay: DefaultMaxPerDay, Line: v.Line}
	c.mapping(v, "auto_promote", func(k string, v2 *yaml.Node) {
		switch k {
		case "profiles":
			a.Profiles = c.strings(v2, "auto_promote.profiles")
			for i, e := range a.Profiles {
				name, hash := ProfilePin(e)
				if !profileNameRe.MatchString(name) {
					c.errf(v2.Content[i], "auto_promote.profiles: %q is not a profile name", name)
				}
				if strings.Contains(e, "@") && !sha256Re.MatchString(hash) {
					c.errf(v2.Content[i], "auto_promote.profiles: %q: after @ comes the profile's sha256 (64 hex digits, as `fedmem-run --explain` shows)", e)
				}
			}
			if len(a.Profiles) == 0 {
				c.errf(v2, "auto_promote.profiles must name at least one profile (remove auto_promote to trust none)")
			}
		case "types":
			a.Types = c.strings(v2, "auto_promote.types")
		case "shapes":
			a.Shapes = c.shapes(v2)
		case "same_subject":
			switch c.str(v2, "auto_promote.same_subject") {
			case "true":
			case "false":
				a.AnySubject = true
			default:
				c.errf(v2, "auto_promote.same_subject must be true or false")
			}
		case "max_per_session":
			a.MaxPerSession = c.int(v2, "auto_promote.max_per_session", 0, 1000000)
		case "max_per_day":
			a.MaxPerDay = c.int(v2, "auto_promote.max_per_day", 0, 100000000)
		case "launcher_group":
			a.LauncherGroup = c.str(v2, "auto_promote.launcher_group")
			if !groupRe.MatchString(a.LauncherGroup) {
				c.errf(v2, "auto_promote.launcher_group: %q is not a group name or gid", a.LauncherGroup)
			} else if a.LauncherGroup == "0" || a.LauncherGroup == "root" {
				c.errf(v2, "auto_promote.launcher_group must be a dedicated group, not root's")
			}
		default:
			c.unknown(v, "auto_promote", k)
		}
	})
	if v.Kind == yaml.MappingNode && note.MapGet(v, "profiles") == nil {
		c.errf(v, "auto_promote needs `profiles` (the session profiles whose drafts may promote without a reviewer)")
	}
	return a
}

var (
	profileNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	sha256Re      = regexp.MustCompile(`^[0-9a-f]{64}$`)
	groupRe       = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,31}$|^[0-9]{1,10}$`)
)

type checker struct {
	file string
	errs []error
}

func (c *checker) errf(n *yaml.Node, format string, args ...any) {
	c.errs = append(c.errs, &Error{c.file, n.Line, fmt.Sprintf(format, args...)})
}

// strict applies the draft YAML rules (anchors, aliases, tags, duplicates).
func (c *checker) strict(n *yaml.Node, depth int) {
	switch {
	case n.Anchor != "" || n.Kind == yaml.AliasNode:
		c.errf(n, "anchors and aliases are not allowed")
		return
	case n.Style&yaml.TaggedStyle != 0:
		c.errf(n, "explicit tag %s is not allowed", n.Tag)
		return
	case depth > note.MaxDepth:
		c.errf(n, "nesting deeper than %d", note.MaxDepth)
		return
	}
	seen := map[string]int{}
	for i, ch := range n.Content {
		if n.Kind == yaml.MappingNode && i%2 == 0 {
			if l, dup := seen[ch.Value]; dup {
				c.errf(ch, "key %q appears twice (first on line %d)", ch.Value, l)
			}
			seen[ch.Value] = ch.Line
		}
		c.strict(ch, depth+1)
	}
}

func (c *checker) unknown(n *yaml.Node, parent, k string) {
	line := n
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == k {
			line = n.Content[i]
		}
	}
	if parent != "" {
		k = parent + "." + k
	}
	c.errf(line, "unknown key %q (see docs/policy.md)", k)
}

func (c *checker) mapping(n *yaml.Node, what string, f func(string, *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		if what == "" {
			what = "the policy"
		}
		c.errf(n, "%s must be a mapping", what)
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		f(n.Content[i].Value, n.Content[i+1])
	}
}

func (c *checker) str(n *yaml.Node, what string) string {
	if n.Kind != yaml.ScalarNode {
		c.errf(n, "%s must be a string", what)
		return ""
	}
	return n.Value
}

func (c *checker) strings(n *yaml.Node, what string) []string {
	if n.Kind != yaml.SequenceNode {
		c.errf(n, "%s must be a list", what)
		return nil
	}
	var out []string
	for _, e := range n.Content {
		out = append(out, c.str(e, what+" entry"))
	}
	return out
}

func (c *checker) int(n *yaml.Node, what string, lo, hi int) int {
	s := c.str(n, what)
	v, err := strconv.Atoi(s)
	if s != "" && (err != nil || v < lo || v > hi) {
		c.errf(n, "%s must be a whole number from %d to %d (got %q)", what, lo, hi, s)
		return 0
	}
	return v
}

func (c *checker) risk(n *yaml.Node, what string) string {
	s := c.str(n, what)
	if s != note.RiskLow && s != note.RiskMedium && s != note.RiskHigh {
		c.errf(n, "%s must be low, medium or high (got %q)", what, s)
	}
	return s
}

// folder checks a promotion target folder.
func (c *checker) folder(n *yaml.Node, what string) string {
	s := c.str(n, what)
	if s == "" {
		return ""
	}
	if s == vault.InboxDir || strings.HasPrefix(s, vault.InboxDir+"/") || s == "99-archive" || strings.HasPrefix(s, "99-archive/") {
		c.errf(n, "%s: %q cannot be a promotion target (the inbox and the archive are not memory)", what, s)
		return s
	}
	if !slices.Contains(vault.Folders, s) {
		c.errf(n, "%s: %q is not a vault folder (one of %s)", what, s, strings.Join(vault.Folders, ", "))
	}
	return s
}

func (c *checker) folderName(m *yaml.Node, f, what string) {
	if !slices.Contains(vault.Folders, f) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == f {
				c.errf(m.Content[i], "%s: %q is not a vault folder", what, f)
			}
		}
	}
}

// Target returns the folder for a note type and whether policy lists it.
// Lookup is exact first, then case-insensitive.
func (p *Policy) Target(typ string) (string, bool) {
	if f, ok := p.Targets[typ]; ok {
		return f, true
	}
	for t, f := range p.Targets {
		if strings.EqualFold(t, typ) {
			return f, true
		}
	}
	return p.DefaultTarget, false
}

// RiskFor is the highest of the default, the type's and the folder's (and
// its parents') risk.
func (p *Policy) RiskFor(typ, folder string) string {
	r := p.RiskDefault
	for t, v := range p.RiskTypes {
		if strings.EqualFold(t, typ) {
			r = MaxRisk(r, v)
		}
	}
	for t, v := range RiskFloor {
		if strings.EqualFold(t, typ) {
			r = MaxRisk(r, v)
		}
	}
	for _, m := range []map[string]string{p.RiskFolders, RiskFolderFloor} {
		for f, v := range m {
			if folder == f || strings.HasPrefix(folder, f+"/") {
				r = MaxRisk(r, v)
			}
		}
	}
	return r
}

// TTLDays returns the review interval for a type.
func (p *Policy) TTLDays(typ string) int {
	for t, v := range p.TTLTypes {
		if strings.EqualFold(t, typ) {
			return v
		}
	}
	return p.TTLDefault
}

var riskRank = map[string]int{note.RiskLow: 0, note.RiskMedium: 1, note.RiskHigh: 2}

// MaxRisk returns the higher of two risk levels; unknown counts as high.
func MaxRisk(a, b string) string {
	ra, oka := riskRank[a]
	rb, okb := riskRank[b]
	if !oka || !okb {
		return note.RiskHigh
	}
	if rb > ra {
		return b
	}
	return a
}

// IsReviewer reports whether a uid (and its user name, if any) is listed.
func (p *Policy) IsReviewer(uid int, name string) bool {
	for _, r := range p.Reviewers {
		if r == strconv.Itoa(uid) || (name != "" && r == name) {
			return true
		}
	}
	return false
}
