package mounts

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fedmem/fedmem/mounts/request"
	"github.com/fedmem/fedmem/vault"
)

// The workdir is granted to the agent writable (idmapped to the caller on
// disk: a root caller's agent writes root's files), and so are a
// profile's `writable:` paths. Such a folder is a project's; these are
// none (each refused before a session exists, exit 125, by its rule):
//
//   - workdir-system: the filesystem root, the folders of the Filesystem
//     Hierarchy Standard that hold the system's programs, configuration
//     and state, and the two that gather them (/usr, /var); the trees
//     daemons run from (/opt, /var/lib, /var/cache…) but inside the
//     caller's own home (a CI user's HOME=/var/lib/jenkins). A project
//     may live in the FHS's own places for source (/usr/src,
//     /usr/local/src), /srv, a home, /tmp, /var/tmp, or a folder of its
//     own at the top (/work, /builds).
//   - workdir-other-home: another account's home, or a folder holding one
//     (or holding the caller's home under another name).
//   - workdir-home-config: a home's dot-entry or a folder inside one.
//   - workdir-git-dir: a repository's Git folder (`.git`, a bare
//     repository) or a folder in one: its hooks and config run later.
//   - workdir-on-path: a folder on the caller's PATH or inside one
//     (~/bin, ~/go/bin): what the agent puts there the caller runs as
//     its commands.
//
// Each rule judges the folder and every other path the host's mount table
// shows it at (a bind alias of /etc, a root seen at /host, a data disk
// holding /home): no path string alone decides. The home, Git and PATH
// rules leave a proposed workdir (`workdir: propose`) alone: nothing the
// agent writes there reaches the folder before the user applies it.

// systemTrees are refused with all below them (but systemExempt).
var systemTrees = []string{"/bin", "/boot", "/dev", "/efi", "/etc", "/gnu", "/lib", "/lib32", "/lib64", "/libx32", "/nix", "/proc", "/run", "/sbin", "/snap", "/sys", "/usr", "/var/spool"}

// daemonTrees are refused with all below them (but daemonExempt) but
// inside the caller's own home: add-on software and the state daemons run
// or load (containerd's /opt/containerd/bin, CNI's /opt/cni/bin,
// cloud-init's /var/lib/cloud/scripts, k3s' manifests, a web server's
// /var/www, Gentoo's /var/db/pkg, a name server's /var/named). /var is
// an allow-list: its scratch folder /var/tmp is a project's place, the
// rest is the system's.
var daemonTrees = []string{"/opt", "/var"}

// daemonExempt are the project places under daemonTrees.
var daemonExempt = []string{"/var/tmp"}

// systemExempt are the project places under systemTrees.
var systemExempt = []string{"/usr/src", "/usr/local/src"}

// systemFolder says whether p (clean, absolute, links resolved) is the
// system's own: the root, a system tree or below one (but an exempt
// place), a daemon tree or below one (but inside the non-dot entries of
// home, the caller's), or a folder that holds one (/var, /usr/local hold
// one; so does /).
func systemFolder(p, home string) (string, bool) {
	if p == "/" {
		return "/", true
	}
	if inAny(systemExempt, p) {
		return "", false
	}
	for _, t := range systemTrees {
		if vault.Within(p, t) || vault.Within(t, p) {
			return t, true // p is, is in or holds a system tree
		}
	}
	if inAny(daemonExempt, p) {
		return "", false
	}
	for _, t := range daemonTrees {
		if vault.Within(t, p) {
			return t, true
		}
		if vault.Within(p, t) && !inHomeProject(p, home) {
			return t, true
		}
	}
	return "", false
}

// exemptHome is the home whose projects a daemon tree may hold: the
// caller's, when it is the one /etc/passwd names (a CI user's
// /var/lib/jenkins); a HOME set to /opt/containerd makes no exemption.
func exemptHome(in Input) string {
	if in.Home == "" || in.PasswdHome == "" || filepath.Clean(in.Home) != filepath.Clean(in.PasswdHome) {
		return ""
	}
	return in.Home
}

// inHomeProject says whether p lies in a non-dot entry of home.
func inHomeProject(p, home string) bool {
	if home == "" || home == "/" {
		return false
	}
	rel, ok := strings.CutPrefix(p, filepath.Clean(home)+"/")
	return ok && !strings.HasPrefix(rel, ".")
}

