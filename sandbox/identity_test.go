package sandbox

import (
	"errors"
	"os/user"
	"strconv"
	"strings"
	"testing"
)

func TestChooseAgent(t *testing.T) {
	// A group name resolves wherever a gid is taken (issue 23): any
	// group of this host other than gid 0 will do.
	var anyGroup *user.Group
	for _, id := range []string{"1", "2", "3", "4", "100", "65534"} {
		if g, err := user.LookupGroupId(id); err == nil {
			anyGroup = g
			break
		}
	}
	if anyGroup == nil {
		t.Fatal("no group entry with a small gid on this host")
	}
	anyGroupID, _ := strconv.Atoi(anyGroup.Gid)
	users := map[string][2]int{"bob": {1000, 1000}, "fedmem-agent": {998, 997}, "root": {0, 0}}
	lookup := func(withAgent bool) func(string) (int, int, error) {
		return func(n string) (int, int, error) {
			if u, ok := users[n]; ok && (n != DefaultAgentUser || withAgent) {
				return u[0], u[1], nil
			}
			return 0, 0, errors.New("unknown user " + n)
		}
	}
	for _, tc := range []struct {
		name           string
		caller         int
		c              AgentChoice
		withAgent      bool
		uid, gid       int
		source, errHas string
	}{
		{name: "root default", caller: 0, uid: DefaultAgentID, gid: DefaultAgentID, source: "default"},
		{name: "root fedmem-agent", caller: 0, withAgent: true, uid: 998, gid: 997, source: "fedmem-agent"},
		{name: "root sudo", caller: 0, c: AgentChoice{SudoUID: "1000", SudoGID: "1001"}, uid: 1000, gid: 1001, source: "sudo"},
		{name: "root sudo by root", caller: 0, c: AgentChoice{SudoUID: "0", SudoGID: "0"}, uid: DefaultAgentID, gid: DefaultAgentID, source: "default"},
		{name: "root run_as wins", caller: 0, c: AgentChoice{RunAs: "64001", AgentUser: "bob", SudoUID: "1000"}, uid: 64001, gid: 64001, source: "run_as"},
		{name: "root agent-user", caller: 0, c: AgentChoice{AgentUser: "bob:5"}, uid: 1000, gid: 5, source: "agent-user"},
		{name: "root run_as root refused", caller: 0, c: AgentChoice{RunAs: "root"}, errHas: "never runs as host uid or gid 0"},
		{name: "root gid 0 refused", caller: 0, c: AgentChoice{RunAs: "64001:0"}, errHas: "never runs as host uid or gid 0"},
		{name: "root unknown group", caller: 0, c: AgentChoice{RunAs: "64001:nosuchgroup-fedmem"}, errHas: `group "nosuchgroup-fedmem": unknown user or group`},
		{name: "root group by name", caller: 0, c: AgentChoice{AgentUser: "bob:" + anyGroup.Name}, uid: 1000, gid: anyGroupID, source: "agent-user"},
		{name: "root unknown user", caller: 0, c: AgentChoice{AgentUser: "nosuch"}, errHas: "unknown user"},
		{name: "user is the caller", caller: 1000, uid: 1000, gid: 1000, source: "caller"},
		{name: "user ignores sudo env", caller: 1000, c: AgentChoice{SudoUID: "5"}, uid: 1000, gid: 1000, source: "caller"},
		{name: "user cannot name another", caller: 1000, c: AgentChoice{RunAs: "64001"}, errHas: "only root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uid, gid, src, err := ChooseAgent(tc.caller, tc.caller, tc.c, lookup(tc.withAgent))
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("got %d:%d %s, err %v; want an error with %q", uid, gid, src, err, tc.errHas)
				}
				return
			}
			if err != nil || uid != tc.uid || gid != tc.gid || src != tc.source {
				t.Fatalf("got %d:%d %q (%v), want %d:%d %q", uid, gid, src, err, tc.uid, tc.gid, tc.source)
			}
		})
	}
}
