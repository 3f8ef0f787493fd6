package vault

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// Owner is the OS identity that owns a vault's protected paths: the gate user.
// Name is empty when the identity was given as a number without a passwd
// entry (a dedicated uid on a container host, for example).
type Owner struct {
	UID  int    `json:"uid"`
	GID  int    `json:"gid"`
	Name string `json:"name,omitempty"`
}

// Group is an OS group, for the agents that share an inbox.
type Group struct {
	GID  int    `json:"gid"`
	Name string `json:"name,omitempty"`
}

// ErrUnknownID is returned when a user or group name does not resolve.
var ErrUnknownID = errors.New("unknown user or group")

// CurrentOwner returns the caller's real uid and primary gid, with the user
// name when the passwd database has one.
func CurrentOwner() Owner {
	o := Owner{UID: os.Getuid(), GID: os.Getgid()}
	if u, err := user.LookupId(strconv.Itoa(o.UID)); err == nil {
		o.Name = u.Username
	}
	return o
}

// ResolveUser turns NAME or a numeric UID into an Owner. A number resolves
// without a passwd entry; its gid is then the same number (the convention of
// a per-service user with a private group) unless the passwd entry says
// otherwise. A name must exist in the passwd database.
func ResolveUser(spec string) (Owner, error) {
	if spec == "" {
		return Owner{}, fmt.Errorf("user %q: empty name", spec)
	}
	if id, ok, err := parseID(spec); ok {
		if err != nil {
			return Owner{}, fmt.Errorf("user %q: %w", spec, err)
		}
		o := Owner{UID: id, GID: id}
		if u, err := user.LookupId(spec); err == nil {
			o.Name = u.Username
			if g, err := strconv.Atoi(u.Gid); err == nil {
				o.GID = g
			}
		}
		return o, nil
	}
	u, err := user.Lookup(spec)
	if err != nil {
		return Owner{}, fmt.Errorf("user %q: %w (give a numeric uid for a user without a passwd entry)", spec, ErrUnknownID)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return Owner{}, fmt.Errorf("user %q: passwd entry has non-numeric ids %q:%q", spec, u.Uid, u.Gid)
	}
	return Owner{UID: uid, GID: gid, Name: u.Username}, nil
}

// ResolveGroup turns NAME or a numeric GID into a Group. A number needs no
// group entry.
func ResolveGroup(spec string) (Group, error) {
	if spec == "" {
		return Group{}, fmt.Errorf("group %q: empty name", spec)
	}
	if id, ok, err := parseID(spec); ok {
		if err != nil {
			return Group{}, fmt.Errorf("group %q: %w", spec, err)
		}
		g := Group{GID: id}
		if gr, err := user.LookupGroupId(spec); err == nil {
			g.Name = gr.Name
		}
		return g, nil
	}
	gr, err := user.LookupGroup(spec)
	if err != nil {
		return Group{}, fmt.Errorf("group %q: %w (give a numeric gid for a group without an entry)", spec, ErrUnknownID)
	}
	gid, err := strconv.Atoi(gr.Gid)
	if err != nil {
		return Group{}, fmt.Errorf("group %q: group entry has non-numeric id %q", spec, gr.Gid)
	}
	return Group{GID: gid, Name: gr.Name}, nil
}

// parseID reports whether s is all ASCII digits (ok) and, if so, whether it is
// a usable id: at most 2^32-2, since (uid_t)-1 means "unchanged" to chown(2).
func parseID(s string) (id int, ok bool, err error) {
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false, nil
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n >= math.MaxUint32 {
		return 0, true, fmt.Errorf("id out of range (0..%d)", uint64(math.MaxUint32)-1)
	}
	return int(n), true, nil
}

// MemberOf reports whether the host user uid belongs to group gid: as its
// primary group or by /etc/group. A uid without a passwd entry belongs to
// none.
func MemberOf(uid, gid int) bool {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return false
	}
	if u.Gid == strconv.Itoa(gid) {
		return true
	}
	ids, err := u.GroupIds()
	if err != nil {
		return false
	}
	for _, g := range ids {
		if g == strconv.Itoa(gid) {
			return true
		}
	}
	return false
}

