package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedmem/fedmem/profiles"
	probewire "github.com/fedmem/fedmem/sandbox/probe"
	"github.com/fedmem/fedmem/vault"
)

func init() {
	subcommands = append(subcommands, newDoctorCmd)
}

// Check statuses.
const (
	statusOK   = "ok"
	statusWarn = "warn"
	statusFail = "fail"
)

// doctorCheck is one line of `fedmem doctor`. Keys are only ever added.
type doctorCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok | warn | fail
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// doctorReport is the JSON of `fedmem doctor --json` (docs/doctor.md).
type doctorReport struct {
	OK     bool           `json:"ok"`
	Runner string         `json:"runner"`
	Probe  map[string]any `json:"probe"`
	Checks []doctorCheck  `json:"checks"`
}

// probeFacts is `fedmem-run --probe --json` as doctor reads it: the probe's
// one wire type (sandbox/probe, types only, which cmd/fedmem may link).
type probeFacts = probewire.Probe

func newDoctorCmd() *cobra.Command {
	var asJSON bool
	var vaultFlag, ctrdAddr, agentUser string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check which sandbox guarantees hold on this machine",
		Long: `doctor runs "fedmem-run --probe --json" (fedmem-run next to this binary,
else on $PATH) to learn what the kernel offers the sandbox — user
namespaces, Landlock, seccomp, cgroups, whether this is a container — and,
with --vault, checks the vault's ownership, inbox and gate state. It prints
each check as ok, warn or fail with how to fix it (docs/doctor.md).

Exit codes: 0 every guarantee the default profile needs holds (warnings
allowed); 1 something needed is missing; 2 bad usage.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := runDoctorAs(vaultFlag, ctrdAddr, agentUser)
			if err != nil {
				return usageErrorf("%w", err)
			}
			if asJSON {
				if err := writeJSONOut(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "CHECK\tSTATUS\tDETAIL")
				for _, c := range rep.Checks {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, strings.ToUpper(c.Status), c.Detail)
					if c.Fix != "" && c.Status != statusOK {
						fmt.Fprintf(tw, "\t\tfix: %s\n", c.Fix)
					}
				}
				tw.Flush()
			}
			if !rep.OK {
				return &exitError{Code: exitFailure, Err: fmt.Errorf("doctor: a guarantee fedmem needs does not hold on this machine"), Silent: asJSON}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&ctrdAddr, "containerd-address", "", "containerd's socket for the containerd backend's check (default $CONTAINERD_ADDRESS, else /run/containerd/containerd.sock)")
	cmd.Flags().StringVar(&vaultFlag, "vault", os.Getenv("FEDMEM_VAULT"), "also check this vault (default $FEDMEM_VAULT)")
	cmd.Flags().StringVar(&agentUser, "agent-user", "", "root only: check the vault for this agent (NAME, UID or USER:GROUP, as fedmem-run --agent-user) instead of the default one")
	return cmd
}

// doctorAgent is the agent whose reach the vault checks judge: for a root
// caller fedmem-run's default agent (the probe's) or --agent-user; else
// the caller.
type doctorAgent struct {
	uid, gid int
	how      string
}

// parseAgentUser reads --agent-user as fedmem-run does: NAME or UID, then
// an optional :GROUP (a name or a gid).
func parseAgentUser(spec string) (doctorAgent, error) {
	u, g, hasG := strings.Cut(spec, ":")
	o, err := vault.ResolveUser(u)
	if err != nil {
		return doctorAgent{}, fmt.Errorf("--agent-user %q: %w", spec, err)
	}
	a := doctorAgent{uid: o.UID, gid: o.GID, how: "--agent-user " + spec}
	if hasG {
		grp, err := vault.ResolveGroup(g)
		if err != nil {
			return doctorAgent{}, fmt.Errorf("--agent-user %q: %w", spec, err)
		}
		a.gid = grp.GID
	}
	if a.uid == 0 || a.gid == 0 {
		return doctorAgent{}, fmt.Errorf("--agent-user %q: an agent never runs as uid or gid 0", spec)
	}
	return a, nil
}

func runDoctorAs(vaultFlag, ctrdAddr, agentUser string) (*doctorReport, error) {
	var agent *doctorAgent
	if agentUser != "" {
		if os.Geteuid() != 0 {
			return nil, errors.New("--agent-user: only root runs an agent as another user")
		}
		a, err := parseAgentUser(agentUser)
		if err != nil {
			return nil, err
		}
		agent = &a
	}
	rep := &doctorReport{Probe: map[string]any{}, Checks: []doctorCheck{}}
	add := func(c doctorCheck) { rep.Checks = append(rep.Checks, c) }
	runner, err := findRunner()
	if err != nil {
		add(doctorCheck{Name: "fedmem-run", Status: statusFail, Detail: err.Error(), Fix: "install fedmem-run next to fedmem (make install)"})
	} else {
		rep.Runner = runner
		raw, facts, err := probe(runner)
		if err != nil {
			add(doctorCheck{Name: "fedmem-run", Status: statusFail, Detail: err.Error(), Fix: "reinstall fedmem and fedmem-run from the same build"})
		} else {
			if agent == nil && os.Geteuid() == 0 && facts.Agent.Error == "" {
				agent = &doctorAgent{uid: facts.Agent.UID, gid: facts.Agent.GID, how: "fedmem-run's default agent (" + facts.Agent.Source + ")"}
				if g, ok := vault.AgentGroup(vaultFlag); ok && vault.DefaultAgentTakesGroup(facts.Agent.Source) {
					agent.gid = g // as fedmem-run gives it (vault.AgentGroup)
					agent.how += ", with the vault's agent group"
				}
			}
			rep.Probe = raw
			add(doctorCheck{Name: "fedmem-run", Status: statusOK, Detail: runner})
			for _, c := range kernelChecks(facts) {
				add(c)
			}
			for _, c := range backendChecks(runner, ctrdAddr) {
				add(c)
			}
			add(doctorCheck{Name: "nested_sandbox", Status: statusOK, Detail: profiles.NestedSandboxes,
				Fix: "let fedmem be the agent's sandbox: the codex profile runs codex -c sandbox_mode=\"danger-full-access\" (docs/profiles.md); leave Claude Code's sandbox setting off"})
		}
	}
	if vaultFlag != "" {
		for _, c := range vaultChecksFor(vaultFlag, agent) {
			add(c)
		}
	}
	rep.OK = !slices.ContainsFunc(rep.Checks, func(c doctorCheck) bool { return c.Status == statusFail })
	return rep, nil
}

func probe(runner string) (map[string]any, *probeFacts, error) {
	cmd := exec.Command(runner, "--probe", "--json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("%s --probe: %w", runner, err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return nil, nil, fmt.Errorf("%s --probe: %w: %s", runner, err, strings.TrimSpace(stderr.String()))
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		return nil, nil, fmt.Errorf("%s --probe: no answer within 30s", runner)
	}
	var raw map[string]any
	var facts probeFacts
	if err := json.Unmarshal(stdout.Bytes(), &raw); err != nil {
		return nil, nil, fmt.Errorf("%s --probe: bad JSON: %w", runner, err)
	}
	if err := json.Unmarshal(stdout.Bytes(), &facts); err != nil {
		return nil, nil, fmt.Errorf("%s --probe: bad JSON: %w", runner, err)
	}
	return raw, &facts, nil
}

// kernelChecks turns the probe's facts into checks. Needed (fail): user
// namespaces for the caller, seccomp — the default profile requires both.
func kernelChecks(f *probeFacts) []doctorCheck {
	var out []doctorCheck
	usernsFix := "allow user namespaces: sysctl user.max_user_namespaces=15000; on Debian/older Ubuntu sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 24.04+ sysctl kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile granting userns to fedmem-run; in a container, run it with --security-opt seccomp=unconfined or a runtime that allows nested user namespaces"
	if f.Userns {
		out = append(out, doctorCheck{Name: "userns", Status: statusOK, Detail: fmt.Sprintf("uid %d can create a user namespace", f.UID)})
	} else {
		out = append(out, doctorCheck{Name: "userns", Status: statusFail, Detail: "no user namespace for uid " + fmt.Sprint(f.UID) + ": " + f.UsernsError, Fix: usernsFix})
	}
	switch {
	case f.UsernsUnprivileged == nil:
		out = append(out, doctorCheck{Name: "userns_unprivileged", Status: statusWarn, Detail: "not tested: " + f.UsernsUnprivilegedError, Fix: "make fedmem-run executable by every user (mode 0755) and run doctor again"})
	case *f.UsernsUnprivileged:
		out = append(out, doctorCheck{Name: "userns_unprivileged", Status: statusOK, Detail: "unprivileged users can create user namespaces (agents can run as ordinary users)"})
	default:
		st := statusWarn // root can still run agents (as run_as users)
		if f.UID != 0 {
			st = statusFail
		}
		out = append(out, doctorCheck{Name: "userns_unprivileged", Status: st, Detail: "unprivileged users cannot create user namespaces: " + f.UsernsUnprivilegedError, Fix: usernsFix})
	}
	if v := f.Sysctls["kernel.apparmor_restrict_unprivileged_userns"]; v != "" && v != "0" {
		out = append(out, doctorCheck{Name: "apparmor_userns", Status: statusWarn, Detail: "kernel.apparmor_restrict_unprivileged_userns=" + v + ": AppArmor strips capabilities from unprivileged user namespaces", Fix: "sysctl kernel.apparmor_restrict_unprivileged_userns=0, or load an AppArmor profile with `userns,` for fedmem-run"})
	} else {
		out = append(out, doctorCheck{Name: "apparmor_userns", Status: statusOK, Detail: "no AppArmor restriction on user namespaces"})
	}
	if f.Seccomp {
		out = append(out, doctorCheck{Name: "seccomp", Status: statusOK, Detail: "seccomp filters available"})
	} else {
		out = append(out, doctorCheck{Name: "seccomp", Status: statusFail, Detail: f.SeccompError, Fix: "use a kernel built with CONFIG_SECCOMP_FILTER=y"})
	}
	if f.LandlockABI > 0 {
		out = append(out, doctorCheck{Name: "landlock", Status: statusOK, Detail: fmt.Sprintf("Landlock ABI %d", f.LandlockABI)})
	} else {
		out = append(out, doctorCheck{Name: "landlock", Status: statusWarn, Detail: "no Landlock: the second filesystem layer is missing; profiles that require landlock (strict) refuse to start", Fix: "use Linux ≥ 5.13 with CONFIG_SECURITY_LANDLOCK=y and landlock in the lsm= boot parameter"})
	}
	cg := fmt.Sprintf("cgroup %s, controllers %s", f.Cgroup.Version, strings.Join(f.Cgroup.Controllers, ","))
	// Per controller, the decision a run makes (fedmem-run's package
	// cgroups): which hierarchy, enforced how, or why not.
	for _, l := range f.Cgroup.Limits {
		name := "cgroup " + l.Controller
		if l.Enforce {
			out = append(out, doctorCheck{Name: name, Status: statusOK, Detail: fmt.Sprintf("on cgroup %s (host %s): limits.%s enforced by %s", l.Hierarchy, f.Cgroup.Version, l.Controller, l.Via)})
			continue
		}
		what := "refused unless limits.cgroup_optional, which runs without it"
		if l.Controller == "pids" {
			what = "RLIMIT_NPROC instead for a non-root agent; for a uid-0 agent refused unless limits.cgroup_optional"
		}
		fix := "run as root, or as a user with a systemd user session (systemd-run --user must work)"
		switch l.Hierarchy {
		case "v1":
			fix = "run as root (cgroup v1 is not delegated to users)"
		case "none":
			fix = "boot with the " + l.Controller + " controller available (cgroup v2: systemd.unified_cgroup_hierarchy=1)"
		}
		out = append(out, doctorCheck{Name: name, Status: statusWarn, Detail: fmt.Sprintf("on cgroup %s (host %s): limits.%s cannot be enforced here: %s; a profile that sets it is %s", l.Hierarchy, f.Cgroup.Version, l.Controller, l.Why, what), Fix: fix})
	}
	var can, cannot []string
	for _, l := range f.Cgroup.Limits {
		if l.Enforce {
			can = append(can, l.Controller)
		} else {
			cannot = append(cannot, l.Controller)
		}
	}
	switch {
	case len(f.Cgroup.Limits) > 0 && len(cannot) == 0:
		out = append(out, doctorCheck{Name: "cgroup", Status: statusOK, Detail: cg + ": limits " + strings.Join(can, ", ") + " are enforced by cgroups (see the per-controller cgroup checks)"})
	case len(f.Cgroup.Limits) > 0:
		out = append(out, doctorCheck{Name: "cgroup", Status: statusWarn, Detail: cg + ": limits " + strings.Join(cannot, ", ") + " cannot be enforced by cgroups here (the per-controller cgroup checks say why)", Fix: "run as root, or as a user with a systemd user session (systemd-run --user must work)"})
	case f.Cgroup.Writable && slices.Contains(f.Cgroup.Controllers, "pids") && slices.Contains(f.Cgroup.Controllers, "memory"):
		out = append(out, doctorCheck{Name: "cgroup", Status: statusOK, Detail: cg + ", writable: pids and memory limits are enforced by cgroups"})
	default:
		out = append(out, doctorCheck{Name: "cgroup", Status: statusWarn, Detail: cg + ", not usable: pids limits fall back to rlimits and memory limits are refused; " + f.Cgroup.Detail, Fix: "run under a delegated cgroup v2 (systemd-run --user --scope -p Delegate=yes …) or as root"})
	}
	out = append(out, identityChecks(f)...)
	if f.Container != "" {
		out = append(out, doctorCheck{Name: "container", Status: statusOK, Detail: "inside a " + f.Container + " container (" + strings.Join(f.ContainerHints, "; ") + "): the checks above are this container's view"})
	} else {
		out = append(out, doctorCheck{Name: "container", Status: statusOK, Detail: "not inside a container"})
	}
	return out
}

// identityChecks explain guarantee 5 for this caller: who the agent is on
// the host, whether its supplementary groups go, and whether writable
// binds keep their owner (docs/threat-model.md, "Host authority").
func identityChecks(f *probeFacts) []doctorCheck {
	a := f.Agent
	var out []doctorCheck
	switch {
	case a.Error != "":
		out = append(out, doctorCheck{Name: "agent_identity", Status: statusFail, Detail: a.Error, Fix: "name an unprivileged agent user: fedmem-run --agent-user USER, a profile's run_as, or useradd --system fedmem-agent"})
	case f.UID == 0:
		out = append(out, doctorCheck{Name: "agent_identity", Status: statusOK, Detail: fmt.Sprintf("a root caller's agent runs as host %s, %s (%s; fedmem-run --agent-user USER[:GROUP] names another), never uid 0; root's supplementary groups are dropped (setgroups) and fedmem's pid 1 keeps another uid, out of the agent's reach", vault.UserName(a.UID), vault.GroupName(a.GID), a.Source)})
		if a.Idmap {
			out = append(out, doctorCheck{Name: "idmap", Status: statusOK, Detail: fmt.Sprintf("%s can be idmapped: files the agent writes in a root-owned workdir stay root's on disk", a.IdmapDir)})
		} else {
			out = append(out, doctorCheck{Name: "idmap", Status: statusWarn, Detail: fmt.Sprintf("%s cannot be idmapped (%s): there the agent (uid %d) cannot write files its caller owns", a.IdmapDir, a.IdmapError, a.UID), Fix: "use Linux ≥ 5.12 and a filesystem that supports idmapped mounts (ext4, xfs, btrfs, tmpfs ≥ 6.3, overlayfs ≥ 5.19), or run the agent as the workdir's owner (sudo, --agent-user)"})
		}
	case len(a.ExtraGroups) == 0:
		out = append(out, doctorCheck{Name: "agent_identity", Status: statusOK, Detail: fmt.Sprintf("the agent runs as the caller, uid %d, with no supplementary group", f.UID)})
	case a.Newgidmap != "" && a.Subgid:
		out = append(out, doctorCheck{Name: "agent_identity", Status: statusOK, Detail: fmt.Sprintf("the agent runs as the caller, uid %d; its supplementary groups %v are dropped (newgidmap writes the gid map with a subordinate gid, so the sandbox's pid 1 may setgroups([]))", f.UID, a.ExtraGroups)})
	default:
		detail := fmt.Sprintf("the caller holds supplementary groups %v: an unprivileged caller cannot drop them inside its own user namespace (the kernel denies setgroups there) without newgidmap and a subordinate gid, so fedmem-run refuses to run its agents unless a profile says accept_risks: [keep-groups]; the vault's agent group is exempt (it reaches nothing inside)", a.ExtraGroups)
		if a.Newgidmap == "" {
			detail += "; newgidmap is not installed"
		} else {
			detail += "; newgidmap is installed but /etc/subgid gives this user no range"
		}
		out = append(out, doctorCheck{Name: "agent_identity", Status: statusWarn, Detail: detail, Fix: "install newgidmap (Debian/Ubuntu: uidmap) and give the user a range (usermod --add-subgids START-END USER), run agents as a user without those groups, start fedmem-run as root, or accept the risk by name in the profile"})
	}
	return out
}

// gateInGroup says whether the gate user uid can enter a folder of group
// gid: its primary group or a membership.
func gateInGroup(uid, gid int) bool {
	if uid == 0 {
		return true
	}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Gid == strconv.Itoa(gid) {
		return true
	}
	return vault.MemberOf(uid, gid)
}

// vaultChecksFor: the vault resolves, it is owned by a gate user other than
// the caller, the caller's agents can enter the inbox, the gate state exists.
// The inbox is judged for agent (nil: the caller itself).
func vaultChecksFor(dir string, agent *doctorAgent) []doctorCheck {
	v, err := vault.Resolve(dir)
	if err != nil {
		return []doctorCheck{{Name: "vault", Status: statusFail, Detail: err.Error(), Fix: "fedmem init " + dir}}
	}
	out := []doctorCheck{{Name: "vault", Status: statusOK, Detail: v}}
	me := os.Getuid()
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(v, ".git"), &st); err != nil {
		out = append(out, doctorCheck{Name: "vault_owner", Status: statusFail, Detail: err.Error()})
	} else if int(st.Uid) == me {
		out = append(out, doctorCheck{Name: "vault_owner", Status: statusWarn,
			Detail: fmt.Sprintf("the vault is owned by uid %d, the caller: agents started by this user are kept off the vault by the sandbox alone, and the gate runs as the same user", me),
			Fix:    "give the vault to a gate user: sudo fedmem init --gate-user fedmem-gate --agent-group agents " + v})
	} else {
		out = append(out, doctorCheck{Name: "vault_owner", Status: statusOK, Detail: fmt.Sprintf("owned by the gate user %s (caller %s)", vault.UserName(int(st.Uid)), vault.UserName(me))})
	}
	inbox := filepath.Join(v, vault.InboxDir)
	if err := syscall.Stat(inbox, &st); err != nil {
		out = append(out, doctorCheck{Name: "inbox", Status: statusFail, Detail: err.Error(), Fix: "fedmem init " + v})
	} else {
		mode := st.Mode & 0o7777
		groups, _ := os.Getgroups()
		who, gid, need := me, os.Getgid(), uint32(0o3)
		member := int(st.Gid) == gid || slices.Contains(groups, int(st.Gid))
		whoText := vault.UserName(me)
		if agent != nil {
			// A root caller's agent: root makes the session folder, the
			// agent must walk through the inbox to it (search), as a
			// member by its gid or by /etc/group (fedmem-run keeps that
			// one group).
			who, gid, need = agent.uid, agent.gid, 0o1
			member = int(st.Gid) == gid || vault.MemberOf(who, int(st.Gid))
			whoText = fmt.Sprintf("the agent, %s with group %s (%s),", vault.UserName(who), vault.GroupName(gid), agent.how)
		}
		ok := (int(st.Uid) == who && uint32(mode)>>6&need == need) ||
			(int(st.Uid) != who && member && uint32(mode)>>3&need == need) ||
			(int(st.Uid) != who && !member && uint32(mode)&need == need)
		detail := fmt.Sprintf("%s mode %04o, owner %s, group %s", inbox, mode, vault.UserName(int(st.Uid)), vault.GroupName(int(st.Gid)))
		switch {
		case !ok:
			out = append(out, doctorCheck{Name: "inbox", Status: statusFail, Detail: detail + fmt.Sprintf(": %s cannot reach a session folder there", whoText),
				Fix: vault.InboxFix(v, int(st.Gid), who, agent != nil)})
		case agent == nil && mode&0o2000 == 0 && int(st.Uid) != me && !gateInGroup(int(st.Uid), os.Getegid()):
			// An unprivileged caller's session folder (mode 2770) takes its
			// group from the caller when the inbox is not setgid: a gate
			// user outside that group cannot collect the drafts.
			gate := vault.UserName(int(st.Uid))
			out = append(out, doctorCheck{Name: "inbox", Status: statusFail, Detail: detail + fmt.Sprintf(": this caller's session folders get its group %s (mode 2770) and the gate user %s is not in it: the gate cannot collect the drafts (\"session …: permission denied\")", vault.GroupName(os.Getegid()), gate),
				Fix: fmt.Sprintf("give the vault an agent group holding you and the gate user: sudo fedmem init --gate-user %s --agent-group GROUP %s (or run agents as root, whose session folders take the inbox's group)", gate, v)})
		case mode&0o1000 == 0 && mode&0o022 != 0:
			out = append(out, doctorCheck{Name: "inbox", Status: statusWarn, Detail: detail + ": group/world-writable without the sticky bit, sessions can remove each other's drafts", Fix: "fedmem init " + v + " (repairs the mode)"})
		default:
			out = append(out, doctorCheck{Name: "inbox", Status: statusOK, Detail: detail})
		}
	}
	state := vault.GateStateDir(v)
	if fi, err := os.Stat(state); err == nil && fi.IsDir() {
		out = append(out, doctorCheck{Name: "gate_state", Status: statusOK, Detail: state})
	} else {
		out = append(out, doctorCheck{Name: "gate_state", Status: statusWarn, Detail: "no gate state directory " + state + ": the gate has not been set up for this vault", Fix: "fedmem init " + v + ", then run the gate (fedmem gate run --vault " + v + ")"})
	}
	out = append(out, syncCheck(v)...) // remote sync state (gate_status.go)
	return out
}
