package decide

// Evidence: what the gate itself establishes about a draft, as OKF's write
// path asks before a candidate becomes active ("durable, specific,
// non-duplicative, and supported by the current system"). Nothing here
// reads what the draft says about itself except to know what to check:
//
//   - sources: every vault path in `sources` must exist at HEAD as a file; it
//     is fingerprinted with its Git blob id in the promoted note, so a later
//     sweep can withhold the note when the source changes. URLs are recorded,
//     never fetched. A draft without one resolving vault source has no
//     evidence and waits for a human.
//   - approved verification processes (gate/verify): the policy's
//     verifiers for the type run under fedmem-run; exit 0 is evidence.
//   - no conflict: a note in force (status absent or stable) or withheld,
//     anywhere in the vault (conflictindex.go), with the same title or subject,
//     or at the target path, holds the draft — even from a trusted origin.
//
// Caches here are keyed by Git object ids (blob and tree hashes): an id
// names its content forever, so the caches are shared by every gate in the
// process and never go stale.

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/gate/decide/shape"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/note"
	"github.com/fedmem/fedmem/vault/repo"
	"github.com/fedmem/fedmem/vault/view"
)

// Evidence rules (finding rules the gate adds to a decision).
const (
	RuleSourcePath        = "source-path"        // error: a vault source path that can never resolve (.., absolute, .git, inbox)
	RuleSourcesUnresolved = "sources-unresolved" // flag: a vault source is not a file at HEAD
	RuleNoEvidence        = "no-evidence"        // flag: no vault source at all
	RuleSourceClaim       = "source-fingerprint" // info: the draft's own fingerprint is replaced
	RuleSourceGateMade    = "source-unreviewed"  // info: a source the gate promoted on its own is not evidence
	RuleConflict          = "conflict"           // flag: clashes with a note in force
	RuleVerifierPassed    = "verifier-passed"    // info: an approved verifier exited 0
	RuleVerifierFailed    = "verifier-failed"    // flag: it exited non-zero or could not run
	RuleVerifierTimeout   = "verifier-timeout"   // flag: it ran past its timeout
)

// FingerprintPrefix starts a source fingerprint: the Git blob id (SHA-1) of
// the source file at the HEAD the gate decided against.
const FingerprintPrefix = "git-blob:"

// Evidence is what checkEvidence established for one draft.
type Evidence struct {
	Sources   []SourceProof `json:"sources,omitempty"`
	Verifiers []VerifierRun `json:"verifiers,omitempty"`
	// Head is the commit the sources were resolved against.
	Head string `json:"head,omitempty"`
	// counted are the sources that count as evidence (the words of the
	// draft are bound to them too: vaultKnows, shapehook.go).
	counted []countedSource
}

// SourceProof is one entry of the draft's `sources`, as the gate resolved it.
type SourceProof struct {
	Resource string `json:"resource"` // the vault path or URL as written
	// Fingerprint is "git-blob:<sha1>" for a vault path that resolved, ""
	// for a URL (recorded, not fetched) or a path that did not resolve.
	Fingerprint string `json:"fingerprint,omitempty"`
	URL         bool   `json:"url,omitempty"`
	Line        int    `json:"line"`
}

// VerifierRun is the outcome of one approved verifier.
type VerifierRun struct {
	Name     string `json:"name"`
	Profile  string `json:"profile"`
	Passed   bool   `json:"passed"`
	ExitCode int    `json:"exit_code"`
	TimedOut bool   `json:"timed_out,omitempty"`
	// OutputSHA256 hashes everything the verifier wrote (stdout and
	// stderr, with fedmem-run's own messages); Output keeps its start.
	OutputSHA256 string `json:"output_sha256"`
	Output       string `json:"output,omitempty"`
	Error        string `json:"error,omitempty"`
}

// VerifyFunc runs one verifier on a draft (gate/verify.Runner.Run).
type VerifyFunc func(ctx context.Context, v policy.Verifier, draft []byte, sources []SourceProof) VerifierRun

// EvidenceInput is what checkEvidence looks at.
type EvidenceInput struct {
	Res    validate.Result
	Draft  []byte // the claimed bytes, handed to verifiers
	Folder string // the target folder
	Dest   string // the path the note would take ("" skips the path check)
}