// checkWorkdir judges the workdir and the profile's writable paths by the
// rules above, and refuses a HOME in a system tree (rule home-system:
// fedmem-run keeps its per-profile state under it).
func checkWorkdir(rq request.Request, in Input) error {
	in.PathDirs = judgedPathDirs(in)
	if !vault.Within(in.Workdir, in.Vault) {
		if err := judgeWritable(in, in.Workdir, "the workdir", !rq.ProposeWorkdir); err != nil {
			return err
		}
	}
	for _, w := range rq.Writable {
		p := filepath.Clean(w)
		if in.RealPath != nil {
			p = filepath.Clean(in.RealPath(p))
		}
		if !filepath.IsAbs(p) || vault.Within(p, in.Vault) {
			continue
		}
		if err := judgeWritable(in, p, "the profile's writable path", true); err != nil {
			return err
		}
	}
	if err := checkHomeWritableLinks(rq, in); err != nil {
		return err
	}
	if h := filepath.Clean(in.Home); in.Home != "" && h != "/" {
		for _, t := range append(append([]string{}, systemTrees...), daemonTrees...) {
			hard := !inAny(daemonTrees, t)
			if (hard && vault.Within(h, t) && !inAny(systemExempt, h)) || vault.Within(t, h) {
				return fmt.Errorf("%w: HOME is %s, in or holding the operating system's %s: fedmem-run would keep the profile's state there and show it to the agent writable (rule: home-system); set HOME to a folder of your own", ErrPlan, h, t)
			}
		}
	}
	return checkHomeAliases(in)
}

// checkHomeWritableLinks judges a home.writable entry that is a symbolic
// link (or has one on the way) by where it leads: the bind follows it, so
// ~/.cache/pip linked to /etc/cron.d would hand the agent /etc/cron.d. A
// link that stays in the home may lead to a non-dot entry or into another
// home.writable entry; one that leaves the home is refused (rule
// home-writable-link; a system folder is named by its own rule).
func checkHomeWritableLinks(rq request.Request, in Input) error {
	if in.RealPath == nil || in.Home == "" || in.Home == "/" || rq.Home.Mode == request.HomeHidden {
		return nil
	}
	home := filepath.Clean(in.Home)
	for _, w := range rq.Home.Writable {
		t := filepath.Join(home, filepath.Clean(w))
		r := filepath.Clean(in.RealPath(t))
		if r == t {
			continue
		}
		if rel, ok := strings.CutPrefix(r, home+"/"); ok {
			if !strings.HasPrefix(rel, ".") {
				continue
			}
			inside := false
			for _, o := range rq.Home.Writable {
				if vault.Within(r, filepath.Join(home, filepath.Clean(o))) {
					inside = true
				}
			}
			if inside {
				continue
			}
			return fmt.Errorf("%w: home.writable %s is a link to %s, a dot-entry of the home the profile does not make writable (rule: home-writable-link); name %s in home.writable, or replace the link by a folder", ErrPlan, t, r, strings.TrimPrefix(r, home+"/"))
		}
		// Out of the home: an earlier session that could write the link's
		// folder (home.writable [.cache/]) would choose where this one
		// writes. Judged too, for the message's sake.
		if err := judgeWritable(in, r, "home.writable "+w+", a link to", true); err != nil {
			return err
		}
		return fmt.Errorf("%w: home.writable %s is a link to %s, out of the home: an agent that could write the link's folder chose where this session writes (rule: home-writable-link); replace the link by a folder, or name %s in the profile's writable:", ErrPlan, t, r, r)
	}
	return nil
}

// checkHomeAliases refuses a workdir that lies in another path of the
// caller's home (/mnt/data/home/me/proj where /home/me is a bind of
// /mnt/data/home/me): the home's allow-list cannot be laid over that path
// without hiding the workdir, so the session runs from the home's own
// path (rule workdir-home-alias).
func checkHomeAliases(in Input) error {
	if in.Aliases == nil || in.Home == "" || in.Home == "/" || vault.Within(in.Workdir, in.Vault) {
		return nil
	}
	for _, a := range in.Aliases(in.Home) {
		if a.Holds || a.Path == "" || a.Path == "/" || !vault.Within(in.Workdir, a.Path) || vault.Within(in.Workdir, in.Home) {
			continue
		}
		canon := filepath.Join(in.Home, strings.TrimPrefix(in.Workdir, a.Path))
		return fmt.Errorf("%w: the workdir %s lies in %s, another path of your home %s (a bind mount or another mount of its filesystem): the home's allow-list holds at its own path only with the workdir in it (rule: workdir-home-alias); run fedmem-run from %s", ErrPlan, in.Workdir, a.Path, in.Home, canon)
	}
	return nil
}

