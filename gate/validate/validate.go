package validate

import (
	"bytes"
	"fmt"
	"path"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
	"golang.org/x/net/html"

	"github.com/fedmem/fedmem/vault/note"
)

// Result is the outcome of validating one draft's bytes.
type Result struct {
	// Note is nil when the frontmatter could not be parsed.
	Note     *note.Note
	Meta     note.Meta
	Findings []note.Finding
	// body holds the link targets of the one Markdown parse of the body.
	body *bodyScan
}

// Draft runs every content check on a draft's bytes: encoding and
// characters, frontmatter and OKF shape, raw HTML, instructions aimed at
// agents, and secrets. Each check sees the raw bytes AND the decoded text a
// reader gets: YAML scalar values after escape processing ("\x67hp_…",
// "\u202E", escaped line breaks), the Markdown body with backslash escapes
// and HTML character references resolved, Markdown and HTML as their real
// parsers read them. Secrets are scanned even when the frontmatter is
// broken, so the audit log records that a secret was offered. Links are
// checked separately (Links) once the gate knows where the note would live.
// An error means a check could not run (the draft must not be promoted).
func Draft(b []byte) (Result, error) {
	r, err := scan(b)
	Sort(r.Findings)
	return r, err
}

// DraftNamed is Draft plus a secret scan of the draft's file name as the
// agent wrote it (a draft named `ghp_<token>.md` offers a secret too).
func DraftNamed(name string, b []byte) (Result, error) {
	r, err := scan(b)
	if err != nil {
		return r, err
	}
	fs, err := Name(name)
	r.Findings = append(r.Findings, fs...)
	Sort(r.Findings)
	return r, err
}

func scan(b []byte) (Result, error) {
	var r Result
	if n := encodedBytes(b); n > maxEncodedBytes {
		// gitleaks decodes and rescans such runs (about a second per
		// 256 KiB of base64 on 2 cores); a note is text for people and
		// agents to read, so the draft is refused before any scan.
		r.Findings = []note.Finding{{Rule: "encoded-content", Line: 1, Severity: note.Error, Message: fmt.Sprintf(
			"the draft holds %d bytes of encoded data (runs of %d or more base64 or hex characters; the limit is %d): a note is text, keep blobs out of the vault", n, minEncodedRun, maxEncodedBytes)}}
		return r, nil
	}
	if f := nfkcGrowth(b); f != nil { // normbound.go
		r.Findings = []note.Finding{*f}
		return r, nil
	}
	lim := newLimiter()
	r.Findings = textScan(r.Findings, lim, b, 1, false)
	segs := make([]segment, 0, 32)
	for i, l := range strings.Split(string(b), "\n") {
		segs = append(segs, segment{l, i + 1})
	}
	n, fs := note.Parse(b)
	r.Findings = append(r.Findings, fs...)
	var err error
	if n == nil {
		r.Findings = injectionScan(r.Findings, lim, segs)
		r.Findings, err = secretScan(r.Findings, lim, string(b), nil, "secret", "")
		return r, err
	}
	m, fs := note.Check(n)
	r.Note, r.Meta = n, m
	r.Findings = append(r.Findings, fs...)

	// Decoded views: what a YAML reader and a Markdown renderer get.
	dec := decoded{raw: b}
	dec.frontmatter(n.Front, "")
	dec.body(n.Body, n.BodyLine)
	for _, s := range dec.text {
		r.Findings = textScan(r.Findings, lim, []byte(s.text), s.line, true)
	}
	segs = append(segs, dec.text...)

	bs := scanBody(n.Body, n.BodyLine)
	r.body = &bs
	for _, f := range bs.findings {
		r.Findings = lim.add(r.Findings, f)
	}
	r.Findings = injectionScan(r.Findings, lim, segs)
	if r.Findings, err = secretScan(r.Findings, lim, string(b), nil, "secret", ""); err != nil {
		return r, err
	}
	if len(dec.secretLines) > 0 {
		lines := dec.secretLines
		r.Findings, err = secretScan(r.Findings, lim, dec.secret.String(), func(i int) int {
			if i < 0 || i >= len(lines) {
				return 0
			}
			return lines[i]
		}, "secret", "")
	}
	return r, err
}