// CheckEvidence resolves the draft's sources at hv's commit, looks for a
// conflicting note in force, and — when run is not nil and nothing so far
// holds the draft — runs the policy's verifiers for its type. It returns
// the evidence and findings to add to the decision; an error means a check
// could not run (the draft must not be decided on).
func CheckEvidence(ctx context.Context, pol *policy.Policy, in EvidenceInput, hv *HeadView, run VerifyFunc) (Evidence, []note.Finding, error) {
	ev := Evidence{Head: hv.commit.String()}
	if in.Res.Note == nil {
		return ev, nil, nil
	}
	proofs, counted, out, err := resolveSources(pol, in.Res, hv)
	if err != nil {
		return ev, nil, err
	}
	ev.Sources, ev.counted = proofs, counted
	cf, err := Conflicts(in.Res, in.Folder, in.Dest, hv)
	if err != nil {
		return ev, nil, err
	}
	out = append(out, cf...)
	if run == nil || note.HasFlags(out) || note.HasErrors(out) {
		return ev, out, nil
	}
	for _, v := range pol.VerifiersFor(in.Res.Meta.Type) {
		r := run(ctx, v, in.Draft, proofs)
		ev.Verifiers = append(ev.Verifiers, r)
		switch {
		case r.Passed:
			out = append(out, note.Finding{Rule: RuleVerifierPassed, Severity: note.Info,
				Message: fmt.Sprintf("approved verifier %s passed under profile %s (exit 0, output sha256 %s)", v.Name, r.Profile, r.OutputSHA256)})
		case r.TimedOut:
			out = append(out, note.Finding{Rule: RuleVerifierTimeout, Severity: note.Flag,
				Message: fmt.Sprintf("approved verifier %s ran past its timeout of %s and was killed (output sha256 %s): %s", v.Name, v.Timeout, r.OutputSHA256, r.Summary())})
		default:
			out = append(out, note.Finding{Rule: RuleVerifierFailed, Severity: note.Flag,
				Message: fmt.Sprintf("approved verifier %s failed (exit %d, output sha256 %s): %s", v.Name, r.ExitCode, r.OutputSHA256, r.Summary())})
		}
	}
	return ev, out, nil
}

func (r VerifierRun) Summary() string {
	s := r.Output
	if r.Error != "" {
		s = r.Error + "; " + s
	}
	if strings.TrimSpace(s) == "" {
		return "no output"
	}
	return s
}

var schemeRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.\-]*:`)

// SourcePathError says why a vault source path can never resolve, or "".
// Sources are vault-relative ("20-domains/x.md"): no "..", no leading "/",
// nothing hidden (.git), nothing in the inbox.
func SourcePathError(p string) string {
	switch {
	case p == "":
		return "is empty"
	case strings.HasPrefix(p, "/"):
		return "is absolute; write the path from the vault root, e.g. 20-domains/x.md"
	case strings.Contains(p, "\\"):
		return "contains a backslash; use '/'"
	case strings.ContainsAny(p, "\x00\n\r"):
		return "contains a control character"
	}
	for _, c := range strings.Split(p, "/") {
		switch {
		case c == "..":
			return "contains '..'; sources are vault paths from the root"
		case c == "." || c == "":
			return "is not a clean path (empty or '.' component)"
		case strings.HasPrefix(c, "."):
			return fmt.Sprintf("points into a hidden path (%s)", c)
		}
	}
	if p == vault.InboxDir || strings.HasPrefix(p, vault.InboxDir+"/") {
		return "points into the agent inbox (drafts are not evidence)"
	}
	return ""
}

// resolveSources resolves every `sources` entry: URLs are recorded, vault
// paths must be regular files at HEAD and are fingerprinted.
func resolveSources(pol *policy.Policy, res validate.Result, hv *HeadView) ([]SourceProof, []countedSource, []note.Finding, error) {
	var proofs []SourceProof
	var out []note.Finding
	gateMade, discounted := 0, 0
	var counted []countedSource // evidence: the claim is bound to them (subjectbind.go)
	subject := draftSubject(res)
	if pol.AutoPromote != nil && pol.AutoPromote.AnySubject {
		subject = nil // sources.go: same_subject: false
	}
	for _, ref := range res.Meta.Sources {
		p := SourceProof{Resource: ref.Value, Line: ref.Line}
		if schemeRe.MatchString(ref.Value) {
			p.URL = true
			proofs = append(proofs, p)
			continue
		}
		if why := SourcePathError(ref.Value); why != "" {
			out = append(out, note.Finding{Rule: RuleSourcePath, Line: ref.Line, Severity: note.Error,
				Message: fmt.Sprintf("source %q %s", ClipText(ref.Value), why)})
			proofs = append(proofs, p)
			continue
		}
		e, err := hv.Entry(ref.Value)
		if err != nil {
			return nil, nil, nil, err
		}
		switch {
		case e == nil:
			out = append(out, note.Finding{Rule: RuleSourcesUnresolved, Line: ref.Line, Severity: note.Flag,
				Message: fmt.Sprintf("source %s is not in the vault at HEAD %.12s", ClipText(ref.Value), hv.commit)})
		case e.Mode != repo.ModeRegular && e.Mode != repo.ModeExecutable:
			out = append(out, note.Finding{Rule: RuleSourcesUnresolved, Line: ref.Line, Severity: note.Flag,
				Message: fmt.Sprintf("source %s is a %s at HEAD %.12s, not a file", ClipText(ref.Value), modeName(e.Mode), hv.commit)})
		default:
			p.Fingerprint = FingerprintPrefix + e.Hash.String()
			// A note the gate promoted without a human (its only
			// verifiers are processes) is an agent's word: citing it
			// would let a session bootstrap its own evidence. It is
			// recorded and fingerprinted but does not count.
			var f NoteFacts
			if strings.HasSuffix(ref.Value, ".md") {
				if f, err = hv.Facts(e.Hash); err != nil {
					return nil, nil, nil, err
				}
			}
			if rule, why := sourceDiscount(ref.Value, f, subject); rule != "" { // sources.go
				discounted++
				out = append(out, discountFinding(ref, rule, why))
			} else if strings.HasSuffix(ref.Value, ".md") {
				if f.GateMade {
					gateMade++
					out = append(out, note.Finding{Rule: RuleSourceGateMade, Line: ref.Line, Severity: note.Info,
						Message: fmt.Sprintf("source %s was promoted by the gate without a reviewer; it counts as evidence once a human approved or reverified it", ClipText(ref.Value))})
				} else {
					counted = append(counted, countedSource{ref.Value, e.Hash, f})
				}
			}
		}
		proofs = append(proofs, p)
	}
	resolved := -gateMade - discounted
	for _, p := range proofs {
		if p.Fingerprint != "" {
			resolved++
		}
	}
	if resolved <= 0 && !note.HasErrors(out) && !note.HasFlags(out) {
		line := res.Note.KeyLine("sources")
		msg := "the draft names no vault source (`sources:` with a path such as 20-domains/x.md that exists at HEAD); URLs alone are recorded, not evidence"
		if gateMade > 0 {
			msg = "the draft's only vault sources are notes the gate promoted without a reviewer, which are not evidence (see source-unreviewed)"
		}
		if discounted > 0 {
			msg = "no vault source of the draft is evidence: a source counts when it is a note in force, vouched for by a human, about the draft's subject (see the source-* findings)"
		}
		if len(res.Meta.Sources) == 0 {
			msg = "the draft has no `sources`; a note promotes on its own only when a vault source supports it (e.g. `sources: [20-domains/x.md]`)"
		}
		out = append(out, note.Finding{Rule: RuleNoEvidence, Line: line, Severity: note.Flag, Message: msg})
	}
	if len(counted) > 0 && subject != nil {
		bf, err := boundToSources(res, counted, hv) // subjectbind.go
		if err != nil {
			return nil, nil, nil, err
		}
		out = append(out, bf...)
	}
	if v := res.Note.Get("sources"); v != nil && v.Kind == yaml.SequenceNode {
		for _, e := range v.Content {
			if f := note.MapGet(e, "fingerprint"); f != nil {
				out = append(out, note.Finding{Rule: RuleSourceClaim, Line: f.Line, Severity: note.Info,
					Message: "a source `fingerprint` is computed by the gate; the draft's value is not used"})
			}
		}
	}
	return proofs, counted, out, nil
}

func modeName(m repo.EntryMode) string {
	switch m {
	case repo.ModeDir:
		return "folder"
	case repo.ModeSymlink:
		return "symbolic link"
	case repo.ModeSubmodule:
		return "submodule"
	}
	return "special entry"
}

func ClipText(s string) string {
	s = SanitizeLine(s)
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// NormTitle is how titles and subjects are compared: Unicode NFKC, case
// folded, cut into words at anything that is not a letter, a digit or a
// combining mark (punctuation, hyphens and white space name nothing), a
// leading article dropped, accents dropped (a reader reads "Cİ" and
// "tést" as "CI" and "test") and plurals folded (shape.Stem), so "The CI
// test-suites." and "CI test suite" are one name. A title of no word at all
// keeps its folded marks.
func NormTitle(s string) string {
	s = shape.FoldName(s) // shape/shapefold.go
	words := strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r)
	})
	if len(words) > 1 && (words[0] == "the" || words[0] == "a" || words[0] == "an") {
		words = words[1:]
	}
	if len(words) == 0 {
		return strings.Join(strings.Fields(s), " ")
	}
	for i, w := range words {
		words[i] = shape.Stem(shape.StripMarks(w))
	}
	return strings.Join(words, " ")
}

// HeadView reads one commit's tree: entries by path, note facts by blob.
type HeadView struct {
	r        *repo.Repo
	commit   repo.Hash
	rootHash repo.Hash
	root     *repo.Tree // nil for an unborn branch
}

// Root is the tree of HEAD (nil for an unborn branch).
func (hv *HeadView) Root() *repo.Tree { return hv.root }

// Repo is the repository read.
func (hv *HeadView) Repo() *repo.Repo { return hv.r }

// Commit is the HEAD commit read.
func (hv *HeadView) Commit() repo.Hash { return hv.commit }

func NewHeadView(r *repo.Repo, head repo.Hash) (*HeadView, error) {
	hv := &HeadView{r: r, commit: head}
	if head.IsZero() {
		return hv, nil
	}
	var err error
	if hv.rootHash, err = r.RootTree(head); err != nil {
		return nil, fmt.Errorf("read commit %s: %w", head, err)
	}
	if hv.root, err = r.Tree(hv.rootHash); err != nil {
		return nil, fmt.Errorf("read tree of %s: %w", head, err)
	}
	return hv, nil
}

// entry returns the tree entry at p, or nil when nothing is there. It
// walks the raw trees along p (the repository's cache holds them), never
// decoding a folder into objects: a lookup in a folder of n notes costs a
// scan of its bytes, not n allocations.
func (hv *HeadView) Entry(p string) (*repo.TreeEntry, error) {
	if hv.root == nil {
		return nil, nil
	}
	h := hv.rootHash
	parts := strings.Split(p, "/")
	for i, name := range parts {
		raw, err := hv.r.RawTree(h)
		if err != nil {
			return nil, fmt.Errorf("look up %s at %s: %w", p, hv.commit, err)
		}
		_, mode, id, err := repo.FindEntry(raw, h, name)
		if err != nil {
			return nil, fmt.Errorf("look up %s at %s: %w", p, hv.commit, err)
		}
		if mode == "" || i < len(parts)-1 && mode != "40000" {
			return nil, nil
		}
		if i == len(parts)-1 {
			m, err := repo.ParseMode(mode)
			if err != nil {
				return nil, fmt.Errorf("look up %s at %s: %w", p, hv.commit, err)
			}
			return &repo.TreeEntry{Name: name, Mode: m, Hash: id}, nil
		}
		h = id
	}
	return nil, nil
}

// NoteFacts is what the gate needs to know of a committed note.
type NoteFacts struct {
	Parsed  bool
	Status  string // "" when absent
	InForce bool   // status absent or stable
	Type    string
	Title   string // normalised (NormTitle)
	Subject string // normalised
	// Aliases are the note's other names (`aliases`, normalised; at most
	// maxAliases), names in the conflict index like its title.
	Aliases    []string
	StaleAfter time.Time
	Withheld   bool
	// SupersededBy is `superseded_by` as written (a vault path), "" when
	// absent: the note was retired in favour of that one.
	SupersededBy string
	// GateMade: every `verified` entry names a process (the gate or an
	// approved verifier) and none a human: the gate promoted the note on
	// its own. A draft cannot plant `verified` (it is moved under
	// `claimed:`), so only the gate writes it.
	GateMade bool
	// Fingerprints are the fingerprinted vault sources, resource → blob id.
	Fingerprints []sourceFingerprint
	// Hidden says why the sandbox's in-force view hides the note ("" when
	// it is in force: view.JudgeNote, the launcher's own judgement).
	Hidden string
}

type sourceFingerprint struct {
	Resource string
	Blob     string // hex
}

// maxFactsBytes is how much of a note is read for its facts: frontmatter
// is at most note.MaxFrontmatterBytes.
const maxFactsBytes = note.MaxFrontmatterBytes + 1024

// objCache holds facts by blob id. Bounded: it is dropped whole when full
// (rebuilt on demand).
var objCache = struct {
	sync.Mutex
	facts map[repo.Hash]NoteFacts
}{facts: map[repo.Hash]NoteFacts{}}

const (
	maxCachedFacts   = 500_000
	maxCachedFolders = 256
)

func (hv *HeadView) Facts(blob repo.Hash) (NoteFacts, error) {
	objCache.Lock()
	f, ok := objCache.facts[blob]
	objCache.Unlock()
	if ok {
		return f, nil
	}
	b, err := readBlobPrefix(hv.r, blob, maxFactsBytes)
	if err != nil {
		return f, err
	}
	f = FactsOf(b)
	objCache.Lock()
	if len(objCache.facts) >= maxCachedFacts {
		objCache.facts = map[repo.Hash]NoteFacts{}
	}
	objCache.facts[blob] = f
	objCache.Unlock()
	return f, nil
}

func readBlobPrefix(r *repo.Repo, h repo.Hash, n int64) ([]byte, error) {
	return r.BlobPrefix(h, n)
}

// FactsOf reads a note's frontmatter. A file without a usable frontmatter
// has no status, so it is in force (OKF: absent means stable).
func FactsOf(b []byte) NoteFacts {
	f := NoteFacts{InForce: true}
	n, findings := note.Parse(b)
	f.Hidden, _ = view.JudgeParsed(b, n, findings) // the sandbox's view: fails closed
	if n == nil {
		// A frontmatter that opens but cannot be read (a withhold that
		// outgrew the size limit, red team rtview) is not in force: it
		// may say withheld.
		f.InForce = f.Hidden == ""
		return f
	}
	f.Parsed = true
	if s, ok := n.Scalar("status"); ok {
		f.Status = s
		f.InForce = s == note.StatusStable
	}
	f.Type, _ = n.Scalar("type")
	if t, ok := n.Scalar("title"); ok {
		f.Title = NormTitle(t)
	}
	if t, ok := n.Scalar("subject"); ok {
		f.Subject = NormTitle(t)
	}
	if a := n.Get("aliases"); a != nil {
		vals := []*yaml.Node{a}
		if a.Kind == yaml.SequenceNode {
			vals = a.Content
		}
		for _, e := range vals {
			if e.Kind == yaml.ScalarNode && len(f.Aliases) < shape.MaxAliases {
				if k := NormTitle(e.Value); k != "" {
					f.Aliases = append(f.Aliases, k)
				}
			}
		}
	}
	if s, ok := n.Scalar("stale_after"); ok {
		if norm, ok := note.NormalizeTime(s); ok {
			f.StaleAfter, _ = time.Parse(time.RFC3339Nano, norm)
		}
	}
	f.Withheld = n.Get(WithheldKey) != nil
	f.SupersededBy, _ = n.Scalar("superseded_by")
	if v := n.Get("verified"); v != nil && v.Kind == yaml.SequenceNode && len(v.Content) > 0 {
		f.GateMade = true
		for _, e := range v.Content {
			by := note.MapGet(e, "by")
			if by == nil || by.Kind != yaml.ScalarNode || !strings.HasPrefix(by.Value, "process:") {
				f.GateMade = false
			}
		}
	}
	if v := n.Get("sources"); v != nil && v.Kind == yaml.SequenceNode {
		for _, e := range v.Content {
			r, fp := note.MapGet(e, "resource"), note.MapGet(e, "fingerprint")
			if r == nil || fp == nil || r.Kind != yaml.ScalarNode || fp.Kind != yaml.ScalarNode {
				continue
			}
			if hex, ok := strings.CutPrefix(fp.Value, FingerprintPrefix); ok && len(hex) == 40 {
				f.Fingerprints = append(f.Fingerprints, sourceFingerprint{r.Value, hex})
			}
		}
	}
	return f
}

// folderIndex maps normalised titles and subjects of the notes in force in
// one folder (direct children only) to their paths, at one tree of that
// folder (raw: the tree's content; names: each indexed note's keys).
type folderIndex struct {
	tree     repo.Hash
	raw      []byte
	names    map[string]indexedNote
	titles   map[string][]string
	subjects map[string][]string
}

type indexedNote struct{ title, subject string }

// folderIndexes holds one folderIndex per folder path, at the tree of that
// folder last asked for. A request for another tree of the folder (the
// next promotion's, or an older one after a group was dropped) moves the
// index there by the difference of the two trees: entries that left or
// changed are taken out, those that came or changed are put in — a scan
// of the two trees' bytes and the facts of the changed notes, not a
// decode of the folder. Keyed by content (the tree's bytes), so it is
// right whichever commit, group or repository asks.
var folderIndexes = struct {
	sync.Mutex
	m map[string]*folderIndex
}{m: map[string]*folderIndex{}}

// sameNamed returns the paths of the notes in force in folder whose title
// or subject normalises to k: those with that title first, then those with
// that subject, each in path order.
func (hv *HeadView) sameNamed(folder, k string) ([]string, error) {
	e, err := hv.Entry(folder)
	if err != nil || e == nil || e.Mode != repo.ModeDir {
		return nil, err
	}
	raw, err := hv.r.RawTree(e.Hash)
	if err != nil {
		return nil, fmt.Errorf("read folder %s: %w", folder, err)
	}
	folderIndexes.Lock()
	defer folderIndexes.Unlock()
	idx := folderIndexes.m[folder]
	if idx == nil || idx.tree != e.Hash {
		next, keep, err := hv.moveIndex(folder, idx, e.Hash, raw)
		if err != nil {
			delete(folderIndexes.m, folder) // idx may be half moved
			return nil, err
		}
		switch {
		case !keep:
			delete(folderIndexes.m, folder)
		case len(folderIndexes.m) >= maxCachedFolders && idx == nil:
			folderIndexes.m = map[string]*folderIndex{folder: next}
		default:
			folderIndexes.m[folder] = next
		}
		idx = next
	}
	t := append([]string(nil), idx.titles[k]...)
	s := append([]string(nil), idx.subjects[k]...)
	slices.Sort(t)
	slices.Sort(s)
	return append(t, s...), nil
}

// moveIndex returns the index of folder at tree h (content raw), made from
// idx (nil: none yet) by the difference of the two trees; idx is changed
// in place (the caller holds folderIndexes' lock). keep is false when raw
// is not in Git's order (only a tree Git itself would reject): the index
// is then built whole and not kept.
func (hv *HeadView) moveIndex(folder string, idx *folderIndex, h repo.Hash, raw []byte) (_ *folderIndex, keep bool, err error) {
	keep = repo.SortedTree(raw)
	if idx == nil || !keep {
		idx = &folderIndex{names: map[string]indexedNote{}, titles: map[string][]string{}, subjects: map[string][]string{}}
	}
	o, n := &repo.TreeCursor{Raw: idx.raw}, &repo.TreeCursor{Raw: raw}
	bad := func() error { return fmt.Errorf("read folder %s: tree %s is malformed", folder, h) }
	if !o.Next() || !n.Next() {
		return nil, false, bad()
	}
	// Both trees are in Git's order: walk them together (an unordered new
	// tree is walked against nothing).
	for o.OK || n.OK {
		c := 0
		switch {
		case !o.OK:
			c = 1
		case !n.OK:
			c = -1
		default:
			c = repo.CompareKeys(o.Name, o.Dir, n.Name, n.Dir)
		}
		if (c < 0 || c == 0 && !bytes.Equal(o.All, n.All)) && !o.Dir {
			// (a folder is never indexed; a note of the same name may
			// be, next to it in the walk)
			idx.drop(folder, string(o.Name))
		}
		if c > 0 || c == 0 && !bytes.Equal(o.All, n.All) {
			if err := hv.add(idx, folder, n); err != nil {
				return nil, false, err
			}
		}
		if c <= 0 && !o.Next() || c >= 0 && !n.Next() {
			return nil, false, bad()
		}
	}
	idx.tree, idx.raw = h, raw
	return idx, keep, nil
}

// drop takes the note name out of the index (if it is there).
func (idx *folderIndex) drop(folder, name string) {
	in, ok := idx.names[name]
	if !ok {
		return
	}
	p := folder + "/" + name
	delete(idx.names, name)
	if idx.titles[in.title] = dropPath(idx.titles[in.title], p); len(idx.titles[in.title]) == 0 {
		delete(idx.titles, in.title)
	}
	if idx.subjects[in.subject] = dropPath(idx.subjects[in.subject], p); len(idx.subjects[in.subject]) == 0 {
		delete(idx.subjects, in.subject)
	}
}

// add puts the entry at c into the index when it is a note in force with
// a title or subject.
func (hv *HeadView) add(idx *folderIndex, folder string, c *repo.TreeCursor) error {
	n := string(c.Name)
	if c.Dir || !strings.HasSuffix(n, ".md") || n == "index.md" || n == "log.md" {
		return nil
	}
	m, err := repo.ParseMode(string(c.Mode))
	if err != nil || !m.IsFile() {
		return nil
	}
	var id repo.Hash
	copy(id[:], c.All[len(c.All)-20:])
	f, err := hv.Facts(id)
	if err != nil {
		return err
	}
	if !f.InForce || f.Title == "" && f.Subject == "" {
		return nil
	}
	p := folder + "/" + n
	idx.names[n] = indexedNote{f.Title, f.Subject}
	if f.Title != "" {
		idx.titles[f.Title] = append(idx.titles[f.Title], p)
	}
	if f.Subject != "" {
		idx.subjects[f.Subject] = append(idx.subjects[f.Subject], p)
	}
	return nil
}

// dropPath returns ps without p.
func dropPath(ps []string, p string) []string {
	for i, q := range ps {
		if q == p {
			return append(ps[:i:i], ps[i+1:]...)
		}
	}
	return ps
}

// stampNote writes the evidence into a parsed note, in place: each
// `sources` entry becomes a mapping with `resource` and, for a vault path
// that resolved, the gate's `fingerprint` (a draft's own fingerprint is
// dropped; its other keys, such as author, are kept).
func (e Evidence) stampNote(n *note.Note) {
	src := n.Get("sources")
	if src == nil || src.Kind != yaml.SequenceNode || len(src.Content) != len(e.Sources) {
		return
	}
	for i, ent := range src.Content {
		p := e.Sources[i]
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		m.Content = append(m.Content, Str("resource"), Str(p.Resource))
		if p.Fingerprint != "" {
			m.Content = append(m.Content, Str("fingerprint"), Str(p.Fingerprint))
		}
		if ent.Kind == yaml.MappingNode {
			// Keys are compared folded (FoldKey): `FINGERPRINT:` or
			// `Resource:` beside the gate's own would be read as the
			// real key by a reader that ignores case; such keys and any
			// other gate-owned key go under the entry's `claimed:`.
			claimed := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			for j := 0; j+1 < len(ent.Content); j += 2 {
				k := ent.Content[j].Value
				switch fk := note.FoldKey(k); {
				case k == "resource" || k == "fingerprint":
					// replaced by the gate's own
				case fk == "resource" || note.IsGateOwned(k):
					claimed.Content = append(claimed.Content, ent.Content[j], ent.Content[j+1])
				default:
					m.Content = append(m.Content, ent.Content[j], ent.Content[j+1])
				}
			}
			if len(claimed.Content) > 0 {
				m.Content = append(m.Content, Str("claimed"), claimed)
			}
		}
		src.Content[i] = m
	}
	src.Style = 0 // block style: one entry per line
}

// verifiedEntries are the `verified` entries for the verifiers that passed.
func (e Evidence) verifiedEntries(at time.Time) []*yaml.Node {
	var out []*yaml.Node
	for _, v := range e.Verifiers {
		if v.Passed {
			out = append(out, Keyed("by", "process:"+v.Name, "at", at.UTC().Format(time.RFC3339)))
		}
	}
	return out
}

// Stamp is stampNote and verifiedEntries applied to a rendered note.
func (e Evidence) Stamp(content []byte, at time.Time) ([]byte, error) {
	n, fs := note.Parse(content)
	if n == nil {
		return nil, fmt.Errorf("stamp evidence: rendered note does not parse: %v", fs)
	}
	e.stampNote(n)
	if passed := e.verifiedEntries(at); len(passed) > 0 {
		if ver := n.Get("verified"); ver != nil && ver.Kind == yaml.SequenceNode {
			ver.Content = append(ver.Content, passed...)
		} else {
			n.Front.Content = append(n.Front.Content, Str("verified"), &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: passed})
		}
	}
	return note.Render(n.Front, n.Body)
}
