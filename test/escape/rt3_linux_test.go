package escape

// Red team of rules workdir-system, workdir-other-home and
// workdir-home-config (mounts/sysdir.go, commits 2eca4039 and 45638306).
// The rules judge the workdir by its path string (links resolved) against
// a list of FHS trees and the homes /etc/passwd lists that exist; these
// tests reach the same folders another way. Each host change a test needs
// (a bind alias, a canary tmpfs over a system folder, an account in
// /etc/passwd) is made in a private mount namespace that dies with the
// run (nsRun), so nothing is left on the host. Only the refusal tests
// (workdirRefused) aim at the real /etc and /root, with a unique, inert
// probe name, removed if it ever lands.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nsResult is one fedmem-run started inside a private mount namespace.
type nsResult struct {
	code           int
	stdout, stderr string
	// check is what the check script printed after fedmem-run ended (in
	// the same namespace: it sees the canaries).
	check string
}

// nsRun runs fedmem-run (as e.command builds it, the layout's user
// included) with --workdir wd inside `unshare --mount --propagation
// private` after the shell script setup ran there as root, then the
// shell script check in the same namespace; check's output comes back in
// nsResult.check. extra are more fedmem-run flags.
func nsRun(t *testing.T, e *env, setup, check, wd string, extra []string, argv ...string) nsResult {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inner := e.command(ctx, "", append([]string{"--workdir", wd}, extra...), argv...)
	script := "set -e\n" + setup + "\nset +e\n\"$@\"\nrc=$?\necho '--- RT3 CHECK ---'\n" + check + "\nexit $rc\n"
	args := append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh"}, inner.Args...)
	cmd := exec.CommandContext(ctx, "unshare", args...)
	cmd.Dir = inner.Dir
	cmd.Env = inner.Env
	cmd.WaitDelay = 5 * time.Second
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("timed out\nstderr:\n%s", se.Bytes())
	}
	r := nsResult{code: exitCode(err), stderr: se.String()}
	out := so.String()
	if i := strings.Index(out, "--- RT3 CHECK ---\n"); i >= 0 {
		r.stdout, r.check = out[:i], out[i+len("--- RT3 CHECK ---\n"):]
	} else {
		r.stdout = out
	}
	return r
}

// writerArgv is an agent that makes the folder of each target and writes
// a line to it, saying which landed.
func writerArgv(targets ...string) []string {
	return append([]string{"sh", "-c", `for f in "$@"; do mkdir -p "$(dirname "$f")" && echo 'echo fedmem-rt3 ran here' >> "$f" && echo "wrote $f"; done; true`, "sh"}, targets...)
}

// landed judges an nsRun whose check printed "LANDED <path> <uid>" for a
// file the agent must not have written, or nothing.
func landed(t *testing.T, what string, r nsResult, rule string) {
	t.Helper()
	switch {
	case strings.Contains(r.check, "LANDED"):
		t.Errorf("BREACH: %s: %s(fedmem-run exit %d)\nagent: %s\nstderr: %s", what, r.check, r.code, r.stdout, r.stderr)
	case r.code != 125:
		t.Errorf("%s: nothing landed, but fedmem-run exit %d (want 125, rule %s)\nagent: %s\nstderr: %s", what, r.code, rule, r.stdout, r.stderr)
	case rule != "" && !strings.Contains(r.stderr, "rule: "+rule):
		t.Errorf("%s: refused, but not by rule %s:\n%s", what, rule, r.stderr)
	default:
		t.Logf("%s: refused: %s", what, firstLine([]byte(r.stderr), "rule"))
	}
}

// probeCheck is a check script line that reports whether p exists.
func probeCheck(p string) string {
	return `if [ -e '` + p + `' ]; then echo "LANDED ` + p + ` owner uid $(stat -c %u '` + p + `')"; fi`
}

func rt3Probe() string { return "fedmem-rt3-" + strconv.FormatInt(time.Now().UnixNano(), 36) }

// fakeEtc is setup that replaces /etc in the namespace by a tmpfs copy of
// it (the canary): writes that reach "/etc" land in the copy.
func fakeEtc(base string) string {
	d := filepath.Join(base, "canary-etc")
	return `mkdir -p '` + d + `'; mount -t tmpfs rt3-etc '` + d + `'; cp -a /etc/. '` + d + `/'; mount --bind '` + d + `' /etc`
}

