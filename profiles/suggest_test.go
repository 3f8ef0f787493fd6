package profiles

import "testing"

// A swap of two neighbouring letters is the commonest typo; it is one edit,
// so `titel` finds `title` and `decison`/`Decision` stay near.
func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"kitten", "sitting", 3},
		{"titel", "title", 1}, {"tpye", "type", 1}, {"ab", "ba", 1}, {"abc", "ca", 3},
		{"decison", "decision", 1}, {"profile", "profile", 0},
	} {
		if got := EditDistance(c.a, c.b); got != c.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	if got := Nearest("decison", []string{"Adapter", "Decision", "Fact"}); got != "Decision" {
		t.Errorf("Nearest(decison) = %q, want Decision", got)
	}
	if got := Nearest("zebra", []string{"Adapter", "Decision", "Fact"}); got != "" {
		t.Errorf("Nearest(zebra) = %q, want none", got)
	}
}
