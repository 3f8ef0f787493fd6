package launch

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fedmem/fedmem/mounts"
)

// agentEnv adds what makes everyday tools work inside the sandbox as they
// do outside, given the plan:
//
//   - The vault's Git history is readable: in the two-user layout the vault
//     belongs to the gate user, and Git refuses a repository another user
//     owns ("detected dubious ownership"). safe.directory for the vault is
//     set through GIT_CONFIG_COUNT/KEY_n/VALUE_n, the command scope, which
//     Git honours for safe.directory (a repository's own config could not
//     say it). It names the vault only, never "*".
//   - A workdir that is not a Git repository gets a read-only placeholder
//     at .git (guarantee 6: the agent must not create hooks a later `git
//     init` would keep). The Go tool sees that .git and stamps builds with
//     VCS data from it, which fails ("error obtaining VCS status"); there is
//     no repository to stamp, so GOFLAGS gains -buildvcs=false.
func agentEnv(pl *mounts.Plan, env []string) []string {
	if pl == nil {
		return env
	}
	n := 0
	if i := index(env, "GIT_CONFIG_COUNT"); i >= 0 {
		n, _ = strconv.Atoi(strings.TrimPrefix(env[i], "GIT_CONFIG_COUNT="))
		env = append(env[:i:i], env[i+1:]...)
	}
	env = append(env, "GIT_CONFIG_KEY_"+strconv.Itoa(n)+"=safe.directory", "GIT_CONFIG_VALUE_"+strconv.Itoa(n)+"="+pl.Vault,
		"GIT_CONFIG_COUNT="+strconv.Itoa(n+1))
	for _, m := range pl.Mounts {
		if m.Kind == mounts.Protected && m.Placeholder && m.Target == filepath.Join(pl.Workdir, ".git") {
			if i := index(env, "GOFLAGS"); i >= 0 {
				env[i] += " -buildvcs=false"
			} else {
				env = append(env, "GOFLAGS=-buildvcs=false")
			}
			break
		}
	}
	return env
}

func index(env []string, k string) int {
	for i, kv := range env {
		if strings.HasPrefix(kv, k+"=") {
			return i
		}
	}
	return -1
}