// TestRT3WorkdirBindAliasOfEtc: a bind mount makes /etc (or a folder of
// it) appear under another name — `mount --bind /etc /srv/etc-copy`, a
// backup or migration tool's view, a container's host mounts. The rule
// compares the workdir's path with /etc; a bind is no symbolic link, so
// the path fedmem-run resolves is the alias, which no rule lists, and the
// agent writes the real /etc through it, as root for a root caller.
func TestRT3WorkdirBindAliasOfEtc(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	alias := filepath.Join(e.base, "srv-etc")
	if err := os.MkdirAll(alias, 0o755); err != nil {
		t.Fatal(err)
	}
	name := rt3Probe()
	r := nsRun(t, e, fakeEtc(e.base)+"\nmkdir -p /etc/cron.d\nmount --bind /etc '"+alias+"'",
		probeCheck("/etc/cron.d/"+name), alias, nil,
		writerArgv(filepath.Join(alias, "cron.d", name))...)
	landed(t, "workdir "+alias+" (a bind alias of /etc)", r, "workdir-system")
}

// TestRT3WorkdirHostRootView: containers that inspect or repair their node
// see the host's root at a path of their own (`kubectl debug node/N`
// mounts it at /host; cAdvisor and monitoring agents at /rootfs or
// /hostfs), and a host keeps other systems' roots in folders (a schroot
// or sbuild chroot under /srv, /var/lib/lxc/NAME/rootfs, /var/lib/machines):
// their etc/cron.d, etc/profile.d and root/ run as root there (a
// privileged LXC container's root is the host's). With --workdir at
// such a root the rules see a path under /srv or /var/tmp, not /etc.
//
// A first version bound the real root filesystem at the view (mount
// --bind / VIEW): the agent wrote VIEW/etc/NAME and it landed in the real
// /etc, owned by root — and fedmem-run's post-session quarantine then
// walked the whole host and moved another process's new .git aside. The
// view is now a tmpfs stand-in holding the folders the agent writes (an
// overlay over / is no stand-in: it cannot be idmapped, so the agent
// could not write it at all).
func TestRT3WorkdirHostRootView(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	hostView := filepath.Join(e.base, "host")
	if err := os.MkdirAll(hostView, 0o755); err != nil {
		t.Fatal(err)
	}
	name := rt3Probe()
	setupSh := "mount -t tmpfs -o mode=0755 rt3-host '" + hostView + "'\n" +
		"mkdir -p '" + hostView + "/etc/cron.d' '" + hostView + "/usr/local/bin' '" + hostView + "/var/lib' '" + hostView + "/bin'\n" +
		"mkdir -m 0700 '" + hostView + "/root'\ncp /etc/passwd '" + hostView + "/etc/passwd'"
	check := probeCheck(filepath.Join(hostView, "etc", "cron.d", name)) + "\n" + probeCheck(filepath.Join(hostView, "root", ".profile")) + "\n" + probeCheck(filepath.Join(hostView, "usr", "local", "bin", "git"))
	r := nsRun(t, e, setupSh, check, hostView, nil,
		writerArgv(filepath.Join(hostView, "etc", "cron.d", name), filepath.Join(hostView, "root", ".profile"), filepath.Join(hostView, "usr", "local", "bin", "git"))...)
	landed(t, "workdir "+hostView+" (a system's root seen at a path of its own)", r, "workdir-system")
}

// TestRT3WorkdirAliasHoldsHome: the folder that holds homes is often on a
// data disk bound to /home (`/mnt/data/home /home none bind` in fstab;
// btrfs' top-level subvolume mounted at /mnt/btr_pool shows @home). A
// workdir there (/mnt/data, where the projects live) holds the caller's
// own home and /root under names no rule knows: no read-only home top
// (rule home-config-readonly knows $HOME's path only), no
// workdir-other-home, and the home's masks (~/.ssh, ~/.aws) are laid at
// $HOME's path only. The agent reads the caller's SSH key and writes
// ~/.ssh/authorized_keys, ~/.ssh/rc (sshd runs it at each login) and
// root's /root/.ssh/authorized_keys (a canary tmpfs over /root in the
// namespace).
func TestRT3WorkdirAliasHoldsHome(t *testing.T) {
	for _, l := range []layout{{name: "gate-owned/root", gateOwned: true}, {name: "beside/user", gateOwned: true, user: true}} {
		t.Run(l.name, func(t *testing.T) { testRT3WorkdirAliasHoldsHome(t, l) })
	}
}

