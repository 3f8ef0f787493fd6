package k8s

import (
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/fedmem/fedmem/profiles"
)

// TestRenderSocketFamilies: the rendered seccomp profile refuses AF_VSOCK
// (EAFNOSUPPORT) unless the profile's socket_families names it, as
// fedmem-run's own filter does.
func TestRenderSocketFamilies(t *testing.T) {
	refuses := func(r *Rendered, family uint64) bool {
		for _, s := range r.Seccomp.Profile.Syscalls {
			if !slices.Contains(s.Names, "socket") || s.ErrnoRet == nil || *s.ErrnoRet != 97 {
				continue
			}
			for _, a := range s.Args {
				if a.Index == 0 && a.Op == specs.OpMaskedEqual && family&a.Value == a.ValueTwo {
					return true
				}
			}
		}
		return false
	}
	o := Options{Image: "a", GateImage: "g", AgentUID: 7, AgentGID: 7, GateUID: 8, GateGID: 8}
	p, _, err := profiles.Load("ci")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Render(p, "", o)
	if err != nil {
		t.Fatal(err)
	}
	if !refuses(r, 40) || refuses(r, 2) || refuses(r, 1) {
		t.Errorf("ci: vsock refused %v (want true), inet %v, unix %v (want false)", refuses(r, 40), refuses(r, 2), refuses(r, 1))
	}
	p.SocketFamilies = []profiles.SocketFamily{"vsock"}
	if r, err = Render(p, "", o); err != nil {
		t.Fatal(err)
	}
	if refuses(r, 40) || !refuses(r, 17) {
		t.Errorf("socket_families [vsock]: vsock refused %v (want false), packet %v (want true)", refuses(r, 40), refuses(r, 17))
	}
}