// inAny says whether p is or lies in one of dirs.
func inAny(dirs []string, p string) bool {
	for _, d := range dirs {
		if vault.Within(p, d) {
			return true
		}
	}
	return false
}

// judgeWritable judges folder p (what names it in the error) and each of
// its aliases in the host's mount table; strict adds the home, Git and
// PATH rules.
func judgeWritable(in Input, p, what string, strict bool) error {
	if err := judgePlace(in, p, p, what, false, strict, true); err != nil {
		return err
	}
	if in.Aliases == nil {
		return nil
	}
	for _, a := range in.Aliases(p) {
		if a.As == "" || (a.Path != "" && vault.Within(a.Path, p)) || (a.As == p && !a.Holds) {
			continue // p itself, or a mount point in p: judged with it
		}
		// A path known only inside its filesystem is judged by name: the
		// host's own folder at that path is another one.
		if err := judgePlace(in, a.As, p, what, a.Holds, strict, a.Path != ""); err != nil {
			return err
		}
	}
	return nil
}

// judgePlace judges q, which is p or a path the host shows p's content at
// (held: q's content lies in p, p shows it under another name).
func judgePlace(in Input, q, p, what string, held, strict, onHost bool) error {
	name := fmt.Sprintf("%s %s", what, p)
	if q != p {
		shows := "is also"
		if held {
			shows = "shows"
		}
		name = fmt.Sprintf("%s %s %s (a bind mount or another mount of its filesystem)", name, shows, q)
	}
	if t, ok := systemFolder(q, exemptHome(in)); ok {
		how := "is the operating system's folder " + t
		if t != q {
			how = "lies in the operating system's " + t
			if vault.Within(t, q) {
				how = "holds the operating system's " + t
			}
		}
		return fmt.Errorf("%w: %s, which %s: the agent would write the host's own files there (a root caller's agent as root, through the idmapped bind) (rule: workdir-system); run fedmem-run from a project folder or pass --workdir DIR", ErrPlan, name, how)
	}
	if r, ok := systemRoot(in, q); ok && onHost {
		return fmt.Errorf("%w: %s lies in %s, which holds a system's root (etc/ and usr/: a chroot, a container's root filesystem, a host's root seen at a path of its own): its etc/cron.d and root/ run as root there (rule: workdir-system); run fedmem-run from a project folder", ErrPlan, name, r)
	}
	if !strict {
		return nil
	}
	if err := judgeHomes(in, q, name, held); err != nil {
		return err
	}
	if g, ok := gitDir(in, q, onHost); ok {
		return fmt.Errorf("%w: %s lies in the Git folder %s: its hooks and config run when the repository is next used (rule: workdir-git-dir); run fedmem-run from the repository's work tree", ErrPlan, name, g)
	}
	if g, ok := holdsBareRepo(in, q, onHost); ok {
		return fmt.Errorf("%w: %s holds the bare repository %s (a Git server's folder): its hooks run at the next push (rule: workdir-git-dir); run fedmem-run from a work tree", ErrPlan, name, g)
	}
	for _, d := range in.PathDirs {
		if d == "." {
			// "." or "": wherever the caller's shell is, the workdir when
			// it is in the project.
			return fmt.Errorf("%w: your PATH holds a relative entry (\".\" or an empty one): %s is on it whenever your shell is there, so what the agent put there would run as your commands (rule: workdir-on-path); take the entry out of PATH", ErrPlan, p)
		}
		if d != "/" && vault.Within(q, d) {
			return fmt.Errorf("%w: %s lies in %s, a folder on your PATH: what the agent put there would run as your commands (rule: workdir-on-path); run fedmem-run from a project folder", ErrPlan, name, d)
		}
	}
	return nil
}

// judgedPathDirs are the caller's PATH entries as judgePlace compares
// them, resolved once per plan: absolute ones cleaned with their links
// resolved, "." for a "." or empty entry (the current folder); other
// relative ones ("bin": a folder in the workdir, not the workdir) left
// out.
func judgedPathDirs(in Input) []string {
	var out []string
	for _, d := range in.PathDirs {
		switch d = filepath.Clean(d); {
		case d == ".":
			out = append(out, d)
		case filepath.IsAbs(d):
			if in.RealPath != nil {
				d = filepath.Clean(in.RealPath(d))
			}
			out = append(out, d)
		}
	}
	return out
}

