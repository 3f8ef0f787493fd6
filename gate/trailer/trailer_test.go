package trailer

import "testing"

// TestValue: the last line of a key wins, a key is matched whole (not a
// prefix of a longer one), and a message without it gives "".
func TestValue(t *testing.T) {
	msg := "fedmem: promote a.md\n\nFedmem-Draft: one\nFedmem-Draft-Sha256: abc\nFedmem-Draft: two \n"
	if got := Value(msg, Draft); got != "two" {
		t.Errorf("Value(Draft) = %q, want the last line's %q", got, "two")
	}
	if got := Value(msg, SHA256); got != "abc" {
		t.Errorf("Value(SHA256) = %q", got)
	}
	if got := Value(msg, Reviewer); got != "" {
		t.Errorf("Value(Reviewer) = %q, want none", got)
	}
	if !IsGate(msg) || IsGate("fix typo\n\nSigned-off-by: a <a@b>\n") || IsGate("Fedmem-Draft without a colon\n") {
		t.Errorf("IsGate misreads a gate or a human commit")
	}
}
