package mounts

import (
	"fmt"
	"strings"

	"github.com/fedmem/fedmem/vault"
)

// The workdir is granted to the agent writable (idmapped to the caller on
// disk: a root caller's agent writes root's files). A workdir is a
// project's folder; the operating system's own tree is none: the
// filesystem root, the folders of the Filesystem Hierarchy Standard that
// hold the system's programs, configuration and state, and the two that
// gather them (/usr, /var). A project may live in the FHS's own places
// for source (/usr/src, /usr/local/src) and anywhere under /var but its
// spool and package state, /opt, /srv, a home, /tmp. Rule workdir-system.

// systemTrees are refused as a workdir with all below them (but
// systemExempt).
var systemTrees = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin", "/sys", "/usr", "/var/spool", "/var/lib/dpkg", "/var/lib/apt", "/var/lib/systemd", "/var/cache/apt"}

// systemExempt are the project places under systemTrees.
var systemExempt = []string{"/usr/src", "/usr/local/src"}

// systemFolder says whether p (clean, absolute, links resolved) is the
// system's own: the root, a system tree or below one (but an exempt
// place), or a folder that holds a system tree (/var, /var/lib, /usr/local
// hold one; so does /).
func systemFolder(p string) (string, bool) {
	if p == "/" {
		return "/", true
	}
	for _, x := range systemExempt {
		if under(p, x) {
			return "", false
		}
	}
	for _, t := range systemTrees {
		if under(p, t) || under(t, p) {
			return t, true // p is, is in or holds a system tree
		}
	}
	return "", false
}

// checkWorkdir refuses a writable workdir that is the system's own.
func checkWorkdir(in Input) error {
	if vault.Within(in.Workdir, in.Vault) {
		return nil // read-only inside the vault
	}
	if t, ok := systemFolder(in.Workdir); ok {
		what := "the operating system's folder " + t
		if t != in.Workdir {
			what = fmt.Sprintf("%s, in the operating system's %s", in.Workdir, t)
			if under(t, in.Workdir) {
				what = fmt.Sprintf("%s, which holds the operating system's %s", in.Workdir, t)
			}
		}
		return fmt.Errorf("%w: the workdir is %s: the agent would write the host's own files there (a root caller's agent as root, through the idmapped workdir) (rule: workdir-system); run fedmem-run from a project folder or pass --workdir DIR", ErrPlan, what)
	}
	return nil
}

// under says whether p is dir or lies below it.
func under(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
