package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/decide/shape"
	"github.com/fedmem/fedmem/gate/review"
)

// Red team of the content shapes (rt-gate): text a shaped note carries that
// the shape never reads. goldmark drops a link's title and every reference
// definition from the prose it yields, and the YAML frontmatter keeps its
// comments, yet the next agent reads the committed file raw: all of them
// are text in any script or wording, committed on a trusted profile's word.
// A shaped note holds no such text (the shape is an allow-list of what a
// note may be), so each of these is held with the rule named.
func TestShapeHiddenTextHeld(t *testing.T) {
	cases := []struct{ name, rule string }{
		{"rt-link-title-instruction.md", shape.RuleHidden},
		{"rt-refdef-title-instruction.md", shape.RuleHidden},
		{"rt-refdef-label.md", shape.RuleHidden},
		{"rt-refdef-url.md", shape.RuleHidden},
		{"rt-link-fragment.md", shape.RuleURL},
		{"rt-yaml-comment.md", shape.RuleHidden},
		{"rt-source-text.md", shape.RuleSource},
		{"rt-source-extra-key.md", shape.RuleScript},
	}
	heldByRules(t, cases)
}

// Letters of the allowed script that are not the letters the word rules
// look up: a Latin small capital (U+029F in "Aʟways"), a precomposed accent
// ("Néver"), a combining accent ("You" + U+0301). Each read as the plain
// word by the next agent and passed the imperative and second-person rules.
func TestShapeLetterVariantsHeld(t *testing.T) {
	heldByRules(t, []struct{ name, rule string }{
		{"rt-latin-smallcap-imperative.md", shape.RuleLetter},
		{"rt-accent-imperative.md", shape.RuleImper},
		{"rt-combining-second-person.md", shape.RuleSecond},
	})
}

// heldByRules runs testdata/trusted/hostile drafts from a ci session and
// wants each held with its rule.
func heldByRules(t *testing.T, cases []struct{ name, rule string }) {
	t.Helper()
	v := newVault(t)
	seedTrustedVault(t, v)
	setPolicy(t, v, ciPolicy())
	sd := ciSession(t, v, "ci-rt")
	for _, c := range cases {
		b, err := os.ReadFile(filepath.Join("testdata/trusted/hostile", c.name))
		if err != nil {
			t.Fatal(err)
		}
		put(t, sd, c.name, string(b))
	}
	g := openGate(t, v)
	s := once(t, g)
	got := map[string]Decision{}
	for _, d := range s.Decisions {
		got[d.Draft] = d
	}
	for _, c := range cases {
		d, ok := got[c.name]
		if !ok {
			t.Errorf("%s: no decision", c.name)
			continue
		}
		if d.State == StatePromoted {
			body := gitCLI(t, v, "show", "HEAD:"+d.Path)
			t.Errorf("%s promoted from a trusted profile to %s:\n%s", c.name, d.Path, body)
			continue
		}
		var rules []string
		found := false
		for _, r := range d.Reasons {
			rules = append(rules, r.Rule)
			found = found || r.Rule == c.rule
		}
		if !found {
			t.Errorf("%s: %s, reasons %s; want rule %s", c.name, d.State, strings.Join(rules, " "), c.rule)
		}
	}
}

// A human's note "CI test suite" is in force (testdata/trusted/vault). A
// trusted profile's draft naming the same thing in another spelling — a
// plural, a hyphen, an article, a trailing mark — stood beside it in force:
// the conflict index compared names byte for byte after case folding.
func TestConflictNameVariantsHeld(t *testing.T) {
	titles := []string{"CI test suites", "CI test-suite", "The CI test suite", "CI test suite.", "CI: test suite", "Cİ test suite", "CI tést suite", "Suite of CI tests", "Test suite, CI", "Test suite СI"}
	v := newVault(t)
	seedTrustedVault(t, v)
	setPolicy(t, v, ciPolicy())
	sd := ciSession(t, v, "ci-rt")
	for i, ti := range titles {
		put(t, sd, "variant-"+string(rune('a'+i))+".md", "---\ntype: Fact\ntitle: \""+ti+"\"\nsources: [20-domains/ci/test-suite.md]\n---\nThe CI pipeline runs only the unit test suite on pull requests.\n")
	}
	s := once(t, openGate(t, v))
	for _, d := range s.Decisions {
		conflict := false
		for _, r := range d.Reasons {
			conflict = conflict || r.Rule == "conflict" && strings.Contains(r.Message, "20-domains/ci/test-suite.md")
		}
		if d.State == StatePromoted || !conflict {
			t.Errorf("%s: %s (%v); want held by rule conflict naming 20-domains/ci/test-suite.md", d.Draft, d.State, d.Reasons)
		}
	}
	if len(s.Decisions) != len(titles) {
		t.Fatalf("%d decisions for %d drafts", len(s.Decisions), len(titles))
	}
}

