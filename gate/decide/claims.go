package decide

// Provenance-shaped content anywhere in a draft is a claim (issue 24).
// Top-level claims (status, verified, … in any letter case) are moved under
// `claimed:` by render; this file does the same below the top level — a
// gate-owned key or an authorship key nested in a custom key's mapping or
// in a `sources` entry (`author: human:alice`) — and holds a draft whose
// body opens a second frontmatter block carrying such keys, so a reader
// that takes the first YAML block it finds, or a nested `verified_by`, for
// provenance never sees the agent's word as the gate's.

import (
	"bytes"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/vault/note"
)

// nestedClaims finds provenance keys below the top level of the
// frontmatter and a second frontmatter block in the body. Each is a Flag:
// the draft claims what only the gate or a reviewer records.
func nestedClaims(n *note.Note) []note.Finding {
	var out []note.Finding
	for i := 0; i+1 < len(n.Front.Content); i += 2 {
		k, v := n.Front.Content[i], n.Front.Content[i+1]
		if note.IsClaimedKey(k.Value) {
			continue // top-level claims: their own rule
		}
		WalkNested(v, 1, func(key *yaml.Node) {
			if k.Value == "sources" && note.FoldKey(key.Value) == "fingerprint" {
				return // the gate's own is computed; the draft's is dropped (source-fingerprint)
			}
			if len(out) < 4 {
				out = append(out, flag("claims-authority", key.Line, "`%s` under `%s` claims what only the gate or a reviewer records; it is kept only under `claimed:` and the draft waits for a reviewer", clip(key.Value), clip(k.Value)))
			}
		})
	}
	if line := bodyFrontmatter(n.Body); line > 0 {
		out = append(out, flag("claims-authority", n.BodyLine+line-1, "the body opens a second frontmatter block with provenance keys (status, verified, author…): a reader could take it for the note's own; only a reviewer may let it through"))
	}
	return out
}

// WalkNested calls found for each provenance key in mappings under v.
func WalkNested(v *yaml.Node, depth int, found func(*yaml.Node)) {
	if depth > note.MaxDepth {
		return
	}
	switch v.Kind {
	case yaml.MappingNode:
		for j := 0; j+1 < len(v.Content); j += 2 {
			k := v.Content[j]
			if k.Value == "claimed" && v.Content[j+1].Kind == yaml.MappingNode {
				continue
			}
			if note.IsProvenanceKey(k.Value) {
				found(k)
				continue
			}
			WalkNested(v.Content[j+1], depth+1, found)
		}
	case yaml.SequenceNode:
		for _, e := range v.Content {
			WalkNested(e, depth+1, found)
		}
	}
}

// moveNestedClaims moves every provenance key below the top level of a
// rendered frontmatter (front) into a `claimed:` mapping beside it, in
// place. The top-level `claimed` and the gate's own fields are not walked.
func moveNestedClaims(front *yaml.Node, gateKeys map[string]bool) {
	for i := 0; i+1 < len(front.Content); i += 2 {
		k := front.Content[i].Value
		if k == "claimed" || gateKeys[k] {
			continue
		}
		// In `sources`, stampNote already put the entries' gate-owned
		// keys under their `claimed:` and wrote the gate's own
		// `fingerprint`: only authorship keys are left to move.
		moveIn(front.Content[i+1], 1, k == "sources")
	}
}

func moveIn(v *yaml.Node, depth int, authorshipOnly bool) {
	if depth > note.MaxDepth {
		return
	}
	switch v.Kind {
	case yaml.SequenceNode:
		for _, e := range v.Content {
			moveIn(e, depth+1, authorshipOnly)
		}
	case yaml.MappingNode:
		var kept, moved []*yaml.Node
		var claimed *yaml.Node
		for j := 0; j+1 < len(v.Content); j += 2 {
			k, val := v.Content[j], v.Content[j+1]
			switch {
			case k.Value == "claimed" && val.Kind == yaml.MappingNode && claimed == nil:
				claimed = val
				kept = append(kept, k, val)
			case note.IsAuthorshipKey(k.Value) || !authorshipOnly && note.IsGateOwned(k.Value):
				moved = append(moved, k, val)
			default:
				moveIn(val, depth+1, authorshipOnly)
				kept = append(kept, k, val)
			}
		}
		if len(moved) == 0 {
			return
		}
		if claimed == nil {
			claimed = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			kept = append(kept, Str("claimed"), claimed)
		}
		claimed.Content = append(claimed.Content, moved...)
		v.Content = kept
		v.Style = 0 // block style: the moved keys on their own lines
	}
}

// bodyFrontmatter returns the 1-based body line of a `---` line that opens
// a YAML block holding a provenance key before the next `---` or `...`
// (0: none). Linear in the body.
func bodyFrontmatter(body []byte) int {
	open := 0
	line := 0
	for len(body) > 0 {
		line++
		var l []byte
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			l, body = body[:i], body[i+1:]
		} else {
			l, body = body, nil
		}
		t := strings.TrimRight(string(bytes.TrimRight(l, "\r")), " \t")
		switch {
		case t == "---" || t == "...":
			if t == "---" {
				open = line
			} else {
				open = 0
			}
		case open > 0:
			if k, _, ok := strings.Cut(strings.TrimLeft(t, " -"), ":"); ok && note.IsProvenanceKey(strings.TrimSpace(k)) {
				return open
			}
		}
	}
	return 0
}
