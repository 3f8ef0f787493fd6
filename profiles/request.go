package profiles

import "github.com/fedmem/fedmem/mounts/request"

// PlanRequest is what p asks of the sandbox, as the plan reads it
// (mounts.Build): the one place the profile schema becomes the plan's
// input, so that mounts never reads the profile.
func (p *Profile) PlanRequest() request.Request {
	r := request.Request{
		Profile:              p.Name,
		Network:              p.Network,
		Require:              p.Require,
		SocketFamilies:       p.SocketFamilyNumbers(),
		InstructionsReadOnly: p.Instructions == InstructionsReadOnly,
		UnixSockets:          p.UnixSockets,
		AcceptRisks:          p.AcceptRisks,
		TmpBytes:             int64(p.Limits.TmpBytes),
		ProposeWorkdir:       p.Propose(),
		WorkdirBytes:         int64(p.Limits.WorkdirBytes),
		Home: request.Home{
			Mode:     request.HomeMode(p.Home.Mode),
			Writable: p.Home.Writable,
			Show:     HomeShowRel(p),
		},
		Writable:     p.Writable,
		VaultVisible: p.Vault.Visible,
		VaultView:    p.Vault.View,
	}
	if p.Limits.OptionalMemory && p.Limits.Memory > 0 {
		r.CgroupOptional = append(r.CgroupOptional, "memory")
	}
	if p.Limits.OptionalPids && p.Limits.Pids > 0 {
		r.CgroupOptional = append(r.CgroupOptional, "pids")
	}
	if p.Limits.OptionalCPU && p.Limits.CPU > 0 {
		r.CgroupOptional = append(r.CgroupOptional, "cpu")
	}
	for _, m := range HomeMasks(p) {
		r.Home.Masks = append(r.Home.Masks, request.Mask{Path: m.Path, Why: m.Why})
	}
	for _, s := range p.State {
		r.State = append(r.State, request.State{Path: s.Clean(), Dir: s.IsDir(), Real: s.Real, Seed: s.Seed})
	}
	return r
}
