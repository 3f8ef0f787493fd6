package launch

import (
	"os"
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
//   - The workdir's own repository is usable too: a root caller's agent
//     runs as an unprivileged uid, and although the workdir is idmapped to
//     it, a repository around the workdir (the workdir is a folder of
//     root's checkout) stays root's, which Git refuses the same way. The
//     nearest folder at or above the workdir holding .git is named in
//     safe.directory after the vault. It is the caller's own checkout,
//     its .git read-only inside (guarantee 6), so the agent's Git trusts
//     exactly what the caller's Git trusts there.
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
	safe := []string{pl.Vault}
	if top := workdirRepo(pl.Workdir); top != "" && !within(top, pl.Vault) {
		safe = append(safe, top)
	}
	for _, dir := range safe {
		env = append(env, "GIT_CONFIG_KEY_"+strconv.Itoa(n)+"=safe.directory", "GIT_CONFIG_VALUE_"+strconv.Itoa(n)+"="+dir)
		n++
	}
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(n))
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

// workdirRepo is the nearest folder at or above workdir that holds .git
// (a directory, or a file of a linked worktree), or "" when there is none.
// It reads the host before the session starts: nothing of the agent's
// runs yet.
func workdirRepo(workdir string) string {
	if workdir == "" {
		return ""
	}
	for d := filepath.Clean(workdir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

// within reports whether p is dir or inside it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}
