package decide

import (
	"path"
	"strings"
	"unicode/utf8"

	"github.com/fedmem/fedmem/gate/validate"
)

// Where a note lands and which paths are the gate's own pages.

// WithheldKey is the extension key of a withheld note.
const WithheldKey = "withheld"

// CleanSlug turns text into an ASCII slug: lower-case letters, digits and
// single dashes, at most 60 bytes.
func CleanSlug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		default:
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
				dash = true
			}
		}
		if b.Len() >= 60 {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}

// reservedBase are file names a promotion never writes (in any folder).
var reservedBase = map[string]bool{"index": true, "log": true, "agent": true, "rules": true, "policy": true, "readme": true}

// DestPath computes where a note lands: folder from policy, slug from the
// title or the inbox file name, never a path from the draft.
func DestPath(folder, title, name, sum string) string {
	slug := CleanSlug(title)
	if slug == "" {
		slug = CleanSlug(strings.TrimSuffix(name, path.Ext(name)))
	}
	if slug == "" {
		slug = "note-" + sum[:12]
	}
	if reservedBase[slug] {
		slug += "-note"
	}
	return folder + "/" + slug + ".md"
}

// SanitizeLine keeps text safe for one line of a commit header or message.
func SanitizeLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '<' || r == '>' || r == 0xFFFD {
			return '?'
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// Label makes display text safe inside a Markdown link in index/log files:
// one line, no link or emphasis syntax, at most 100 bytes.
func Label(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return ' '
		case strings.ContainsRune("[]()<>`*_|\\!#", r):
			return ' '
		}
		if _, bad := validate.Invisible(r); bad {
			// A space, never nothing: dropping a selector or zero-width
			// character would join what it split ("AKIAZ4\uFE0FXYQW…"
			// becomes a whole key in log.md and index.md).
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 100 {
		s = s[:100]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}
