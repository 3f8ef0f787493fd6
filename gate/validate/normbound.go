package validate

// Bounded Unicode normalisation (issue 24): the checks compare text in its
// NFKC form (injection phrases, contract mentions, keys, titles), and NFKC
// can make text much longer — U+FDFA alone becomes 18 letters, so 100
// drafts of 250 KiB of it cost a minute of CPU across the scans. A note is
// text for people to read; one whose normal form is more than
// MaxNFKCGrowth times its size is refused before any scan, with that
// reason, at the cost of one NFKC pass that stops as soon as the bound is
// passed.

import (
	"fmt"

	"golang.org/x/text/unicode/norm"

	"github.com/fedmem/fedmem/vault/note"
)

// MaxNFKCGrowth bounds how many times longer than the draft its NFKC form
// may be. Ordinary text in any script grows by a few percent at most;
// ligatures and fullwidth forms by 3× at worst.
const MaxNFKCGrowth = 4

// nfkcSlack lets a short draft hold a few expanding characters.
const nfkcSlack = 1024

// nfkcGrowth returns a rejection when b's NFKC form passes the bound, nil
// otherwise.
func nfkcGrowth(b []byte) *note.Finding {
	if isASCII(string(b)) {
		return nil
	}
	limit := MaxNFKCGrowth*len(b) + nfkcSlack
	var buf [8192]byte
	total, src := 0, b
	for len(src) > 0 {
		nDst, nSrc, err := norm.NFKC.Transform(buf[:], src, true)
		total += nDst
		src = src[nSrc:]
		if total > limit {
			return &note.Finding{Rule: "normalisation-growth", Line: 1, Severity: note.Error, Message: fmt.Sprintf(
				"the draft's Unicode compatibility form (NFKC) is more than %d times its %d bytes (characters such as U+FDFA expand to many letters): the gate compares text in that form and refuses to spend more", MaxNFKCGrowth, len(b))}
		}
		if err == nil || nDst == 0 && nSrc == 0 {
			break
		}
	}
	return nil
}
