package launch

import (
	"fmt"
	"github.com/fedmem/fedmem/mounts"
	"os"
	"path/filepath"
	"strings"
)

// hostPATH is the caller's PATH for the programs fedmem-run runs itself,
// outside the sandbox, as the caller (git and cp for a proposal,
// newgidmap, busctl, systemd-run): path without every entry the agent may
// write (writable, the plan's) — at or under one, before or after links —
// and without relative entries (they name the working directory). An
// earlier session's agent could leave bin/git in a workdir folder that
// the caller's PATH names (direnv's PATH_add bin), and the next
// fedmem-run ran it as root to write a proposal
// (TestHostProgramsNotFromAgentPath). Grant what is needed: those
// programs are the system's. dropped are the entries left out. The
// agent's own PATH is its environment's, unchanged.
func hostPATH(path string, writable []string) (kept string, dropped []string) {
	return hostPATHIn(path, mounts.ResolveRoots(writable))
}

// hostPATHIn is hostPATH for writable roots resolved once (the session's
// plan's, shared by its credentials and its own PATH).
func hostPATHIn(path string, roots mounts.Roots) (kept string, dropped []string) {
	return hostPATHOn(path, roots, nil)
}

// hostPATHOn is hostPATHIn with the entries' links resolved on the view
// l (nil: as they are now).
func hostPATHOn(path string, roots mounts.Roots, l *mounts.Links) (kept string, dropped []string) {
	var out []string
	for _, e := range filepath.SplitList(path) {
		if e == "" || !filepath.IsAbs(e) {
			dropped = append(dropped, e)
			continue
		}
		if _, _, in := roots.UnderIn(l, e); in {
			dropped = append(dropped, e)
			continue
		}
		out = append(out, e)
	}
	return strings.Join(out, string(filepath.ListSeparator)), dropped
}

// useHostPATH sets fedmem-run's own PATH to hostPATH's (the agent's
// environment was made before, from the caller's): every program
// fedmem-run looks up from here on comes from a folder the agent cannot
// write. It returns the entries left out. The entries' links are resolved
// on the view l (nil: as they are now).
func useHostPATH(roots mounts.Roots, l *mounts.Links) []string {
	kept, dropped := hostPATHOn(os.Getenv("PATH"), roots, l)
	if len(dropped) > 0 {
		os.Setenv("PATH", kept)
	}
	return dropped
}

// leftOnAgentPath adds to err, when a program named name lies in one of
// the PATH entries hostPATH dropped, that it was there and not used: the
// refusal names the program the agent (or an earlier one) wrote.
func leftOnAgentPath(err error, name string, dropped []string) error {
	if err == nil {
		return nil
	}
	for _, d := range dropped {
		p := filepath.Join(d, name)
		if fi, serr := os.Stat(p); serr == nil && fi.Mode().IsRegular() && filepath.IsAbs(d) {
			return fmt.Errorf("%w (%s is under %s, which the agent writes: fedmem-run does not run it)", err, p, d)
		}
	}
	return err
}
