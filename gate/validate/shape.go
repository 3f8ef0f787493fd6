package validate

// The body's shape: what one Markdown parse of a note says about the kind of
// text it is (gate/decide/shape/shape.go judges it against the policy's auto_promote
// shapes). Nothing here decides: it records, for each block, what it is
// (prose, a heading, a list item, code, HTML) and, for prose, its text as a
// reader gets it (Markdown syntax gone, code spans and link labels kept in
// place), with the line it starts on.

import (
	"bytes"
	"strings"

	"github.com/yuin/goldmark/ast"
)

// Construct kinds a body may hold besides prose.
const (
	ShapeCodeBlock   = "code-block"   // fenced or indented code
	ShapeCodeSpan    = "code-span"    // inline code holding more than one word or shell syntax
	ShapeHTML        = "html"         // raw HTML, inline or as a block
	ShapeImage       = "image"        // an image (a viewer loads its URL)
	ShapeAutoLink    = "autolink"     // <https://…> or a bare e-mail address
	ShapeLinkURL     = "link-url"     // a link whose target has a scheme or starts with //
	ShapeOrderedList = "ordered-list" // numbered steps
	ShapeThematic    = "rule"         // a thematic break (a second frontmatter opens with ---)
	// Text a reader of the rendered note never sees but the next agent,
	// reading the file, does: a link's or an image's title, a reference
	// definition (its label and title are nowhere in the rendered prose).
	ShapeLinkTitle = "link-title"
	ShapeRefDef    = "reference-definition"
	// ShapeLinkPath: a vault link whose target is not a plain path (a
	// fragment, a query or an escape can carry text in any script).
	ShapeLinkPath = "link-path"
	// ShapeVaultLink: a vault link with a plain path (BodyShape.VaultLinks;
	// the gate checks it names a note at HEAD).
	ShapeVaultLink = "vault-link"
	// Markup a plain sentence does not need (issue 24, round 2): a block
	// quote, emphasis, a list inside a list item.
	ShapeQuote      = "block-quote"
	ShapeEmphasis   = "emphasis"
	ShapeNestedList = "nested-list"
)

// Construct is one non-prose construct of a body, with its draft line.
type Construct struct {
	Kind   string
	Line   int
	Detail string // e.g. the link target, clipped
}

// Prose is one block of text as a reader gets it.
type Prose struct {
	Text    string
	Line    int
	Heading bool
	// ListItem: the block is (the start of) a list item's text.
	ListItem bool
}

// BodyShape is what the parse says about the body's kind of text.
type BodyShape struct {
	Constructs []Construct
	Prose      []Prose
	// LinkTexts are the texts of the links (at most maxShapeItems): a
	// label of its own to a reader, read like a clause.
	LinkTexts []Prose
	// VaultLinks are the links whose target is a plain vault path, the
	// target unclipped in Detail (at most maxShapeItems).
	VaultLinks []Construct
	// Parsed is false when the body was too complex to parse (rule
	// markdown-complexity rejects it anyway).
	Parsed bool
}

// Shape returns the body shape of a validated note (nil before a parse).
func (r Result) Shape() *BodyShape {
	if r.body == nil {
		return nil
	}
	return &r.body.shape
}

// maxShapeItems bounds what is recorded (a body of 10 000 code spans is
// outside every shape after the first).
const maxShapeItems = 64

func (s *BodyShape) add(kind string, line int, detail string) {
	if len(s.Constructs) < maxShapeItems {
		s.Constructs = append(s.Constructs, Construct{kind, line, clip(detail)})
	}
}

