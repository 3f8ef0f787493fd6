package validate

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/fedmem/fedmem/vault/note"
)

var (
	inlineLinkRe = regexp.MustCompile(`\]\(\s*<?([^)\s>]*)`)
	autoLinkRe   = regexp.MustCompile(`<([A-Za-z][A-Za-z0-9+.\-]{1,31}:[^>\s]*)>`)
	refDefRe     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)`)
	htmlAttrRe   = regexp.MustCompile(`(?i)\b(?:href|src|action|formaction)\s*=\s*["']?([^"'\s>]+)`)
	schemeRe     = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.\-]*):`)
)

// refusedSchemes run code or read local files when a viewer follows them.
var refusedSchemes = map[string]bool{"javascript": true, "vbscript": true, "data": true, "file": true}

// BodyLinks extracts link targets from Markdown (inline, autolinks,
// reference definitions) and HTML attributes, with their draft lines.
func BodyLinks(body []byte, firstLine int) []note.Ref {
	var refs []note.Ref
	for i, l := range strings.Split(string(body), "\n") {
		for _, re := range []*regexp.Regexp{inlineLinkRe, autoLinkRe, refDefRe, htmlAttrRe} {
			for _, m := range re.FindAllStringSubmatch(l, -1) {
				refs = append(refs, note.Ref{Value: m[1], Line: firstLine + i})
			}
		}
	}
	return refs
}

// Link checks one link target of a note that will live in directory dir
// (vault-relative, slash-separated): refused schemes are errors; a relative
// or vault-absolute path must stay inside the vault and out of hidden
// folders and the inbox.
func Link(r note.Ref, dir, rule string) *note.Finding {
	bad := func(format string, args ...any) *note.Finding {
		return &note.Finding{Rule: rule, Line: r.Line, Severity: note.Error, Message: fmt.Sprintf(format, args...)}
	}
	// Browsers drop ASCII whitespace and controls inside a scheme
	// ("java\tscript:"), so compare without them.
	squeezed := strings.Map(func(r rune) rune {
		if r <= 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, r.Value)
	if strings.Contains(squeezed, "&#") || strings.Contains(strings.ToLower(squeezed), "&colon") {
		return bad("link %q uses HTML character references; write it plainly", clip(r.Value))
	}
	if m := schemeRe.FindStringSubmatch(squeezed); m != nil {
		s := strings.ToLower(m[1])
		if refusedSchemes[s] {
			return bad("link scheme %q is refused (javascript:, vbscript:, data: and file: links are never accepted)", s+":")
		}
		return nil // http, https, mailto, …: outside the vault, nothing to resolve
	}
	if r.Value == "" || strings.HasPrefix(r.Value, "#") || strings.HasPrefix(r.Value, "//") {
		return nil
	}
	p := r.Value
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
