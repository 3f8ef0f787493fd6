// Package note parses and renders the Markdown notes of a fedmem vault: OKF
// v0.2 frontmatter plus the fedmem extension keys (confidence, risk,
// supersedes, claimed).
//
// It promises:
//   - Parse never panics and never expands YAML aliases: a draft that uses
//     anchors, aliases, explicit tags, duplicate keys, nesting deeper than
//     MaxDepth or frontmatter larger than MaxFrontmatterBytes is refused with
//     a Finding that names the rule and the line;
//   - scalars are kept as the author's text (the yaml.Node value), never
//     coerced to booleans, numbers or times (no YAML 1.1 "yes"/"no" surprises);
//   - every Finding carries a rule id, a 1-based line in the draft and a
//     message a human can act on.
//
// The package does no I/O; it works on bytes the caller already holds.
package note