// shapeOf walks a parsed body once.
func shapeOf(doc ast.Node, src []byte, li lineIndex) BodyShape {
	s := BodyShape{Parsed: true}
	var buf bytes.Buffer
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch x := n.(type) {
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			s.add(ShapeCodeBlock, blockLine(n, li), "")
			return ast.WalkSkipChildren, nil
		case *ast.HTMLBlock:
			s.add(ShapeHTML, blockLine(n, li), "")
			return ast.WalkSkipChildren, nil
		case *ast.ThematicBreak:
			s.add(ShapeThematic, blockLine(n, li), "")
		case *ast.Blockquote:
			s.add(ShapeQuote, blockLine(n, li), "")
		case *ast.List:
			if x.IsOrdered() {
				s.add(ShapeOrderedList, blockLine(n, li), "")
			}
			for p := n.Parent(); p != nil; p = p.Parent() {
				if p.Kind() == ast.KindListItem {
					s.add(ShapeNestedList, blockLine(n, li), "")
					break
				}
			}
		case *ast.Paragraph, *ast.TextBlock, *ast.Heading:
			buf.Reset()
			inlineText(&s, n, src, li, &buf)
			if len(s.Prose) < 4*maxShapeItems || buf.Len() > 0 {
				s.Prose = append(s.Prose, Prose{Text: buf.String(), Line: blockLine(n, li), Heading: n.Kind() == ast.KindHeading,
					ListItem: n.Parent() != nil && n.Parent().Kind() == ast.KindListItem})
			}
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return s
}

// inlineText writes the text of a block's inline content as a reader sees
// it and records the inline constructs outside prose.
func inlineText(s *BodyShape, blk ast.Node, src []byte, li lineIndex, buf *bytes.Buffer) {
	_ = ast.Walk(blk, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering || n == blk {
			return ast.WalkContinue, nil
		}
		switch x := n.(type) {
		case *ast.Text:
			buf.Write(x.Segment.Value(src))
			if x.SoftLineBreak() || x.HardLineBreak() {
				buf.WriteByte(' ')
			}
		case *ast.String:
			buf.Write(x.Value)
		case *ast.Emphasis:
			s.add(ShapeEmphasis, nodeLine(x, src, li), "")
		case *ast.CodeSpan:
			var code bytes.Buffer
			for c := x.FirstChild(); c != nil; c = c.NextSibling() {
				if t, ok := c.(*ast.Text); ok {
					code.Write(t.Segment.Value(src))
				}
			}
			if !identifierSpan(code.Bytes()) {
				s.add(ShapeCodeSpan, nodeLine(x, src, li), code.String())
			}
			buf.Write(code.Bytes())
			return ast.WalkSkipChildren, nil
		case *ast.RawHTML:
			s.add(ShapeHTML, nodeLine(x, src, li), "")
			return ast.WalkSkipChildren, nil
		case *ast.Image:
			s.add(ShapeImage, nodeLine(x, src, li), string(x.Destination))
			return ast.WalkSkipChildren, nil
		case *ast.AutoLink:
			s.add(ShapeAutoLink, autoLinkLine(x, src, li), string(x.URL(src)))
			buf.Write(x.Label(src))
			return ast.WalkSkipChildren, nil
		case *ast.Link:
			if len(s.LinkTexts) < maxShapeItems {
				s.LinkTexts = append(s.LinkTexts, Prose{Text: linkText(x, src), Line: nodeLine(x, src, li)})
			}
			if len(x.Title) > 0 {
				s.add(ShapeLinkTitle, nodeLine(x, src, li), string(x.Title))
			}
			if d := decodeDest(x.Destination); schemeRe.MatchString(d) || strings.HasPrefix(d, "//") || strings.HasPrefix(d, `\\`) {
				s.add(ShapeLinkURL, nodeLine(x, src, li), d)
			} else if !plainLinkPath(x.Destination) {
				s.add(ShapeLinkPath, nodeLine(x, src, li), d)
			} else if len(s.VaultLinks) < maxShapeItems {
				s.VaultLinks = append(s.VaultLinks, Construct{ShapeVaultLink, nodeLine(x, src, li), d})
			}
		}
		return ast.WalkContinue, nil
	})
}

// linkText is the text of a link's label as a reader sees it.
func linkText(l *ast.Link, src []byte) string {
	var b bytes.Buffer
	_ = ast.Walk(l, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch x := n.(type) {
		case *ast.Text:
			b.Write(x.Segment.Value(src))
			b.WriteByte(' ')
		case *ast.String:
			b.Write(x.Value)
		}
		return ast.WalkContinue, nil
	})
	return strings.TrimSpace(b.String())
}

// plainLinkPath: a vault link target as the shapes allow it, written as
// it is (no escapes): ASCII letters, digits and . _ - / only. No fragment:
// `#security-tests-are-optional` is a sentence in hyphens that no reader
// of the rendered note sees (the gate cannot tell an anchor from text
// without reading the target's headings; a shaped note links to a note).
func plainLinkPath(d []byte) bool {
	if len(d) == 0 || len(d) > 200 {
		return false
	}
	for _, c := range d {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-', c == '/':
		default:
			return false
		}
	}
	return true
}

// identifierSpan: a code span naming one thing (`max_retries`,
// `config.yaml`, `eu-west-1`), not a command: one token of letters, digits
// and . _ - / at most 64 bytes long.
func identifierSpan(b []byte) bool {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || len(b) > 64 {
		return false
	}
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-', c == '/':
		default:
			return false
		}
	}
	return b[0] != '-' && b[0] != '/' && b[0] != '.'
}

func blockLine(n ast.Node, li lineIndex) int {
	if n.Lines().Len() > 0 {
		return li.line(n.Lines().At(0).Start)
	}
	for c := n.FirstChild(); c != nil; c = c.FirstChild() {
		if c.Type() == ast.TypeBlock && c.Lines().Len() > 0 {
			return li.line(c.Lines().At(0).Start)
		}
		if t, ok := c.(*ast.Text); ok {
			return li.line(t.Segment.Start)
		}
	}
	return li.first
}
