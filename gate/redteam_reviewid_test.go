package gate

import (
	"testing"
)

// TestRedteamReviewPrefixMovesToAnotherDraft: a review prefix is resolved
// among the drafts held at the moment it is used, so a prefix that named
// draft A names another draft once A is decided. A reviewer approves A by
// a prefix of its id (unique: A is the only held draft); a draft author
// then submits B the same day (its id starts with the same UTC date); the
// reviewer's same command run again (shell history, a script, a double
// Enter) approves B, which nobody was shown. Git's abbreviated names never
// move to another object; a review id prefix must not either: once it
// names a decided draft it must fail, not pick the next one.
func TestRedteamReviewPrefixMovesToAnotherDraft(t *testing.T) {
	v := newVault(t)
	put(t, session(t, v, "s-1"), "a.md", "---\ntype: Fact\ntitle: Alpha\n---\na\n")
	g := openGate(t, v)
	a := decisionFor(t, once(t, g), "a.md")
	if a.State != StatePending {
		t.Fatalf("a not held: %+v", a)
	}
	prefix := a.ID[:8] // the UTC date: unique while a is the only held draft
	d, err := g.Approve(prefix, "alice")
	if err != nil || d.ID != a.ID {
		t.Fatalf("approve %q: %+v %v", prefix, d, err)
	}
	// The author's next draft, held, the same day.
	put(t, session(t, v, "s-2"), "b.md", "---\ntype: Fact\ntitle: Beta\n---\nb\n")
	b := decisionFor(t, once(t, g), "b.md")
	if b.State != StatePending || b.ID[:8] != prefix {
		t.Fatalf("b: %+v (want held, id starting %s)", b, prefix)
	}
	// The reviewer's command again.
	d, err = g.Approve(prefix, "alice")
	if err == nil && d != nil && d.ID == b.ID {
		t.Errorf("BREACH: `approve %s` (which named %s) approved %s, a draft the reviewer never saw", prefix, a.ID, b.ID)
	}
	if err == nil {
		t.Errorf("approve %q a second time: %+v, want an error (the prefix names the decided %s)", prefix, d, a.ID)
	}
}