// judgeHomes is the two home rules for q. The caller's own home may be
// the workdir (its top level is the allow-list of rule
// home-config-readonly), but not under another name; any other home may
// not, nor may a folder that holds one: the allow-list guards $HOME
// alone. A dot-entry of any home is configuration that the home's owner
// runs later (~/.config/systemd/user, ~/.ssh, autostart).
func judgeHomes(in Input, q, name string, held bool) error {
	homes := in.Homes
	if in.Home != "" {
		homes = append([]string{in.Home}, homes...)
	}
	for _, h := range homes {
		if h == "" || h == "/" || !filepath.IsAbs(h) {
			continue
		}
		h = filepath.Clean(h)
		rel, inH := strings.CutPrefix(q, h+"/")
		if inH && strings.HasPrefix(rel, ".") {
			top, _, _ := strings.Cut(rel, "/")
			where := "is in " + filepath.Join(h, top) + ","
			if top == rel {
				where = "is"
			}
			return fmt.Errorf("%w: %s %s a dot-entry of the home %s: the home's configuration, which its owner's shell, session or SSH server runs later, would be the agent's to write (rule: workdir-home-config); run fedmem-run from a project folder, or use a profile with workdir: propose", ErrPlan, name, where, h)
		}
		if inH && (rel == "bin" || strings.HasPrefix(rel, "bin/")) {
			return fmt.Errorf("%w: %s is in %s: a home's bin folder is on its owner's PATH at the next login (Debian's ~/.profile puts it there), so what the agent put there would run as that user's commands (rule: workdir-on-path); run fedmem-run from a project folder", ErrPlan, name, filepath.Join(h, "bin"))
		}
		if (h == in.Home && !held) || vault.Within(h, in.Vault) {
			continue
		}
		if vault.Within(h, q) {
			how := "is the home of another account, " + h
			switch {
			case h == in.Home:
				how = "shows your home " + h + " under another name, without its read-only top"
			case h != q:
				how = "holds the home of another account, " + h
			}
			return fmt.Errorf("%w: %s %s (HOME is %s): its startup files and keys would be the agent's to write, as their owner for a root caller (rule: workdir-other-home); run fedmem-run from a project folder, set HOME to that home if it is yours, or use a profile with workdir: propose", ErrPlan, name, how, in.Home)
		}
	}
	return nil
}

// systemRoot returns the folder at or above q (not / itself: the host's
// root is judged by its trees) that has the shape of a system's root: both
// etc/ and usr/ folders in it. A folder that holds such a root deeper
// down is not found (its tree is not walked).
func systemRoot(in Input, q string) (string, bool) {
	if in.Exists == nil {
		return "", false
	}
	for d := q; d != "/" && d != "."; d = filepath.Dir(d) {
		etc, etcDir := in.Exists(filepath.Join(d, "etc"))
		usr, usrDir := in.Exists(filepath.Join(d, "usr"))
		if etc && etcDir && usr && usrDir {
			return d, true
		}
	}
	return "", false
}

// holdsBareRepo returns a bare repository among q's entries named *.git
// (the convention of Git servers: /srv/git/proj.git); a repository's own
// `.git` is the work tree's and judged by the persistence holds.
func holdsBareRepo(in Input, q string, onHost bool) (string, bool) {
	if in.List == nil || !onHost {
		return "", false
	}
	names, _ := in.List(q)
	for _, n := range names {
		if n == ".git" || !strings.HasSuffix(n, ".git") {
			continue
		}
		if d := filepath.Join(q, n); isBareRepo(in, d) {
			return d, true
		}
	}
	return "", false
}

// isBareRepo says whether d holds HEAD, objects/ and refs/.
func isBareRepo(in Input, d string) bool {
	if in.Exists == nil {
		return false
	}
	head, headDir := in.Exists(filepath.Join(d, "HEAD"))
	obj, objDir := in.Exists(filepath.Join(d, "objects"))
	refs, refsDir := in.Exists(filepath.Join(d, "refs"))
	return head && !headDir && obj && objDir && refs && refsDir
}

// gitDir returns the Git folder q is or lies in: a path component `.git`,
// or a folder (q or above it) that holds HEAD, objects/ and refs/ (a bare
// repository). Without Exists only the name is judged.
func gitDir(in Input, q string, onHost bool) (string, bool) {
	for d := q; ; d = filepath.Dir(d) {
		if filepath.Base(d) == ".git" {
			return d, true
		}
		if onHost && isBareRepo(in, d) {
			return d, true
		}
		if d == "/" || d == "." {
			return "", false
		}
	}
}
