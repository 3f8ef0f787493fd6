package profiles

import (
	"slices"
	"testing"

	"github.com/fedmem/fedmem/mounts/request"
)

// TestPlanRequest: the one conversion of a profile into the plan's input
// carries what the plan reads: cgroup_optional only for the limits the
// profile sets, home.show clean and without duplicates, the home's masks
// with home.mask, and state entries clean with their kind.
func TestPlanRequest(t *testing.T) {
	p := &Profile{Name: "p", Network: NetworkNone, Require: []string{"seccomp"}, Workdir: WorkdirPropose,
		Instructions: InstructionsReadOnly, Writable: []string{"/data"},
		Home:   Home{Mode: HomeAllowlist, Show: []string{"~/.gitconfig", ".gitconfig", ".local/bin/"}, Mask: []string{".secret/"}},
		State:  []State{{Path: "~/.cache/"}, {Path: ".claude.json", Seed: ".claude.json"}},
		Limits: Limits{Memory: 1 << 20, OptionalMemory: true, OptionalPids: true, OptionalCPU: true, CPU: 1, TmpBytes: 4096, WorkdirBytes: 8192}}
	r := p.PlanRequest()
	if r.Profile != "p" || r.Network != NetworkNone || !slices.Equal(r.Require, []string{"seccomp"}) || !r.ProposeWorkdir ||
		!r.InstructionsReadOnly || r.TmpBytes != 4096 || r.WorkdirBytes != 8192 || !slices.Equal(r.Writable, []string{"/data"}) {
		t.Errorf("PlanRequest = %+v", r)
	}
	if !slices.Equal(r.CgroupOptional, []string{"memory", "cpu"}) {
		t.Errorf("cgroup_optional %v: want memory and cpu (pids is not set)", r.CgroupOptional)
	}
	if r.Home.Mode != request.HomeAllowlist || !slices.Equal(r.Home.Show, []string{".gitconfig", ".local/bin"}) {
		t.Errorf("home %+v", r.Home)
	}
	if !slices.ContainsFunc(r.Home.Masks, func(m request.Mask) bool { return m.Path == ".secret" && m.Why == "secret: profile home.mask" }) ||
		len(r.Home.Masks) != len(HomeMasks(p)) {
		t.Errorf("masks %v, want HomeMasks(p) with .secret", r.Home.Masks)
	}
	want := []request.State{{Path: ".cache", Dir: true}, {Path: ".claude.json", Seed: ".claude.json"}}
	if !slices.Equal(r.State, want) {
		t.Errorf("state %+v, want %+v", r.State, want)
	}
}
