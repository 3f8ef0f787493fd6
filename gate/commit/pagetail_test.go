package commit

import "testing"

// A page grows in place only from its newest version; appending to an
// older one (after a dropped group) copies, and no version handed out
// ever changes.
func TestPageTailsNeverChangeAVersion(t *testing.T) {
	pb := &pageBufs{m: map[string]*pageBuf{}}
	base := []byte("# Log\n")
	v1 := pb.extend("f/log.md", base, "a\n")
	v2 := pb.extend("f/log.md", v1, "b\n")
	if &v2[0] != &v1[0] {
		t.Errorf("the newest version was copied, not extended in place")
	}
	v3 := pb.extend("f/log.md", v1, "c\n") // v1 again: v2 is further
	v4 := pb.extend("f/log.md", v2, "d\n") // v2 again: v3's buffer is newest now
	v5 := pb.extend("f/log.md", v3, "e\n")
	for _, c := range []struct{ got, want string }{
		{string(base), "# Log\n"}, {string(v1), "# Log\na\n"}, {string(v2), "# Log\na\nb\n"},
		{string(v3), "# Log\na\nc\n"}, {string(v4), "# Log\na\nb\nd\n"}, {string(v5), "# Log\na\nc\ne\n"},
	} {
		if c.got != c.want {
			t.Errorf("a version changed: %q, want %q", c.got, c.want)
		}
	}
	for _, v := range [][]byte{v1, v2, v3, v4, v5} {
		if cap(v) != len(v) {
			t.Errorf("a version is handed out with room after it (cap %d, len %d): a reader's append would write into the page", cap(v), len(v))
		}
	}
}