func testRT3WorkdirAliasHoldsHome(t *testing.T, l layout) {
	e := setup(t, l)
	data := filepath.Join(e.base, "mnt-data")
	if err := os.MkdirAll(filepath.Join(data, "home", "me"), 0o755); err != nil {
		t.Fatal(err)
	}
	if l.user {
		if err := os.Chown(data, agentUID, agentUID); err != nil {
			t.Fatal(err)
		}
	}
	setupSh := "mkdir -p '" + data + "/root'\n" +
		"mount --bind '" + e.home + "' '" + data + "/home/me'\n" +
		"mount -t tmpfs -o mode=0700 rt3-root /root\n" +
		"mount --bind /root '" + data + "/root'"
	me := filepath.Join(data, "home", "me")
	check := probeCheck("/root/.ssh/authorized_keys")
	targets := []string{me, filepath.Join(data, "root")}
	if l.user {
		targets = targets[:1] // root's home is not the user's to write anyway
	}
	argv := append([]string{"sh", "-c", `cat "$1/.ssh/id_ed25519"; echo; for f in "$1/.ssh/authorized_keys" "$1/.ssh/rc" "$2/.ssh/authorized_keys"; do [ "$f" = /.ssh/authorized_keys ] && continue; mkdir -p "$(dirname "$f")" && echo 'ssh-ed25519 AAAA fedmem-rt3' >> "$f" && echo "wrote $f"; done; true`, "sh"}, targets...)
	r := nsRun(t, e, setupSh, check, data, nil, argv...)
	for _, rel := range []string{".ssh/authorized_keys", ".ssh/rc"} {
		if b, err := os.ReadFile(filepath.Join(e.home, rel)); err == nil && strings.Contains(string(b), "fedmem-rt3") {
			r.check += "LANDED " + filepath.Join(e.home, rel) + " (the caller's own, through " + filepath.Join(me, rel) + ")\n"
		}
	}
	if strings.Contains(r.stdout, secrets[".ssh/id_ed25519"]) {
		t.Errorf("BREACH: the agent read the caller's masked ~/.ssh/id_ed25519 through %s", filepath.Join(me, ".ssh/id_ed25519"))
	}
	landed(t, "workdir "+data+" (holds $HOME and /root through binds)", r, "")
}

// TestRT3WorkdirHoldsHomeNotYetMade: host.Homes lists only homes that
// exist. An account whose home is made later — at its first login
// (pam_mkhomedir, sssd/LDAP), by an admin after useradd without -m — is
// not a home to the rule, so a workdir that holds the folder it will be
// in is no "folder holding a home": the agent makes the home first, with
// .ssh/authorized_keys (root-owned: sshd's StrictModes accepts root's
// files) and .bashrc, and pam_mkhomedir then leaves the folder as it is.
// The account is added to /etc/passwd in the namespace only.
func TestRT3WorkdirHoldsHomeNotYetMade(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	homes := filepath.Join(e.base, "homes")
	if err := os.MkdirAll(homes, 0o755); err != nil {
		t.Fatal(err)
	}
	bob := filepath.Join(homes, "rt3bob")
	passwd := filepath.Join(e.base, "passwd")
	setupSh := "cp /etc/passwd '" + passwd + "'\necho 'rt3bob:x:64123:64123:rt3:" + bob + ":/bin/sh' >> '" + passwd + "'\nmount --bind '" + passwd + "' /etc/passwd"
	keys := filepath.Join(bob, ".ssh", "authorized_keys")
	r := nsRun(t, e, setupSh, probeCheck(keys), homes, nil, writerArgv(keys, filepath.Join(bob, ".bashrc"))...)
	landed(t, "workdir "+homes+" (will hold rt3bob's home "+bob+")", r, "workdir-other-home")
}

