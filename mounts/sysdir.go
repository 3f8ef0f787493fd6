package mounts

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fedmem/fedmem/mounts/request"
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

// checkWorkdir refuses a writable workdir that is the system's own
// (workdir-system), another account's home or a folder holding one
// (workdir-other-home), or a home's dot-entry or a folder inside one
// (workdir-home-config). The home rules leave a proposed workdir
// (`workdir: propose`) alone: nothing the agent writes there reaches the
// folder before the user applies it.
func checkWorkdir(rq request.Request, in Input) error {
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
	if rq.ProposeWorkdir {
		return nil
	}
	return checkWorkdirHomes(in)
}

// checkWorkdirHomes is the two home rules of checkWorkdir. The caller's
// own home may be the workdir (its top level is the allow-list of rule
// home-config-readonly); any other home may not, nor may a folder that
// holds one: the allow-list guards $HOME alone, so another home's
// dot-entries (root's .bashrc under a HOME elsewhere, a user's
// .ssh/authorized_keys) would be the agent's to write, as their owner
// for a root caller. A dot-entry of any home is configuration that the
// home's owner runs later (~/.config/systemd/user, ~/.ssh, autostart).
func checkWorkdirHomes(in Input) error {
	homes := in.Homes
	if in.Home != "" {
		homes = append([]string{in.Home}, homes...)
	}
	for _, h := range homes {
		if h == "" || h == "/" || !filepath.IsAbs(h) {
			continue
		}
		h = filepath.Clean(h)
		if rel, ok := strings.CutPrefix(in.Workdir, h+"/"); ok && strings.HasPrefix(rel, ".") {
			top, _, _ := strings.Cut(rel, "/")
			where := "is in " + filepath.Join(h, top) + ","
			if top == rel {
				where = "is"
			}
			return fmt.Errorf("%w: the workdir %s %s a dot-entry of the home %s: the home's configuration, which its owner's shell, session or SSH server runs later, would be the agent's to write (rule: workdir-home-config); run fedmem-run from a project folder, or use a profile with workdir: propose", ErrPlan, in.Workdir, where, h)
		}
		if h == in.Home || vault.Within(h, in.Vault) {
			continue
		}
		if under(h, in.Workdir) {
			what := "is the home of another account, " + h
			if h != in.Workdir {
				what = "holds the home of another account, " + h
			}
			return fmt.Errorf("%w: the workdir %s %s (HOME is %s): its startup files and keys would be the agent's to write, as their owner for a root caller (rule: workdir-other-home); run fedmem-run from a project folder, set HOME to that home if it is yours, or use a profile with workdir: propose", ErrPlan, in.Workdir, what, in.Home)
		}
	}
	return nil
}

// under says whether p is dir or lies below it.
func under(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
