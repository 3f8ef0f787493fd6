package gate

import (
	"time"

	"github.com/fedmem/fedmem/gate/readers"
)

// readersOf names the sessions whose read receipt names the note p (as
// `fedmem audit readers p` lists them, "maybe" readers included) and
// counts the ended sessions with no receipt. Reading the records costs
// O(sessions); it runs only when a note is withheld.
func (g *Gate) readersOf(p string) (readBy []string, unrecorded int) {
	sessions, _, err := readers.Load(g.vaultDir, g.state)
	if err != nil {
		return []string{}, 0
	}
	a := readers.Readers(sessions, p, time.Time{})
	readBy = []string{}
	for _, r := range a.Readers {
		readBy = append(readBy, r.Session)
	}
	return readBy, len(a.Unrecorded)
}
