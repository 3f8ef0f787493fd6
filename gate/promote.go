package gate

import (
	"path"
	"strings"

	"github.com/fedmem/fedmem/gate/intake"
)

// ErrBusy is returned when another gate holds the state directory.
var ErrBusy = intake.ErrBusy

// ErrUntrustedStateDir is wrapped by Open's error when the state directory
// is not one the gate can trust (intake.PrepareStateDir says why).
var ErrUntrustedStateDir = intake.ErrUntrustedStateDir

// cleanSlug turns text into an ASCII slug: lower-case letters, digits and
// single dashes, at most 60 bytes.
func cleanSlug(s string) string {
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

// destPath computes where a note lands: folder from policy, slug from the
// title or the inbox file name, never a path from the draft.
func destPath(folder, title, name, sum string) string {
	slug := cleanSlug(title)
	if slug == "" {
		slug = cleanSlug(strings.TrimSuffix(name, path.Ext(name)))
	}
	if slug == "" {
		slug = "note-" + sum[:12]
	}
	if reservedBase[slug] {
		slug += "-note"
	}
	return folder + "/" + slug + ".md"
}
