package note

import "testing"

// TestUnclosedBracketLine: a draft whose frontmatter leaves a '[' open is
// refused at the line of that '[' (YAML reports it one line early).
func TestUnclosedBracketLine(t *testing.T) {
	_, fs := Parse([]byte("---\ntype: Fact\ntitle: x\nsources: [a.md, b.md\nstatus: draft\n---\nbody\n"))
	if len(fs) != 1 || fs[0].Rule != "yaml-syntax" || fs[0].Line != 4 {
		t.Fatalf("findings %+v; want one yaml-syntax at line 4 (the '[')", fs)
	}
}