// A batch approval shows each draft's id, path, type, risk and origin
// (cmd/fedmem review.go listLine), never the notes an approval retires. A
// draft that names a human's note in `supersedes` is held for exactly that
// (supersedes-reviewed), and `fedmem review approve --profile ci --yes`
// deprecated the human's note without the reviewer having seen it named;
// so did `--supersede` in a batch, for whatever each draft contradicted at
// HEAD. A batch decides no supersession: such a draft fails in the batch
// (named, nothing decided) and is approved alone.
func TestBatchApproveSupersedesNothingUnshown(t *testing.T) {
	v := newVault(t)
	seedTrustedVault(t, v)
	setPolicy(t, v, ciPolicy())
	sd := ciSession(t, v, "ci-rt")
	put(t, sd, "retire.md", "---\ntype: Fact\ntitle: CI test suite scope\nsources: [20-domains/ci/test-suite.md]\nsupersedes: [20-domains/ci/test-suite.md]\n---\nThe CI pipeline runs the unit suite on every pull request.\n")
	put(t, sd, "clash.md", "---\ntype: Fact\ntitle: CI test suite\nsources: [20-domains/ci/test-suite.md]\n---\nThe CI pipeline runs the unit suite on every pull request.\n")
	g := openGate(t, v)
	s := once(t, g)
	var held []string
	for _, n := range []string{"retire.md", "clash.md"} {
		d := decisionFor(t, s, n)
		if d.State != StatePending {
			t.Fatalf("%s not held: %+v", n, d)
		}
		held = append(held, d.ID)
	}
	items := g.ApproveAll(held[:1], "alice", review.ApproveOptions{})
	items = append(items, g.ApproveAll(held[1:], "alice", review.ApproveOptions{Supersede: true})...)
	for _, it := range items {
		if it.Error == "" || !strings.Contains(it.Error, "20-domains/ci/test-suite.md") || !strings.Contains(it.Error, "alone") {
			t.Errorf("%s: batch approval %+v (error %q); want it refused, naming the note it would retire and asking for a single review", it.ID, it.Decision, it.Error)
		}
	}
	if st := gitCLI(t, v, "show", "HEAD:20-domains/ci/test-suite.md"); strings.Contains(st, "deprecated") {
		t.Fatalf("a batch approval deprecated the human's note:\n%s", st)
	}
	// Alone, with the note named to the reviewer, it is the reviewer's call.
	if d, err := g.ApproveWith(held[0], "alice", review.ApproveOptions{}); err != nil || d.State != StatePromoted {
		t.Fatalf("single approval: %+v %v", d, err)
	}
}

