package note

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/vault"
)

const (
	// MaxFrontmatterBytes bounds the YAML between the two `---` lines.
	MaxFrontmatterBytes = 16 << 10
	// MaxDepth bounds nesting of mappings and sequences (the root mapping is 1).
	MaxDepth = 8
)

// Delimiter is the line that opens and closes the frontmatter.
const Delimiter = "---"

// Note is a parsed note: its frontmatter as a YAML mapping node (author text
// kept verbatim in each scalar) and its body bytes.
type Note struct {
	// Front is the root mapping of the frontmatter. Node lines are absolute
	// lines in the draft (already offset by the opening delimiter).
	Front *yaml.Node
	// Body is everything after the closing delimiter line.
	Body []byte
	// BodyLine is the 1-based line of the draft where Body starts.
	BodyLine int
}

var bom = []byte("\xef\xbb\xbf")

// Split applies the frontmatter grammar: the first line is exactly `---`, and
// the next line that is exactly `---` closes the frontmatter. It returns the
// YAML text, the body and the body's first line. A leading UTF-8 byte order
// mark is dropped.
func Split(b []byte) (yamlText, body []byte, bodyLine int, f *Finding) {
	b = bytes.TrimPrefix(b, bom)
	first, rest, ok := bytes.Cut(b, []byte("\n"))
	if string(first) != Delimiter || !ok {
		e := errf("frontmatter-open", 1, "the first line must be exactly %q (frontmatter is required: OKF needs `type`)", Delimiter)
		return nil, nil, 0, &e
	}
	line := 2
	off := 0
	for off <= len(rest) {
		end := bytes.IndexByte(rest[off:], '\n')
		var l []byte
		next := 0
		if end < 0 {
			l = rest[off:]
			next = len(rest) + 1
		} else {
			l = rest[off : off+end]
			next = off + end + 1
		}
		if string(l) == Delimiter {
			yamlText = rest[:off]
			if next > len(rest) {
				body = nil
			} else {
				body = rest[next:]
			}
			if len(yamlText) > MaxFrontmatterBytes {
				e := errf("frontmatter-size", 1, "frontmatter is %d bytes; the limit is %d", len(yamlText), MaxFrontmatterBytes)
				return nil, nil, 0, &e
			}
			// YAML also breaks lines at CR, NEL, LS and PS; allowing them
			// would make the parser's line numbers disagree with ours (and
			// hide lines from a reviewer). Frontmatter lines end in LF only.
			for i, brk := range [][]byte{[]byte("\r"), []byte("\u0085"), []byte("\u2028"), []byte("\u2029")} {
				if at := bytes.Index(yamlText, brk); at >= 0 {
					name := []string{"carriage return", "NEL (U+0085)", "line separator (U+2028)", "paragraph separator (U+2029)"}[i]
					e := errf("frontmatter-linebreak", 2+bytes.Count(yamlText[:at], []byte("\n")), "%s in frontmatter; lines end with LF only", name)
					return nil, nil, 0, &e
				}
			}
			return yamlText, body, line + 1, nil
		}
		if off > MaxFrontmatterBytes {
			e := errf("frontmatter-size", 1, "no closing %q within %d bytes", Delimiter, MaxFrontmatterBytes)
			return nil, nil, 0, &e
		}
		off = next
		line++
	}
	e := errf("frontmatter-unterminated", 1, "frontmatter opened on line 1 is never closed by a line that is exactly %q", Delimiter)
	return nil, nil, 0, &e
}

// Parse splits b and parses its frontmatter. Any Error finding means the note
// is unusable and the returned Note is nil.
func Parse(b []byte) (n *Note, findings []Finding) {
	yamlText, body, bodyLine, f := Split(b)
	if f != nil {
		return nil, []Finding{*f}
	}
	root, f := decodeOne(yamlText)
	if f != nil {
		return nil, []Finding{*f}
	}
	if root == nil { // empty frontmatter
		root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: 2}
	}
	if root.Kind != yaml.MappingNode {
		return nil, []Finding{errf("frontmatter-not-mapping", root.Line, "frontmatter must be a mapping of keys to values")}
	}
	findings = walk(root, 1, nil)
	if HasErrors(findings) {
		return nil, findings
	}
	return &Note{Front: root, Body: body, BodyLine: bodyLine}, findings
}