// decoded collects the decoded views of a note that differ from its raw
// bytes.
type decoded struct {
	raw         []byte          // the draft: a value found verbatim in it was scanned already
	text        []segment       // decoded strings, each on the draft line it comes from
	secret      strings.Builder // "key: value" lines for gitleaks
	secretLines []int           // draft line of each line of secret
}

func (d *decoded) addSecret(key, val string, line int) {
	s := val
	if key != "" {
		s = key + ": " + val
	}
	for _, l := range strings.Split(s, "\n") {
		d.secret.WriteString(l)
		d.secret.WriteByte('\n')
		d.secretLines = append(d.secretLines, line)
	}
}

// frontmatter visits every scalar, keys included. Quoted scalars are the
// ones whose value is not their source text: double quotes process escapes
// ("\x67", "\u202E") and join lines at an escaped line break; single quotes
// fold lines.
func (d *decoded) frontmatter(n *yaml.Node, key string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			d.frontmatter(k, "")
			d.frontmatter(v, k.Value)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			d.frontmatter(c, key)
		}
	case yaml.ScalarNode:
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 || bytes.Contains(d.raw, []byte(n.Value)) {
			return
		}
		d.text = append(d.text, segment{n.Value, n.Line})
		d.addSecret(key, n.Value, n.Line)
	}
}

// body adds the body lines that read differently once Markdown backslash
// escapes and HTML character references are resolved ("ghp\_…",
// "&#105;gnore"). A reference that decodes to a line break stays on its
// line.
func (d *decoded) body(b []byte, first int) {
	if !strings.ContainsAny(string(b), "&\\") {
		return
	}
	for i, l := range strings.Split(string(b), "\n") {
		if !strings.ContainsAny(l, "&\\") {
			continue
		}
		v := html.UnescapeString(unescapePunct(l))
		if v == l {
			continue
		}
		v = strings.NewReplacer("\n", " ", "\r", " ").Replace(v)
		d.text = append(d.text, segment{v, first + i})
		d.addSecret("", v, first+i)
	}
}

// Links checks the links of a parsed note that will live in dir: body links,
// `sources` resources and `supersedes` paths.
func Links(r Result, dir string) []note.Finding {
	if r.Note == nil {
		return nil
	}
	var out []note.Finding
	lim := newLimiter()
	refs := []note.Ref(nil)
	if r.body != nil {
		refs = r.body.refs
	} else {
		refs = BodyLinks(r.Note.Body, r.Note.BodyLine)
	}
	for _, ref := range refs {
		if f := Link(ref, dir, "link"); f != nil {
			out = lim.add(out, *f)
		}
	}
	for _, ref := range r.Meta.Sources {
		if f := Link(ref, dir, "link-source"); f != nil {
			out = lim.add(out, *f)
		}
	}
	for _, ref := range r.Meta.Supersedes {
		if schemeRe.MatchString(ref.Value) {
			out = lim.add(out, note.Finding{Rule: "supersedes", Line: ref.Line, Severity: note.Error,
				Message: "`supersedes` must be a vault path of a note, not a URL"})
		} else if f := Link(note.Ref{Value: "/" + ref.Value, Line: ref.Line}, dir, "supersedes"); f != nil {
			out = lim.add(out, *f)
		}
	}
	Sort(out)
	return out
}

