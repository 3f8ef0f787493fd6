package sandbox

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"

	"github.com/fedmem/fedmem/vault"
)

// DefaultAgentUser is the account a root caller's agent runs as when
// nothing else names one (create it with `useradd --system fedmem-agent`).
const DefaultAgentUser = "fedmem-agent"

// DefaultAgentID is the uid and gid of a root caller's agent when neither
// run_as, --agent-user, sudo nor a fedmem-agent account names one: Debian
// reserves 65000–65533 and allocates none of it to an account, and it is
// not 65534 (nobody), which host daemons use.
const DefaultAgentID = 65533

// Identity says who the agent is on the host and how fedmem-run got there
// (the session report's layers.identity, `--explain`, `fedmem doctor`).
type Identity struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
	// Source: run_as, agent-user, sudo, fedmem-agent, default or caller.
	Source string `json:"source"`
	// Groups are the supplementary host groups the agent holds (normally
	// none).
	Groups []int `json:"groups"`
	// GroupsHow says how they went: "setgroups", "none held", or kept.
	GroupsHow string `json:"groups_how"`
	// InitUID is the host uid of the sandbox's pid 1 (fedmem's own
	// process); the agent can signal, prlimit or renice nothing of a
	// different uid.
	InitUID int `json:"init_uid"`
	// Writable says, for each writable bind, how file ownership was kept:
	// "same owner", "idmapped <owner>→<agent>" or "not idmapped: why".
	Writable map[string]string `json:"writable,omitempty"`
}

// AgentChoice is what names the agent's uid, in order of precedence.
type AgentChoice struct {
	RunAs     string // the profile's run_as: NAME, UID or UID:GID
	AgentUser string // fedmem-run --agent-user (same forms)
	SudoUID   string // $SUDO_UID of a root caller
	SudoGID   string // $SUDO_GID
}

// ChooseAgent picks the host uid and gid the agent runs as. A non-root
// caller's agent is the caller (naming anyone else is an error); a root
// caller's agent is never uid or gid 0: run_as, then --agent-user, then
// the sudo user, then the fedmem-agent account, then DefaultAgentID.
// lookup resolves a user name to its uid and primary gid.
func ChooseAgent(callerUID, callerGID int, c AgentChoice, lookup func(name string) (uid, gid int, err error)) (uid, gid int, source string, err error) {
	parse := func(what, spec string) (int, int, error) {
		u, g, hasG := strings.Cut(spec, ":")
		var uid, gid int
		if n, err := strconv.Atoi(u); err == nil {
			uid, gid = n, n
		} else {
			if uid, gid, err = lookup(u); err != nil {
				return 0, 0, fmt.Errorf("%s %q: %w", what, spec, err)
			}
		}
		if hasG {
			grp, err := vault.ResolveGroup(g)
			if err != nil {
				return 0, 0, fmt.Errorf("%s %q: %w", what, spec, err)
			}
			gid = grp.GID
		}
		if uid < 0 || gid < 0 {
			return 0, 0, fmt.Errorf("%s %q: negative id", what, spec)
		}
		return uid, gid, nil
	}
	switch {
	case c.RunAs != "":
		uid, gid, err = parse("run_as", c.RunAs)
		source = "run_as"
	case c.AgentUser != "":
		uid, gid, err = parse("--agent-user", c.AgentUser)
		source = "agent-user"
	case callerUID != 0:
		return callerUID, callerGID, "caller", nil
	case c.SudoUID != "" && c.SudoUID != "0":
		uid, gid, err = parse("SUDO_UID", c.SudoUID)
		if err == nil && c.SudoGID != "" {
			if gid, err = strconv.Atoi(c.SudoGID); err != nil {
				err = fmt.Errorf("SUDO_GID %q: %w", c.SudoGID, err)
			}
		}
		source = "sudo"
	default:
		if u, g, lerr := lookup(DefaultAgentUser); lerr == nil {
			uid, gid, source = u, g, "fedmem-agent"
		} else {
			uid, gid, source = DefaultAgentID, DefaultAgentID, "default"
		}
	}
	if err != nil {
		return 0, 0, "", err
	}
	if callerUID != 0 && uid != callerUID {
		return 0, 0, "", fmt.Errorf("%s names uid %d: only root can run an agent as another user", source, uid)
	}
	if callerUID == 0 && (uid == 0 || gid == 0) {
		return 0, 0, "", fmt.Errorf("%s names uid %d gid %d: an agent never runs as host uid or gid 0 (guarantee 5); name an unprivileged user", source, uid, gid)
	}
	return uid, gid, source, nil
}

// KeptGroups are the supplementary groups a root caller's agent (uid, gid)
// keeps: the vault's agent group (the inbox's group, inboxGid) when the
// agent's user is a member of it, and nothing else. Without it the agent
// could not walk through 90-inbox/ (mode 03770) to its own session folder:
// `fedmem-run --agent-user alice`, alice in the agents group, was refused
// with the very advice to join that group. Never group 0.
func KeptGroups(uid, gid, inboxGid int) []int {
	if inboxGid <= 0 || inboxGid == gid || !vault.MemberOf(uid, inboxGid) {
		return []int{}
	}
	return []int{inboxGid}
}

// lookupUser resolves a user name to its uid and primary gid.
func lookupUser(name string) (int, int, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, err
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return 0, 0, err
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return 0, 0, err
	}
	return uid, gid, nil
}

// describeIdentity says, for --explain, who this caller's agent would be
// when neither run_as nor --agent-user names it.
func describeIdentity() string {
	uid, gid := os.Getuid(), os.Getgid()
	a, g, src, err := ChooseAgent(uid, gid, AgentChoice{SudoUID: os.Getenv("SUDO_UID"), SudoGID: os.Getenv("SUDO_GID")}, lookupUser)
	if err != nil {
		return "identity: " + err.Error()
	}
	if uid == 0 {
		return fmt.Sprintf("identity: the agent runs as host %s, %s (%s; run_as or --agent-user override), never 0, with no supplementary group but the vault's agent group when its user is a member; writable binds owned by the caller are idmapped 0→%d where the filesystem allows; fedmem's pid 1 keeps uid 0, which the agent cannot signal, prlimit, renice or see", vault.UserName(a), vault.GroupName(g), src, a)
	}
	return fmt.Sprintf("identity: the agent runs as the caller, uid %d gid %d; supplementary groups other than the vault's agent group refuse the run unless the profile says accept_risks: [keep-groups]", a, g)
}
