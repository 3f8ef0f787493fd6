// Package probe is the wire type of `fedmem-run --probe --json`: what this
// kernel and caller offer the sandbox. fedmem-run fills it; `fedmem doctor`
// (cmd/fedmem, which must not link the sandbox backends) decodes it. Types
// only: the package links no other package (test/boundary:
// TestAdminPackagesStandAlone), so the admin tool may link it.
package probe

// Probe is the JSON of `fedmem-run --probe --json`. Keys are only ever
// added (docs/doctor.md lists them).
type Probe struct {
	Kernel string `json:"kernel"`
	Arch   string `json:"arch"`
	UID    int    `json:"uid"`
	// Userns: the caller could create a user namespace (a real clone).
	Userns      bool   `json:"userns"`
	UsernsError string `json:"userns_error,omitempty"`
	// UsernsUnprivileged: an unprivileged uid (nobody, when probing as
	// root; else the caller) could create one. Null when untested.
	UsernsUnprivileged      *bool  `json:"userns_unprivileged"`
	UsernsUnprivilegedError string `json:"userns_unprivileged_error,omitempty"`
	// Sysctls that govern user namespaces; absent when the kernel lacks one.
	Sysctls map[string]string `json:"sysctls"`
	// LandlockABI is the ABI version fedmem-run would enforce, 0: none.
	LandlockABI int `json:"landlock_abi"`
	// Seccomp: seccomp filters can be installed (PR_GET_SECCOMP works and
	// the kernel lists filter actions).
	Seccomp      bool   `json:"seccomp"`
	SeccompMode  int    `json:"seccomp_mode"` // this process's Seccomp: line (2: already filtered)
	SeccompError string `json:"seccomp_error,omitempty"`
	Cgroup       Cgroup `json:"cgroup"`
	// Container names the container runtime fedmem-run itself runs in
	// ("" none seen); ContainerHints says what gave it away.
	Container      string   `json:"container"`
	ContainerHints []string `json:"container_hints"`
	// Agent is who this caller's agent runs as (guarantee 5): for root the
	// uid sandbox.ChooseAgent picks without run_as or --agent-user.
	Agent AgentFacts `json:"agent"`
}

// AgentFacts: the agent's host identity for this caller.
type AgentFacts struct {
	UID    int    `json:"uid"`
	GID    int    `json:"gid"`
	Source string `json:"source"`
	Error  string `json:"error,omitempty"`
	// ExtraGroups are the caller's supplementary groups besides its primary
	// gid: dropped for root; kept for an unprivileged caller, whose runs
	// are then refused unless the profile says accept_risks: [keep-groups].
	ExtraGroups []int `json:"extra_groups"`
	// Newgidmap is the path of newgidmap, "" when not installed; Subgid:
	// /etc/subgid gives the caller a subordinate gid. Both: the caller's
	// groups are dropped (newgidmap leaves setgroups allowed).
	Newgidmap string `json:"newgidmap"`
	Subgid    bool   `json:"subgid"`
	// Idmap: the working directory's filesystem can be idmapped (root).
	Idmap      bool   `json:"idmap"`
	IdmapDir   string `json:"idmap_dir,omitempty"`
	IdmapError string `json:"idmap_error,omitempty"`
}

// Cgroup describes the cgroup hierarchy (for the pids and memory limits).
type Cgroup struct {
	// Version is "v2", "v1", "hybrid" (v1 with a v2 "unified" mount) or "none".
	Version string `json:"version"`
	// Path is this process's cgroup (the v2 one, else the v1 pids one).
	Path string `json:"path"`
	// Controllers available to the limits: pids, memory.
	Controllers []string `json:"controllers"`
	// Writable: fedmem-run can create a session cgroup (v2: in its own
	// cgroup; v1: in the pids/memory hierarchies).
	Writable bool   `json:"writable"`
	Detail   string `json:"detail,omitempty"`
	// Limits says, per controller (memory, pids, cpu), which hierarchy
	// holds it and whether fedmem-run can enforce that limit here for
	// this caller (Via), or why not (Why): the same decision a run makes.
	Limits []CgroupLimit `json:"limits"`
}

// CgroupLimit is one controller as the probe sees it.
type CgroupLimit struct {
	Controller string `json:"controller"`
	Hierarchy  string `json:"hierarchy"` // v2, v1, none
	Enforce    bool   `json:"enforce"`
	Via        string `json:"via,omitempty"`
	Why        string `json:"why,omitempty"`
}
