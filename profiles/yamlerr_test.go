package profiles

import (
	"strings"
	"testing"
)

// A typo in a key is reported with the file, the line, the key as the
// profile writes it and the closest valid key, never a Go type name.
func TestUnknownKeySuggestsClosest(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"name: x\nnetwrok: none\n", `p.yaml:2: unknown key "netwrok" (did you mean "network"?)`},
		{"name: x\nhome:\n  writeable: [.x/]\n", `p.yaml:3: unknown key "home.writeable" (did you mean "writable"?)`},
		{"name: x\nlimits:\n  wall_tme: 1h\n", `p.yaml:3: unknown key "limits.wall_tme" (did you mean "wall_time"?)`},
		{"name: x\nzzzzzz: 1\n", `p.yaml:2: unknown key "zzzzzz" (valid: name,`},
		{"name: x\nstate:\n  - {path: .cache/, sead: x}\n", `did you mean "seed"?`},
	} {
		_, err := Parse("p.yaml", []byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.doc, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "profiles.") {
			t.Errorf("%q: error names a Go type: %v", c.doc, err)
		}
	}
}