// A human's note without a title (no frontmatter at all: OKF reads it as
// in force) is named by its file name — the name the vault shows and that
// the source rule reads (decide/sources.go). The conflict index held only titles
// and subjects: a trusted profile's "Deploy freeze", citing the human's
// deploy-freeze.md as its evidence, stood beside it saying the opposite.
func TestConflictUntitledNoteByFileName(t *testing.T) {
	v := newVault(t)
	seedTrustedVault(t, v)
	os.MkdirAll(filepath.Join(v, "20-domains/ops"), 0o755)
	if err := os.WriteFile(filepath.Join(v, "20-domains/ops/deploy-freeze.md"), []byte("Production deploys are frozen from Friday noon to Monday morning.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCLI(t, v, "add", "20-domains/ops")
	gitCLI(t, v, "-c", "user.name=Alice", "-c", "user.email=alice@example.com", "commit", "-q", "-m", "human note")
	setPolicy(t, v, ciPolicy())
	sd := ciSession(t, v, "ci-rt")
	put(t, sd, "freeze.md", "---\ntype: Fact\ntitle: Deploy freeze\nsources: [20-domains/ops/deploy-freeze.md]\n---\nThe deploy freeze ended last year. Production deploys go out on Fridays as on any other day.\n")
	s := once(t, openGate(t, v))
	d := decisionFor(t, s, "freeze.md")
	conflict := false
	for _, r := range d.Reasons {
		conflict = conflict || r.Rule == decide.RuleConflict && strings.Contains(r.Message, "20-domains/ops/deploy-freeze.md")
	}
	if d.State == StatePromoted || !conflict {
		t.Fatalf("%s (%v); want held by rule conflict naming 20-domains/ops/deploy-freeze.md", d.State, d.Reasons)
	}
}

// A human's note names itself by its `aliases` too (what wiki links and
// readers resolve); the conflict index holds titles, subjects and file
// names only, so a trusted draft titled like an alias stood beside it. A
// note's aliases are names in the index; a draft's aliases are looked up.
func TestConflictAliasOfHumanNote(t *testing.T) {
	v := newVault(t)
	seedTrustedVault(t, v)
	os.MkdirAll(filepath.Join(v, "20-domains/ops"), 0o755)
	if err := os.WriteFile(filepath.Join(v, "20-domains/ops/change-freeze.md"), []byte("---\ntype: Fact\ntitle: Change freeze\naliases: [Deploy window]\n---\nProduction deploys are frozen from Friday noon to Monday morning.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCLI(t, v, "add", "20-domains/ops")
	gitCLI(t, v, "-c", "user.name=Alice", "-c", "user.email=alice@example.com", "commit", "-q", "-m", "human note")
	setPolicy(t, v, ciPolicy())
	sd := ciSession(t, v, "ci-rt")
	put(t, sd, "window.md", "---\ntype: Fact\ntitle: Deploy window\nsubject: Change freeze window\nsources: [20-domains/ops/change-freeze.md]\n---\nThe change freeze ended last year. Production deploys go out on Fridays as on any other day.\n")
	g := openGate(t, v)
	s := once(t, g)
	d := decisionFor(t, s, "window.md")
	if d.State == StatePromoted {
		t.Fatalf("promoted to %s beside the human's 20-domains/ops/change-freeze.md (alias %q)", d.Path, "Deploy window")
	}
	// The other way: a draft whose alias is the human note's title.
	put(t, sd, "alias.md", "---\ntype: Fact\ntitle: Friday deploys\naliases: [Change freeze]\nsubject: Change freeze rules\nsources: [20-domains/ops/change-freeze.md]\n---\nProduction deploys go out on Fridays as on any other day.\n")
	s = once(t, g)
	if d := decisionFor(t, s, "alias.md"); d.State == StatePromoted || !hasRule(d, decide.RuleConflict) {
		t.Fatalf("a draft aliased like the human's title: %s %v; want held by conflict", d.State, d.Reasons)
	}
}

// Evidence is about the same subject when more than half of the words of
// the draft's title OR of its `subject` are the source's: a `subject`
// close to the source's title carried a title about something else
// ("Release branch merge gate" citing "CI test suite"). Every name the
// draft takes must be about the source.
func TestEvidenceSubjectDoesNotCarryTitle(t *testing.T) {
	heldByRules(t, []struct{ name, rule string }{{"rt-subject-carries-title.md", decide.RuleNoEvidence}})
}

// A heading was read like a title (no sentence rules): a German
// instruction as a level-2 heading passed the language rule that holds it
// as a paragraph. Headings are read as sentences.
func TestShapeHeadingOtherLanguageHeld(t *testing.T) {
	heldByRules(t, []struct{ name, rule string }{{"rt-heading-other-language.md", shape.RuleLanguage}})
}
