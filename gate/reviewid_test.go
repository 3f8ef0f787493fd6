package gate

import (
	"errors"
	"strings"
	"testing"
)

// TestReviewIDByUniquePrefix: a reviewer may type a unique prefix of a
// decision id (or of its random tail); an ambiguous one is refused with the
// candidates, a too-short one is refused, and nothing is decided on a guess.
func TestReviewIDByUniquePrefix(t *testing.T) {
	v := newVault(t)
	sd := session(t, v, "s-1")
	put(t, sd, "a.md", "---\ntype: Fact\ntitle: Alpha\n---\na\n")
	put(t, sd, "b.md", "---\ntype: Fact\ntitle: Beta\n---\nb\n")
	g := openGate(t, v)
	ds := once(t, g)
	a, b := decisionFor(t, ds, "a.md"), decisionFor(t, ds, "b.md")
	if a.State != StatePending || b.State != StatePending {
		t.Fatalf("not held: %+v %+v", a, b)
	}
	t.Logf("ids %s %s", a.ID, b.ID)

	// Both ids start with the same UTC year: ambiguous, both listed.
	shared := a.ID[:MinIDPrefix]
	if _, err := g.Approve(shared, "alice"); !errors.Is(err, ErrAmbiguousID) || !strings.Contains(err.Error(), a.ID) || !strings.Contains(err.Error(), b.ID) {
		t.Fatalf("approve %q: %v; want an ambiguity error naming %s and %s", shared, err, a.ID, b.ID)
	}
	if _, _, err := g.Show(shared); !errors.Is(err, ErrAmbiguousID) {
		t.Fatalf("show %q: %v", shared, err)
	}
	if _, err := g.RejectPending(shared, "alice", "no"); !errors.Is(err, ErrAmbiguousID) {
		t.Fatalf("reject %q: %v", shared, err)
	}
	// Too short.
	if _, err := g.Approve(a.ID[:MinIDPrefix-1], "alice"); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Fatalf("3-character prefix: %v", err)
	}
	// Nothing held matches.
	if _, err := g.Approve("zzzz", "alice"); !errors.Is(err, ErrNotPending) {
		t.Fatalf("unmatched prefix: %v", err)
	}
	if _, err := g.Approve("../../etc", "alice"); !errors.Is(err, ErrNotPending) {
		t.Fatalf("path as id: %v", err)
	}
	if p, _ := g.Pending(); len(p) != 2 {
		t.Fatalf("a refused request decided something: %d pending", len(p))
	}

	// The shortest unique prefix of a's random tail (or of the whole id).
	tailA, tailB := a.ID[strings.LastIndexByte(a.ID, '-')+1:], b.ID[strings.LastIndexByte(b.ID, '-')+1:]
	n := MinIDPrefix
	for n < len(tailA) && (strings.HasPrefix(tailB, tailA[:n]) || strings.HasPrefix(b.ID, tailA[:n])) {
		n++
	}
	d, sb, err := g.Show(tailA[:n])
	if err != nil || d.ID != a.ID || !strings.Contains(string(sb), "Alpha") {
		t.Fatalf("show by tail prefix %q: %+v %v", tailA[:n], d, err)
	}
	d, err = g.Approve(tailA[:n], "alice")
	if err != nil || d.ID != a.ID || d.State != StatePromoted {
		t.Fatalf("approve by tail prefix %q: %+v %v", tailA[:n], d, err)
	}
	// Once a is decided, the shared prefix still names a and b: a prefix
	// never moves to the one draft left held (TestRedteamReviewPrefixMovesToAnotherDraft).
	if _, err := g.RejectPending(shared, "alice", "unclear"); !errors.Is(err, ErrAmbiguousID) || !strings.Contains(err.Error(), a.ID) {
		t.Fatalf("reject %q after a was decided: %v; want an ambiguity error naming %s", shared, err, a.ID)
	}
	// a's own prefix names a, decided: refused, saying so.
	if _, err := g.RejectPending(tailA[:n], "alice", "unclear"); !errors.Is(err, ErrNotPending) || !strings.Contains(err.Error(), "already promoted") {
		t.Fatalf("reject %q (a, promoted): %v; want 'already promoted'", tailA[:n], err)
	}
	d, err = g.RejectPending(b.ID, "alice", "unclear")
	if err != nil || d.ID != b.ID || d.State != StateRejected {
		t.Fatalf("reject b by its id after a was decided: %+v %v", d, err)
	}
	// show searches every decision: the shared prefix is ambiguous again.
	if _, _, err := g.Show(shared); !errors.Is(err, ErrAmbiguousID) {
		t.Fatalf("show %q over decided drafts: %v", shared, err)
	}
	d, _, err = g.Show(b.ID[:len(b.ID)-1])
	if err != nil || d.ID != b.ID {
		t.Fatalf("show by long prefix: %+v %v", d, err)
	}
}