// Committed checks what the gate is about to write to Git, after it has
// rendered the note: the rendered bytes are parsed again with the gate's
// own parser (they must parse, and no gate-owned key may sit at the top
// level in another spelling than the gate's own), and every content check
// of Draft runs on them, decoded values included; the target path and the
// commit message are scanned for secrets and characters too. Findings about
// the rendered note carry line 0 and name the rendered line in the message
// (receipts cite draft lines). The caller must not commit when the result
// has an Error; Flags describe what a reviewer has seen or must see.
//
// others are the other files the same commit writes (the folder's log.md and
// index.md, a superseded note): the lines each adds to what HEAD had are
// scanned for secrets and characters, so a secret assembled by the gate's
// own writing (a label, a link) is refused too. Only added lines: cost
// follows the change, not the size of log.md.
func Committed(rendered []byte, targetPath, commitMsg string, others ...Blob) []note.Finding {
	var out []note.Finding
	lim := newLimiter()
	r, err := scan(rendered)
	if err != nil {
		out = append(out, note.Finding{Rule: "scanner", Severity: note.Error,
			Message: fmt.Sprintf("the secret scanner could not run on the rendered note: %v", err)})
	}
	fs := r.Findings
	if r.Note == nil {
		fs = append(fs, note.Finding{Rule: "render-reparse", Severity: note.Error,
			Message: "the rendered note does not parse with the gate's own parser"})
	} else {
		for i := 0; i+1 < len(r.Note.Front.Content); i += 2 {
			k := r.Note.Front.Content[i]
			if note.IsGateOwned(k.Value) && k.Value != note.FoldKey(k.Value) {
				fs = append(fs, note.Finding{Rule: "gate-owned-case", Line: k.Line, Severity: note.Error,
					Message: fmt.Sprintf("gate-owned key %q at the top level in another spelling than the gate's own", clip(k.Value))})
			}
		}
		fs = append(fs, Links(r, path.Dir(targetPath))...)
	}
	for _, f := range fs {
		if f.Rule == "gate-owned" {
			continue // the gate writes `claimed:` itself
		}
		if f.Line > 0 {
			f.Message = fmt.Sprintf("rendered note line %d: %s", f.Line, f.Message)
			f.Line = 0
		}
		out = lim.add(out, f)
	}
	if bad := targetPathProblem(targetPath); bad != "" {
		out = lim.add(out, note.Finding{Rule: "target-path", Severity: note.Error,
			Message: "the target path " + bad})
	}
	out = textScan(out, lim, []byte(targetPath), 0, true)
	out = textScan(out, lim, []byte(commitMsg), 0, true)
	var err1, err2 error
	out, err1 = secretScan(out, lim, targetPath, func(int) int { return 0 }, "secret-path", " in the target path")
	out, err2 = secretScan(out, lim, commitMsg, func(int) int { return 0 }, "secret-commit-message", " in the commit message")
	if err1 != nil || err2 != nil {
		out = append(out, note.Finding{Rule: "scanner", Severity: note.Error,
			Message: "the secret scanner could not run on the target path or commit message"})
	}
	for _, b := range others {
		added := addedLines(b.Old, b.New)
		if added == "" {
			continue
		}
		where := " in " + b.Path + " as this commit writes it"
		out = textScan(out, lim, []byte(added), 0, true)
		var err error
		if out, err = secretScan(out, lim, added, func(int) int { return 0 }, "secret-commit-file", where); err != nil {
			out = append(out, note.Finding{Rule: "scanner", Severity: note.Error,
				Message: fmt.Sprintf("the secret scanner could not run on %s: %v", b.Path, err)})
		}
	}
	Sort(out)
	return out
}

// Blob is a file a commit writes besides the note: its content at HEAD (nil
// when new) and as the commit writes it.
type Blob struct {
	Path     string
	Old, New []byte
}

// addedLines is the text of the lines of nw that old does not have (as a
// multiset), in order.
//
// When nw is old with lines appended (old empty or ending in a newline, and
// a prefix of nw: a log or index page the gate appends to), the result is
// the same as addedLines of nothing and the appended text — every line of
// old's part of nw is matched by itself, and what is left of old's lines
// is the empty one after its last newline, as for an empty old — so only
// the appended text is split: O(change), not O(page).
func addedLines(old, nw []byte) string {
	if len(old) > 0 && old[len(old)-1] == '\n' && len(nw) >= len(old) && bytes.Equal(nw[:len(old)], old) {
		old, nw = nil, nw[len(old):]
	}
	return lineDifference(old, nw)
}