// TestRT3WorkdirDaemonTrees: rule workdir-system lists /usr, /etc, /var/lib
// only for dpkg, apt and systemd, and leaves /opt and the rest of /var/lib
// to projects. Daemons run as root what lies in their own trees there:
// containerd's managed opt directory (its opt plugin, on by default,
// makes /opt/containerd/{bin,lib} and puts them first on containerd's
// PATH and LD_LIBRARY_PATH: the shims and runtimes it starts), CNI
// plugins that containerd and the kubelet exec (/opt/cni/bin),
// cloud-init's per-boot scripts (/var/lib/cloud/scripts/per-boot), k3s'
// auto-deployed manifests (/var/lib/rancher/k3s/server/manifests). Each
// is a canary tmpfs in the namespace (/opt/containerd over the host's;
// /opt/cni and /var/lib/cloud inside a tmpfs over /opt and /var/lib).
func TestRT3WorkdirDaemonTrees(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	for _, c := range []struct{ wd, setup, target string }{
		{"/opt/containerd", "mkdir -p /opt/containerd; mount -t tmpfs -o mode=0711 rt3-opt /opt/containerd; mkdir -m 0711 /opt/containerd/bin /opt/containerd/lib", "/opt/containerd/bin/containerd-shim-runc-v2"},
		{"/opt/cni/bin", "mount -t tmpfs -o mode=0755 rt3-opt /opt; mkdir -p /opt/cni/bin", "/opt/cni/bin/bridge"},
		{"/var/lib/cloud", "mount -t tmpfs -o mode=0755 rt3-varlib /var/lib; mkdir -p /var/lib/cloud/scripts/per-boot", "/var/lib/cloud/scripts/per-boot/fedmem-rt3"},
		{"/var/lib/rancher/k3s/server", "mount -t tmpfs -o mode=0755 rt3-varlib /var/lib; mkdir -p /var/lib/rancher/k3s/server/manifests", "/var/lib/rancher/k3s/server/manifests/fedmem-rt3.yaml"},
	} {
		t.Run(strings.ReplaceAll(c.wd, "/", "_"), func(t *testing.T) {
			r := nsRun(t, e, c.setup, probeCheck(c.target), c.wd, nil, writerArgv(c.target)...)
			landed(t, "workdir "+c.wd, r, "workdir-system")
		})
	}
}

// TestRT3WorkdirHomeBinOnPath: the home rules refuse a home's dot-entries
// (rule workdir-home-config), and homeNamed holds a PATH folder read-only
// only inside a home that lies in a writable path; a home's non-dot
// folder on PATH as the workdir is neither. ~/bin (Debian's ~/.profile
// puts it first on PATH when it exists) as the workdir: the agent plants
// ~/bin/git, which the user's next shell runs instead of git. For a root
// caller with HOME elsewhere, root's own /root/bin (a canary tmpfs over
// /root with a .profile that puts it on PATH) is another account's home's
// folder and was not refused either (workdir-other-home refuses only the
// home or a folder holding it); there /root's own mode 0700 stopped the
// agent. A home's bin folder is refused (rule workdir-on-path) for both.
func TestRT3WorkdirHomeBinOnPath(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	bin := filepath.Join(e.home, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	e.path = bin + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
	t.Run("own-home-bin", func(t *testing.T) {
		target := filepath.Join(bin, "git")
		r := nsRun(t, e, ":", probeCheck(target), bin, nil, writerArgv(target)...)
		landed(t, "workdir "+bin+" (the caller's ~/bin, on its PATH)", r, "")
	})
	t.Run("root-home-bin", func(t *testing.T) {
		setupSh := "mount -t tmpfs -o mode=0700 rt3-root /root; mkdir /root/bin; echo 'PATH=\"$HOME/bin:$PATH\"' > /root/.profile"
		r := nsRun(t, e, setupSh, probeCheck("/root/bin/ls"), "/root/bin", nil, writerArgv("/root/bin/ls")...)
		landed(t, "workdir /root/bin (root's, on root's PATH; HOME is "+e.home+")", r, "workdir-on-path")
	})
}

// TestRT3ProfileWritablePaths: the three rules judge the workdir only.
// A profile's `writable:` is judged by profiles.Check's own lists
// (writable-system-dir: /etc, /usr, /root, /var/lib…; writable-broad-dir:
// /opt, /srv, /home as a whole), which know no home's dot-entries and no
// /opt/NAME, and `home.writable` by its broadHome warnings (exact names).
// A profile file the caller wrote (no project profile: no allow needed)
// names paths that the workdir rules would refuse.
func TestRT3ProfileWritablePaths(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	units := filepath.Join(e.home, ".config", "systemd", "user")
	auto := filepath.Join(e.home, ".config", "autostart")
	for _, d := range []string{units, auto} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	profDir := filepath.Join(e.base, "profiles")
	if err := os.MkdirAll(profDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, yaml, setup, target, rule string
		// held: the defence is a read-only hold inside (the session
		// runs), not a refusal.
		held bool
	}{
		// The caller's own user units (rule workdir-home-config for a workdir).
		{"writable-home-units", "writable: [" + units + "]", ":", filepath.Join(units, "fedmem-rt3.service"), "workdir-home-config", false},
		// home.writable of a persistence folder: held read-only inside
		// (families.HomePersist), with a broadHome warning.
		{"home-writable-autostart", "home: {writable: [.config/autostart/]}", ":", filepath.Join(auto, "fedmem-rt3.desktop"), "", true},
		// containerd's opt directory (a canary tmpfs in the namespace).
		{"writable-opt-containerd", "writable: [/opt/containerd]", "mkdir -p /opt/containerd; mount -t tmpfs -o mode=0711 rt3-opt /opt/containerd; mkdir -m 0711 /opt/containerd/bin", "/opt/containerd/bin/containerd-shim-runc-v2", "workdir-system", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(profDir, c.name+".yaml")
			if err := os.WriteFile(p, []byte("name: "+c.name+"\nextends: default\n"+c.yaml+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(c.target) })
			r := nsRun(t, e, c.setup, probeCheck(c.target), e.workdir, []string{"--profile", p}, writerArgv(c.target)...)
			if c.held && !strings.Contains(r.check, "LANDED") {
				t.Logf("profile %s: held read-only inside (exit %d): %s", c.yaml, r.code, firstLine([]byte(r.stderr), "cannot create"))
				return
			}
			landed(t, "profile "+c.yaml, r, c.rule)
		})
	}
}