// UserName is "NAME (uid N)" for a uid with a passwd entry, else "uid N":
// messages show names beside ids.
func UserName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return fmt.Sprintf("%s (uid %d)", u.Username, uid)
	}
	return fmt.Sprintf("uid %d", uid)
}

// GroupName is "NAME (gid N)" for a gid with a group entry, else "gid N".
func GroupName(gid int) string {
	if g, err := user.LookupGroupId(strconv.Itoa(gid)); err == nil {
		return fmt.Sprintf("%s (gid %d)", g.Name, gid)
	}
	return fmt.Sprintf("gid %d", gid)
}

// InboxFix is the advice when an agent (agentUID) cannot enter the inbox
// of vaultDir, whose group is gid (the vault's agent group): what makes the
// agent a member, for a root caller (asRoot) or for the caller itself.
// fedmem-run's refusal and `fedmem doctor` give the same advice, and every
// form in it is one fedmem-run accepts as written (TestTwoUserFixesWork
// applies them).
func InboxFix(vaultDir string, gid, agentUID int, asRoot bool) string {
	group := strconv.Itoa(gid)
	if g, err := user.LookupGroupId(group); err == nil {
		group = g.Name
	}
	if !asRoot {
		return fmt.Sprintf("add this user to the group (as root: usermod -aG %s $USER, then log in again), or make the inbox everyone's (fedmem init %s without --agent-group: mode 01777)", group, vaultDir)
	}
	name := strconv.Itoa(agentUID)
	if u, err := user.LookupId(name); err == nil {
		name = u.Username
		return fmt.Sprintf("add the agent's user to the group (usermod -aG %s %s; fedmem-run keeps that one group for the agent), or give the agent the group as its own: fedmem-run --agent-user %s:%s", group, name, name, group)
	}
	return fmt.Sprintf("give the agent the group as its own: fedmem-run --agent-user %s:%s, or run it as a member (fedmem-run --agent-user USER, USER in %s)", name, group, group)
}

// DefaultAgentTakesGroup says whether an agent chosen by source (sandbox.ChooseAgent's
// source) runs with the vault's agent group (vault.AgentGroup) as its gid:
// root's own default agents, the account-less 65533 and the dedicated
// fedmem-agent account, which exist only to run agents. A root caller who
// made fedmem-agent (as doctor suggests) without adding it to the vault's
// group was refused with advice the default had not needed. A named user
// (run_as, --agent-user, the sudo user) keeps its own groups' rule
// (sandbox.KeptGroups). fedmem-run and fedmem doctor both apply it.
func DefaultAgentTakesGroup(source string) bool {
	return source == "default" || source == "fedmem-agent"
}

// AgentGroup is the vault's agent group: the group of an inbox that only
// its owner and that group may enter (fedmem init --agent-group, mode
// 03770), when it is neither gid 0 nor the gate user's own group (whose
// files are not the agents' business). A root caller's default agent
// runs with it as its gid (DefaultAgentTakesGroup).
func AgentGroup(vaultDir string) (int, bool) {
	fi, err := os.Stat(filepath.Join(vaultDir, InboxDir))
	if err != nil || !fi.IsDir() {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	mode := fi.Mode().Perm()
	if mode&0o007 != 0 || mode&0o010 == 0 || st.Gid == 0 {
		return 0, false // everyone's inbox, or root's group
	}
	if u, err := user.LookupId(strconv.Itoa(int(st.Uid))); err == nil {
		if u.Gid == strconv.Itoa(int(st.Gid)) {
			return 0, false // the gate user's primary group
		}
	} else if st.Gid == st.Uid {
		return 0, false // a gate uid without an account: its group is the same number by convention
	}
	return int(st.Gid), true
}