// lineDifference is the lines of nw not matched, one for one, by a line of
// old (a multiset difference), each followed by a newline.
func lineDifference(old, nw []byte) string {
	have := map[string]int{}
	for _, l := range strings.Split(string(old), "\n") {
		have[l]++
	}
	var b strings.Builder
	for _, l := range strings.Split(string(nw), "\n") {
		if have[l] > 0 {
			have[l]--
			continue
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// CheckCommit runs Committed and returns a *RefusedError when the commit
// must not happen (any Error finding), nil otherwise.
func CheckCommit(rendered []byte, targetPath, commitMsg string, others ...Blob) error {
	if fs := Committed(rendered, targetPath, commitMsg, others...); note.HasErrors(fs) {
		return &RefusedError{Path: targetPath, Findings: fs}
	}
	return nil
}

// targetPathProblem says what is wrong with a vault path the gate would
// write, or "".
func targetPathProblem(p string) string {
	switch {
	case p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p:
		return "is not a clean vault-relative path"
	case !strings.HasSuffix(p, ".md"):
		return "is not a Markdown note"
	case p == "90-inbox" || strings.HasPrefix(p, "90-inbox/"):
		return "is in the agent inbox"
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." || strings.HasPrefix(c, ".") {
			return "has a hidden or parent component"
		}
	}
	return ""
}

// RefusedError is what a commit path returns when Committed found an Error
// in what it was about to write: nothing was written, and the findings say
// why (a caller records them as the draft's rejection reasons).
type RefusedError struct {
	Path     string
	Findings []note.Finding
}

func (e *RefusedError) Error() string {
	var b strings.Builder
	p := e.Path
	for _, f := range e.Findings {
		if f.Rule == "secret-path" {
			p = "(the target path, which holds a secret)"
		}
	}
	fmt.Fprintf(&b, "refused to commit %s:", p)
	for _, f := range e.Findings {
		if f.Severity == note.Error {
			b.WriteString(" ")
			b.WriteString(f.String())
			b.WriteString(";")
		}
	}
	return strings.TrimSuffix(b.String(), ";")
}

// Sort orders findings by line, then rule, for stable receipts.
func Sort(fs []note.Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].Line != fs[j].Line {
			return fs[i].Line < fs[j].Line
		}
		return fs[i].Rule < fs[j].Rule
	})
}

// Mentions returns the first of needles (lower-case ASCII) that the note
// names, and the draft line where it does, or ("", 0). It reads what a
// reader of the note gets, not only the raw bytes: every frontmatter key
// and scalar value (YAML escapes decoded) except the values at the paths
// skip reports (keys folded and joined with "/", "-" for a sequence item:
// "sources/-", "sources/-/resource"), and each body line as written and
// with Markdown backslash escapes and HTML character references resolved;
// each normalised (NFKC, invisible characters dropped, lower case) and also
// letters and digits only, so `RULES\.md`, `R&#85;LES.md`, `ＲＵＬＥＳ.md`
// and `**RULES**.md` all name rules.md.
func Mentions(r Result, needles []string, skip func(path string) bool) (string, int) {
	if r.Note == nil {
		return "", 0
	}
	letters := make([]string, len(needles))
	for i, n := range needles {
		letters[i] = lettersOnly(n)
	}
	match := func(text string) string {
		t := normalize(text)
		lt := lettersOnly(t)
		for i, n := range needles {
			if strings.Contains(t, n) || len(letters[i]) >= 6 && strings.Contains(lt, letters[i]) {
				return n
			}
		}
		return ""
	}
	var found string
	var line int
	var walk func(n *yaml.Node, path string) bool
	walk = func(n *yaml.Node, path string) bool {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				p := note.FoldKey(k.Value)
				if path != "" {
					p = path + "/" + p
				}
				if walk(k, "") || walk(n.Content[i+1], p) {
					return true
				}
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				if walk(c, path+"/-") {
					return true
				}
			}
		case yaml.ScalarNode:
			if path != "" && skip != nil && skip(path) {
				return false
			}
			if m := match(n.Value); m != "" {
				found, line = m, n.Line
				return true
			}
		}
		return false
	}
	if walk(r.Note.Front, "") {
		return found, line
	}
	for i, l := range strings.Split(string(r.Note.Body), "\n") {
		if m := match(l); m != "" {
			return m, r.Note.BodyLine + i
		}
		if strings.ContainsAny(l, "&\\") {
			if m := match(html.UnescapeString(unescapePunct(l))); m != "" {
				return m, r.Note.BodyLine + i
			}
		}
	}
	return "", 0
}

// Encoded data in a draft: runs of at least minEncodedRun characters of the
// base64 (standard and URL-safe) or hex alphabets, summed. Hashes, keys and
// identifiers are shorter than a run or few; a pasted blob is not.
const (
	minEncodedRun   = 40
	maxEncodedBytes = 64 << 10
)

func encodedBytes(b []byte) int {
	total, run := 0, 0
	for _, c := range b {
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=' || c == '-' || c == '_' {
			run++
			continue
		}
		if run >= minEncodedRun {
			total += run
		}
		run = 0
	}
	if run >= minEncodedRun {
		total += run
	}
	return total
}