// decodeOne decodes exactly one YAML document and offsets node lines by one
// (the opening delimiter). A panic inside the YAML library becomes a finding.
func decodeOne(text []byte) (root *yaml.Node, f *Finding) {
	defer func() {
		if r := recover(); r != nil {
			e := errf("yaml-syntax", 1, "frontmatter YAML could not be parsed (%v)", r)
			root, f = nil, &e
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(text))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		e := yamlErr(err)
		return nil, &e
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := extra.Line + 1
		if err != nil {
			e := yamlErr(err)
			return nil, &e
		}
		e := errf("frontmatter-multidoc", line, "frontmatter must hold exactly one YAML document")
		return nil, &e
	}
	offsetLines(&doc, 1)
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

func yamlErr(err error) Finding {
	if l, m, ok := vault.YAMLErrorLine(err); ok {
		return errf("yaml-syntax", l+1, "invalid YAML: %s", m)
	}
	return errf("yaml-syntax", 1, "invalid YAML: %s", err.Error())
}

func offsetLines(n *yaml.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		offsetLines(c, by)
	}
}

// walk enforces the structural YAML rules on every node.
func walk(n *yaml.Node, depth int, out []Finding) []Finding {
	if n.Anchor != "" {
		return append(out, errf("yaml-anchor", n.Line, "YAML anchor &%s is not allowed (anchors and aliases enable alias bombs)", n.Anchor))
	}
	if n.Kind == yaml.AliasNode {
		return append(out, errf("yaml-alias", n.Line, "YAML alias is not allowed (anchors and aliases enable alias bombs)"))
	}
	if n.Style&yaml.TaggedStyle != 0 {
		return append(out, errf("yaml-tag", n.Line, "explicit YAML tag %q is not allowed", n.Tag))
	}
	if depth > MaxDepth {
		return append(out, errf("yaml-depth", n.Line, "frontmatter nests deeper than %d levels", MaxDepth))
	}
	switch n.Kind {
	case yaml.MappingNode:
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.Style&yaml.TaggedStyle != 0 || k.Anchor != "" {
				out = walk(k, depth+1, out)
				out = append(out, errf("yaml-key", k.Line, "mapping keys must be plain strings"))
				continue
			}
			if k.Value == "<<" && k.Style == 0 {
				out = append(out, errf("yaml-merge", k.Line, "YAML merge keys (<<) are not allowed"))
				continue
			}
			if first, dup := seen[k.Value]; dup {
				out = append(out, errf("yaml-duplicate-key", k.Line, "key %q appears twice (first on line %d)", k.Value, first))
				continue
			}
			seen[k.Value] = k.Line
			out = walk(v, depth+1, out)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			out = walk(c, depth+1, out)
		}
	case yaml.ScalarNode:
	default:
		out = append(out, errf("yaml-syntax", n.Line, "unexpected YAML node kind %d", n.Kind))
	}
	return out
}

// Get returns the value node of key in the root mapping, or nil.
func (n *Note) Get(key string) *yaml.Node { return MapGet(n.Front, key) }

// MapGet returns the value node of key in mapping m, or nil.
func MapGet(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// KeyLine returns the line of key in the root mapping, or 0.
func (n *Note) KeyLine(key string) int {
	for i := 0; i+1 < len(n.Front.Content); i += 2 {
		if n.Front.Content[i].Value == key {
			return n.Front.Content[i].Line
		}
	}
	return 0
}

// Scalar returns the author's text of a scalar key in the root mapping.
func (n *Note) Scalar(key string) (string, bool) {
	v := n.Get(key)
	if v == nil || v.Kind != yaml.ScalarNode {
		return "", false
	}
	return v.Value, true
}

// Render writes a note: `---`, the frontmatter mapping, `---`, the body.
func Render(front *yaml.Node, body []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(Delimiter + "\n")
	if front != nil && len(front.Content) > 0 {
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(front); err != nil {
			return nil, fmt.Errorf("render frontmatter: %w", err)
		}
		if err := enc.Close(); err != nil {
			return nil, fmt.Errorf("render frontmatter: %w", err)
		}
	}
	buf.WriteString(Delimiter + "\n")
	buf.Write(body)
	return buf.Bytes(), nil
}
