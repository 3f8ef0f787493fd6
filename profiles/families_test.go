package profiles

import (
	"slices"
	"strings"
	"testing"
)

// TestSocketFamilies: socket_families takes family names (with or without
// AF_, any case) and refuses an unknown one with the file, the line and the
// key; children add to their parent's list.
func TestSocketFamilies(t *testing.T) {
	p, err := Parse("p.yaml", []byte("name: x\nextends: default\nsocket_families: [vsock, AF_PACKET]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.SocketFamilyNumbers(); !slices.Equal(got, []uint32{40, 17}) {
		t.Fatalf("SocketFamilyNumbers = %v, want [40 17]", got)
	}
	for _, c := range []struct{ doc, want string }{
		{"name: x\nsocket_families:\n  - vsock\n  - vsok\n", `p.yaml:4: socket_families[1]: "vsok" is not an address family fedmem knows (known: alg,`},
		{"name: x\nsocket_families: [{a: b}]\n", `p.yaml:2: socket_families[0]: expected an address family name like vsock or packet, got a mapping`},
	} {
		_, err := Parse("p.yaml", []byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.doc, err, c.want)
		}
	}
	bad := &Profile{Name: "x", Network: NetworkNone, SocketFamilies: []SocketFamily{"nope"}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), `socket_families: "nope" is not an address family`) {
		t.Errorf("Validate: %v", err)
	}
}
