package validate

import (
	"bytes"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"golang.org/x/net/html"

	"github.com/fedmem/fedmem/vault/note"
)

var schemeRe = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.\-]*):`)

// refusedSchemes run code or read local files when a viewer follows them.
var refusedSchemes = map[string]bool{"javascript": true, "vbscript": true, "data": true, "file": true}

// mdParser is goldmark's CommonMark parser (no renderer: the gate only reads
// the tree). A goldmark parser is safe for concurrent use; each Parse gets
// its own context.
var mdParser = parser.NewParser(
	parser.WithBlockParsers(parser.DefaultBlockParsers()...),
	parser.WithInlineParsers(parser.DefaultInlineParsers()...),
	parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
)

// urlAttrs are HTML attributes whose value a browser loads or follows.
var urlAttrs = map[string]bool{
	"href": true, "src": true, "action": true, "formaction": true, "xlink:href": true,
	"poster": true, "background": true, "cite": true, "longdesc": true, "data": true,
	"codebase": true, "ping": true, "manifest": true, "icon": true, "lowsrc": true,
	"dynsrc": true, "srcset": true, "imagesrcset": true, "archive": true, "classid": true,
}

// refusedElements run code, load other documents, change where relative
// links point, or redirect the reader: none belongs in a note.
var refusedElements = map[string]bool{
	"script": true, "style": true, "iframe": true, "frame": true, "frameset": true,
	"object": true, "embed": true, "applet": true, "base": true, "meta": true,
	"link": true, "portal": true, "form": true, "noscript": true, "template": true,
}

// bodyScan is what one parse of a note's body yields: link targets to check
// against the note's folder, and findings about raw HTML.
type bodyScan struct {
	refs     []note.Ref
	findings []note.Finding
	shape    BodyShape // shape.go
}

// lineIndex maps byte offsets of a body to draft lines.
type lineIndex struct {
	starts []int
	first  int
}

func newLineIndex(b []byte, first int) lineIndex {
	st := []int{0}
	for i, c := range b {
		if c == '\n' {
			st = append(st, i+1)
		}
	}
	return lineIndex{st, first}
}

func (li lineIndex) line(off int) int {
	return li.first + sort.SearchInts(li.starts, off+1) - 1
}

// BodyLinks extracts link targets from Markdown (inline links and images,
// reference links, autolinks) and from raw HTML attributes, with their
// draft lines. Markdown is read by goldmark's CommonMark parser and HTML by
// golang.org/x/net/html's tokenizer, so what is checked is what a renderer
// would follow (multi-line links, reference definitions on the next line,
// character references and backslash escapes decoded).
func BodyLinks(body []byte, firstLine int) []note.Ref {
	return scanBody(body, firstLine).refs
}

func scanBody(body []byte, firstLine int) bodyScan {
	var bs bodyScan
	if len(body) == 0 {
		bs.shape.Parsed = true
		return bs
	}
	li := newLineIndex(body, firstLine)
	if msg := tooComplex(body); msg != "" {
		bs.findings = append(bs.findings, note.Finding{Rule: "markdown-complexity", Line: firstLine, Severity: note.Error,
			Message: msg + "; the gate cannot check it in bounded time, split or simplify the note"})
		return bs
	}
	pc := parser.NewContext()
	doc := mdParser.Parse(text.NewReader(body), parser.WithContext(pc))
	bs.shape = shapeOf(doc, body, li)
	lim := newLimiter()
	// Reference definitions, used or not (a renderer with other rules
	// might still link them); goldmark keeps no position for them, so the
	// line is where the label is defined.
	for _, ref := range pc.References() {
		line := li.first
		if i := bytes.Index(bytes.ToLower(body), append(bytes.ToLower(ref.Label()), ']', ':')); i >= 0 {
			line = li.line(i)
		}
		bs.refs = append(bs.refs, note.Ref{Value: decodeDest(ref.Destination()), Line: line})
		bs.shape.add(ShapeRefDef, line, string(ref.Label()))
	}
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch x := n.(type) {
		case *ast.Link:
			bs.refs = append(bs.refs, note.Ref{Value: decodeDest(x.Destination), Line: nodeLine(x, body, li)})
		case *ast.Image:
			bs.refs = append(bs.refs, note.Ref{Value: decodeDest(x.Destination), Line: nodeLine(x, body, li)})
		case *ast.AutoLink:
			bs.refs = append(bs.refs, note.Ref{Value: html.UnescapeString(string(x.URL(body))), Line: autoLinkLine(x, body, li)})
		case *ast.RawHTML:
			if x.Segments.Len() > 0 {
				start := x.Segments.At(0).Start
				stop := x.Segments.At(x.Segments.Len() - 1).Stop
				bs.scanHTML(body[start:stop], li.line(start), lim)
			}
		case *ast.HTMLBlock:
			lines := x.Lines()
			if lines.Len() > 0 {
				start, stop := lines.At(0).Start, lines.At(lines.Len()-1).Stop
				if x.HasClosure() {
					stop = x.ClosureLine.Stop
				}
				bs.scanHTML(body[start:stop], li.line(start), lim)
			}
		}
		return ast.WalkContinue, nil
	})
	return bs
}

// Limits on the Markdown shapes that make CommonMark parsing superlinear
// (goldmark takes seconds on 80 KiB of "[a](" or 40 KiB of nested "> "):
// far above what a note needs, low enough that one draft costs
// milliseconds.
const (
	maxBrackets   = 2000
	maxDelimiters = 10000
	maxQuoteDepth = 32
	// maxLinkScan bounds linkScanCost: about 40 ms of goldmark on 2 cores.
	// An ordinary note costs the length of its link targets (a 256 KiB
	// note with 3000 links: about 150 KB).
	maxLinkScan = 4 << 20
)

// tooComplex says why a body exceeds the limits above, or "".
func tooComplex(b []byte) string {
	if n := bytes.Count(b, []byte("[")); n > maxBrackets {
		return fmt.Sprintf("the body has %d '[' (the limit is %d)", n, maxBrackets)
	}
	if n := linkScanCost(b); n > maxLinkScan {
		return fmt.Sprintf("its links make a Markdown parser read %d bytes (the limit is %d): '[' … '](' with a link target that never ends", n, maxLinkScan)
	}
	if n := bytes.Count(b, []byte("*")) + bytes.Count(b, []byte("_")) + bytes.Count(b, []byte("~")); n > maxDelimiters {
		return fmt.Sprintf("the body has %d emphasis delimiters (the limit is %d)", n, maxDelimiters)
	}
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\n':
			depth = 0
			continue
		case '>':
			if depth >= 0 {
				depth++
				if depth > maxQuoteDepth {
					return fmt.Sprintf("block quotes nest deeper than %d", maxQuoteDepth)
				}
			}
		case ' ', '\t':
		default:
			depth = -1 // past the line's quote markers
		}
	}
	return ""
}

// nodeLine is the line of the first text under an inline node, else of the
// block that holds it.
func nodeLine(n ast.Node, src []byte, li lineIndex) int {
	found := -1
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if t, ok := c.(*ast.Text); ok && entering {
			found = t.Segment.Start
			return ast.WalkStop, nil
		}
		return ast.WalkContinue, nil
	})
	if found >= 0 {
		return li.line(found)
	}
	for p := n.Parent(); p != nil; p = p.Parent() {
		if p.Type() == ast.TypeBlock && p.Lines().Len() > 0 {
			return li.line(p.Lines().At(0).Start)
		}
	}
	return li.first
}

// autoLinkLine finds an autolink's label in the text of its block (goldmark
// keeps no public position for it).
func autoLinkLine(x *ast.AutoLink, src []byte, li lineIndex) int {
	for p := x.Parent(); p != nil; p = p.Parent() {
		if p.Type() == ast.TypeBlock && p.Lines().Len() > 0 {
			start := p.Lines().At(0).Start
			if i := bytes.Index(src[start:], x.Label(src)); i >= 0 {
				return li.line(start + i)
			}
			return li.line(start)
		}
	}
	return li.first
}

// decodeDest undoes what a Markdown renderer undoes in a link destination:
// backslash escapes of ASCII punctuation and HTML character references.
func decodeDest(b []byte) string {
	return html.UnescapeString(unescapePunct(string(b)))
}

func unescapePunct(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

// scanHTML tokenizes raw HTML as a browser would (attribute values decoded)
// and records link targets and refused constructs.
func (bs *bodyScan) scanHTML(src []byte, line int, lim *limiter) {
	z := html.NewTokenizer(bytes.NewReader(src))
	z.SetMaxBuf(len(src) + 1)
	add := func(rule string, sev note.Severity, format string, args ...any) {
		bs.findings = lim.add(bs.findings, note.Finding{Rule: rule, Line: line, Severity: sev, Message: fmt.Sprintf(format, args...)})
	}
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return
		}
		raw := z.Raw()
		tokLine := line
		switch tt {
		case html.CommentToken:
			if c := strings.TrimSpace(string(z.Text())); c != "" {
				add("html-comment", note.Flag, "an HTML comment is hidden when the note is rendered but read by agents; a human must review it")
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			tag := string(name)
			if refusedElements[tag] {
				add("html", note.Error, "HTML element <%s> is not allowed in a note (it runs code, loads or redirects to another document, or hides content)", tag)
			}
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				key, val := string(k), string(v)
				switch {
				case strings.HasPrefix(key, "on"):
					add("html", note.Error, "HTML event handler attribute %s= on <%s> is not allowed (it runs code)", clip(key), tag)
				case key == "srcdoc":
					add("html", note.Error, "HTML attribute srcdoc= on <%s> is not allowed (it embeds another document)", tag)
				case key == "http-equiv":
					add("html", note.Error, "HTML attribute http-equiv= is not allowed (refresh redirects the reader)")
				case key == "style":
					st := strings.ToLower(strings.Join(strings.Fields(val), ""))
					if strings.Contains(st, "url(") || strings.Contains(st, "expression(") || strings.Contains(st, "@import") || strings.Contains(st, "javascript:") {
						add("html", note.Error, "HTML style= on <%s> loads a resource or runs code; not allowed", tag)
					} else if strings.Contains(st, "display:none") || strings.Contains(st, "visibility:hidden") || strings.Contains(st, "font-size:0") || strings.Contains(st, "opacity:0") {
						add("hidden-text", note.Flag, "HTML style= on <%s> hides text from the rendered note; a human must review it", tag)
					}
				case key == "hidden":
					add("hidden-text", note.Flag, "HTML hidden attribute on <%s> hides text from the rendered note; a human must review it", tag)
				case urlAttrs[key]:
					if key == "srcset" || key == "imagesrcset" {
						for _, c := range strings.Split(val, ",") {
							if f := strings.Fields(c); len(f) > 0 {
								bs.refs = append(bs.refs, note.Ref{Value: f[0], Line: tokLine})
							}
						}
					} else {
						bs.refs = append(bs.refs, note.Ref{Value: val, Line: tokLine})
					}
				default:
					if s := squeeze(val); refusedScheme(s) != "" {
						bs.refs = append(bs.refs, note.Ref{Value: val, Line: tokLine})
					}
				}
			}
		}
		line += bytes.Count(raw, []byte("\n"))
	}
}

// squeeze drops what browsers drop inside a URL's scheme: ASCII whitespace
// and control characters ("java\tscript:").
func squeeze(s string) string {
	return strings.Map(func(r rune) rune {
		if r <= 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

func refusedScheme(squeezed string) string {
	if m := schemeRe.FindStringSubmatch(squeezed); m != nil && refusedSchemes[strings.ToLower(m[1])] {
		return strings.ToLower(m[1])
	}
	return ""
}

// Link checks one link target of a note that will live in directory dir
// (vault-relative, slash-separated): refused schemes are errors; a relative
// or vault-absolute path must stay inside the vault and out of hidden
// folders and the inbox. Character references are decoded once more here
// (a value that still holds one after the parser decoded it is refused), so
// a double-encoded scheme cannot slip through either.
func Link(r note.Ref, dir, rule string) *note.Finding {
	bad := func(format string, args ...any) *note.Finding {
		return &note.Finding{Rule: rule, Line: r.Line, Severity: note.Error, Message: fmt.Sprintf(format, args...)}
	}
	squeezed := squeeze(r.Value)
	if strings.IndexByte(squeezed, '&') >= 0 {
		dec := squeeze(html.UnescapeString(squeezed))
		if dec != squeezed {
			if s := refusedScheme(dec); s != "" {
				return bad("link scheme %q is refused (javascript:, vbscript:, data: and file: links are never accepted)", s+":")
			}
			return bad("link %q uses HTML character references; write it plainly", clip(r.Value))
		}
	}
	if m := schemeRe.FindStringSubmatch(squeezed); m != nil {
		s := strings.ToLower(m[1])
		if refusedSchemes[s] {
			return bad("link scheme %q is refused (javascript:, vbscript:, data: and file: links are never accepted)", s+":")
		}
		return nil // http, https, mailto, …: outside the vault, nothing to resolve
	}
	v := strings.TrimSpace(r.Value)
	if v == "" || strings.HasPrefix(v, "#") || strings.HasPrefix(v, "//") {
		return nil
	}
	p := v
	if i := strings.IndexAny(p, "#?"); i >= 0 {
		p = p[:i]
	}
	dec, err := url.PathUnescape(p)
	if err != nil {
		return bad("link %q is not a valid path: %v", clip(r.Value), err)
	}
	if strings.Contains(dec, "\\") {
		return bad("link %q contains a backslash; use '/'", clip(r.Value))
	}
	var target string
	if strings.HasPrefix(dec, "/") {
		target = path.Clean(strings.TrimLeft(dec, "/"))
	} else {
		target = path.Join(dir, dec)
	}
	if target == ".." || strings.HasPrefix(target, "../") {
		return bad("link %q resolves outside the vault", clip(r.Value))
	}
	for _, c := range strings.Split(target, "/") {
		if strings.HasPrefix(c, ".") && c != "." {
			return bad("link %q points into a hidden path (%s)", clip(r.Value), c)
		}
	}
	if target == "90-inbox" || strings.HasPrefix(target, "90-inbox/") {
		return bad("link %q points into the agent inbox", clip(r.Value))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// linkScanCost estimates, in linear time, how many bytes a CommonMark parser
// reads trying link targets. Each "](" that has an opening '[' before it
// makes the parser read a destination (up to whitespace; "<…" up to '>' or a
// line break) and, after whitespace, a title ('"', '\” or '(' up to its
// closer), and when that fails the opener is dropped: 1999 '[' and then
// "a](" repeated to 250 KiB make goldmark read the rest of the body once per
// opener, seconds per draft, while 2000 '[' in ordinary links cost
// milliseconds. Each attempt is charged from its "](" to where its
// destination and title end (or the body ends): an upper bound of what the
// parser reads for it, summed.
func linkScanCost(b []byte) int {
	var attempts []int // offset just after "](", for each attempt
	openers := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '[':
			openers++
		case ']':
			if openers > 0 {
				openers--
				if i+1 < len(b) && b[i+1] == '(' {
					attempts = append(attempts, i+2)
				}
			}
		}
	}
	if len(attempts) == 0 {
		return 0
	}
	// Sorted positions of each byte that can end a destination or title.
	var ws, nl, gt, dq, sq, rp []int
	for i, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			ws = append(ws, i)
			if c == '\n' {
				nl = append(nl, i)
			}
		case '>':
			gt = append(gt, i)
		case '"':
			dq = append(dq, i)
		case '\'':
			sq = append(sq, i)
		case ')':
			rp = append(rp, i)
		}
	}
	next := func(pos []int, from int) int {
		if k := sort.SearchInts(pos, from); k < len(pos) {
			return pos[k]
		}
		return len(b)
	}
	total := 0
	for _, a := range attempts {
		// Destination: skip leading whitespace, then up to its end.
		d := a
		for d < len(b) && (b[d] == ' ' || b[d] == '\t' || b[d] == '\n') {
			d++
		}
		end := next(ws, d)
		if d < len(b) && b[d] == '<' {
			end = min(next(gt, d), next(nl, d))
		}
		// Title: after whitespace, up to its closer.
		t := end
		for t < len(b) && (b[t] == ' ' || b[t] == '\t' || b[t] == '\n') {
			t++
		}
		if t < len(b) {
			switch b[t] {
			case '"':
				end = next(dq, t+1)
			case '\'':
				end = next(sq, t+1)
			case '(':
				end = next(rp, t+1)
			}
		}
		total += end - a
		if total > 1<<40 {
			break
		}
	}
	return total
}