// TestRT3WorkdirPathForms: other spellings of a refused workdir — through
// /proc/self/root, relative to the current folder, with a doubled or
// trailing slash or a dot, through a symbolic link — are resolved before
// the rules judge them (host.RealDir): refused like the path itself.
func TestRT3WorkdirPathForms(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	rel, err := filepath.Rel(e.workdir, "/etc")
	if err != nil {
		t.Fatal(err)
	}
	linkEtc := filepath.Join(e.base, "etc-link")
	linkRoot := filepath.Join(e.base, "root-link")
	linkSSH := filepath.Join(e.base, "ssh-link")
	for _, l := range [][2]string{{"/etc", linkEtc}, {"/root", linkRoot}, {filepath.Join(e.home, ".ssh"), linkSSH}} {
		if err := os.Symlink(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	probe := rt3Probe()
	for _, c := range []struct{ wd, target, rule string }{
		{"/proc/self/root/etc", "/etc/" + probe, "workdir-system"},
		{rel, "/etc/" + probe, "workdir-system"},
		{"//etc//", "/etc/" + probe, "workdir-system"},
		{"/etc/./cron.d/..", "/etc/" + probe, "workdir-system"},
		{linkEtc + "/", "/etc/" + probe, "workdir-system"},
		{"/usr/local/src/../bin", "/usr/local/bin/" + probe, "workdir-system"},
		{linkRoot, "/root/." + probe, "workdir-other-home"},
		{linkSSH, filepath.Join(e.home, ".ssh", probe), "workdir-home-config"},
	} {
		workdirRefused(t, e, c.wd, c.target, c.rule)
	}
}

// TestRT3HomeVariants: what HOME says decides which home is the caller's
// (exempt from workdir-other-home) and where home.writable and state
// land. HOME=/ (a container's root shell) or HOME=/etc does not make /etc
// or /root a workdir; HOME naming another account's home lets that home
// be the workdir (as the message says: "set HOME to that home if it is
// yours") but not its dot-entries.
func TestRT3HomeVariants(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	probe := rt3Probe()
	orig := e.home
	defer func() { e.home = orig }()
	homeLink := filepath.Join(e.base, "home-link")
	if err := os.Symlink(orig, homeLink); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(orig, ".config"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ home, wd, target, rule string }{
		{"/", "/root", "/root/." + probe, "workdir-other-home"},
		{"/", "/etc", "/etc/" + probe, "workdir-system"},
		{"/etc", "/etc", "/etc/" + probe, "workdir-system"},
		{"/root", "/root/.config", "/root/.config/" + probe, "workdir-home-config"},
		{"/root", "/", "/" + probe, "workdir-system"},
		// HOME through a link is the home it names.
		{homeLink, filepath.Join(orig, ".config"), filepath.Join(orig, ".config", probe), "workdir-home-config"},
	} {
		e.home = c.home
		workdirRefused(t, e, c.wd, c.target, c.rule)
	}
}

// shq quotes s for sh.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestRT3HomeInSystemFolder: the rules judge the workdir; HOME is taken as
// the caller says (host.Home: $HOME, links resolved). A root caller with
// HOME=/etc (or /usr/local, /var/lib/x: a service's environment, a
// script's `HOME=/etc/app`) and a project workdir gets its home.writable
// and state under that folder: fedmem-run itself makes the state store
// and mount points there (/etc/.local/share/fedmem/PROFILE, /etc/.cache,
// /etc/.npm, /etc/go/pkg/mod; the claude profile's /etc/.claude), owned
// by root, and the agent writes files in them as root. No program is known
// to run what lands there (dot-folders of /etc, not cron.d or profile.d),
// so this is the rule's own line crossed, not code run: /etc is a tmpfs
// copy in the namespace (the canary) and the check lists what is new in it.
func TestRT3HomeInSystemFolder(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	orig := e.home
	defer func() { e.home = orig }()
	e.home = "/etc"
	marker := filepath.Join(e.base, "marker")
	r := nsRun(t, e, fakeEtc(e.base)+"\ntouch "+shq(marker)+"\nsleep 0.01",
		"find /etc -newer "+shq(marker)+" -path '/etc/.*' -printf 'LANDED /etc: %p uid %U\\n' | sort | head -20",
		e.workdir, []string{"--profile", "claude"},
		"sh", "-c", `echo x > "$HOME/.cache/fedmem-rt3" && echo x > "$HOME/.claude/fedmem-rt3" && echo "wrote in $HOME"; true`)
	landed(t, "HOME=/etc, workdir "+e.workdir, r, "home-system")
}

// TestRT3HomeAliasSecretsReadable: the host's root is shown read-only and
// the home's secrets are masked (or left out of the allow-list home) at
// $HOME's path only: the same home bound elsewhere (/mnt/data/home/me
// bound to /home/me) shows ~/.ssh/id_ed25519 and ~/.aws/credentials to
// the agent whatever its workdir.
func TestRT3HomeAliasSecretsReadable(t *testing.T) {
	for _, l := range []layout{{name: "gate-owned/root", gateOwned: true}, {name: "beside/user", gateOwned: true, user: true}} {
		t.Run(l.name, func(t *testing.T) { testRT3HomeAliasSecretsReadable(t, l) })
	}
}

func testRT3HomeAliasSecretsReadable(t *testing.T, l layout) {
	e := setup(t, l)
	alias := filepath.Join(e.base, "mnt-data", "home", "me")
	if err := os.MkdirAll(alias, 0o755); err != nil {
		t.Fatal(err)
	}
	r := nsRun(t, e, "mount --bind "+shq(e.home)+" "+shq(alias), ":", e.workdir, nil,
		"sh", "-c", `cat "$1/.ssh/id_ed25519" "$1/.aws/credentials" 2>&1; true`, "sh", alias)
	for _, rel := range []string{".ssh/id_ed25519", ".aws/credentials"} {
		if strings.Contains(r.stdout, strings.TrimSpace(secrets[rel])) {
			t.Errorf("BREACH: the agent (workdir %s) read the caller's ~/%s through the bind alias %s", e.workdir, rel, filepath.Join(alias, rel))
		}
	}
	if t.Failed() {
		t.Logf("agent:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

// TestRT3WorkdirInsideGitDir: guarantee 6 holds a repository's .git/hooks
// and .git/config read-only at the top of each writable root, and rule
// workdir-home-config refuses a home's dot-folders as a workdir; a
// repository's own .git (or .git/hooks) as the workdir is neither: the
// root is the folder that holds hooks/ and config, and the holds look
// for ROOT/.git/hooks. The agent writes the hook Git runs at the user's
// next commit in the repository above.
func TestRT3WorkdirInsideGitDir(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	repo := filepath.Join(e.base, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	for _, c := range []struct{ wd, target string }{
		{filepath.Join(repo, ".git"), filepath.Join(repo, ".git", "hooks", "pre-commit")},
		{filepath.Join(repo, ".git", "hooks"), filepath.Join(repo, ".git", "hooks", "post-checkout")},
		{filepath.Join(repo, ".git"), filepath.Join(repo, ".git", "config")},
	} {
		before, _ := os.ReadFile(c.target)
		r := nsRun(t, e, ":", `if [ -e '`+c.target+`' ] && grep -q fedmem-rt3 '`+c.target+`'; then echo "LANDED `+c.target+` owner uid $(stat -c %u '`+c.target+`')"; fi`, c.wd, nil, writerArgv(c.target)...)
		if strings.Contains(r.check, "LANDED") || r.code == 125 {
			landed(t, "workdir "+c.wd, r, "")
		} else {
			t.Logf("workdir %s: %s held (exit %d): %s", c.wd, c.target, r.code, strings.TrimSpace(r.stderr))
		}
		os.WriteFile(c.target, before, 0o644)
	}
}
