package escape

// Red team rt4 of the alias, daemon-tree, Git, PATH and home-alias rules
// (commit fb2ad340: mounts/sysdir.go, mounts/host/alias.go,
// mounts/plan.go addHomeAliases). Every host change is made inside
// nsRun's private mount namespace, over tmpfs canaries; nothing real under
// /, /etc, /run, /opt or /var/lib is written.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
)

// fakeRun is setup that replaces /run in the namespace by a tmpfs copy of
// it, mounted at /run only (as on a systemd host, where /run is a tmpfs
// of its own): its canary folder is unmounted after the bind, so the
// mount table shows the tmpfs at /run alone.
func fakeRun(base string) string {
	d := filepath.Join(base, "canary-run")
	return `mkdir -p '` + d + `'; mount -t tmpfs -o mode=0755 rt4-run '` + d + `'; cp -a /run/. '` + d + `/' 2>/dev/null || true; mount --bind '` + d + `' /run; umount '` + d + `'`
}

// TestRT4WorkdirAliasOfRun: Aliases leaves out every mount under /run
// (runtimeView), and on a systemd host /run is a tmpfs mounted at /run
// only, so a bind of a folder of /run elsewhere (mount --bind
// /run/systemd /srv/x; a container's hostPath of /run) has no alias the
// rules see: /srv/x is judged alone, as a project. systemd reads units
// from /run/systemd/system (at daemon-reload, which package upgrades run)
// and udevd watches /run/udev/rules.d (a RUN+= rule runs as root at the
// next device event). The same holds for a workdir that holds such a bind
// (the held direction). The agent writes both as root.
func TestRT4WorkdirAliasOfRun(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	name := rt3Probe()
	alias := filepath.Join(e.base, "srv-run-systemd")
	proj := filepath.Join(e.base, "proj")
	for _, d := range []string{alias, filepath.Join(proj, "udev-rules")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	base := fakeRun(e.base) + "\nmkdir -p /run/systemd/system /run/udev/rules.d"
	t.Run("bind-of-run-systemd", func(t *testing.T) {
		unit := "/run/systemd/system/" + name + ".service"
		r := nsRun(t, e, base+"\nmount --bind /run/systemd '"+alias+"'", probeCheck(unit), alias, nil,
			writerArgv(filepath.Join(alias, "system", name+".service"))...)
		landed(t, "workdir "+alias+" (a bind alias of /run/systemd)", r, "workdir-system")
	})
	t.Run("workdir-holds-run-udev", func(t *testing.T) {
		rule := "/run/udev/rules.d/99-" + name + ".rules"
		r := nsRun(t, e, base+"\nmount --bind /run/udev/rules.d '"+filepath.Join(proj, "udev-rules")+"'", probeCheck(rule), proj, nil,
			writerArgv(filepath.Join(proj, "udev-rules", "99-"+name+".rules"))...)
		landed(t, "workdir "+proj+" (holds a bind of /run/udev/rules.d)", r, "workdir-system")
	})
}

// TestRT4WorkdirHostPathSubfolder: rt3's "a system's root seen at a path
// of its own" is refused by shape (a folder with etc/ and usr/). A
// container that sees only a folder of the node (Kubernetes hostPath
// volumes: /etc at /host/etc, /opt/cni/bin at /host/opt/cni/bin — what
// every CNI installer DaemonSet mounts) has no such folder: /host holds
// etc/ and opt/, no usr/, and the node's disk is mounted nowhere else, so
// no alias either. mountinfo does say where the folder lies on its disk
// (root /etc, /opt/cni/bin), but Aliases only compares it with other
// mounts. The node's disk is a tmpfs stand-in, unmounted after its
// folders are bound at /host, as in the container; the agent writes the
// node's /etc/cron.d and a CNI plugin the kubelet runs as root.
func TestRT4WorkdirHostPathSubfolder(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	name := rt3Probe()
	node := filepath.Join(e.base, "node-disk")
	host := filepath.Join(e.base, "host")
	for _, d := range []string{node, filepath.Join(host, "etc"), filepath.Join(host, "opt", "cni", "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	setupSh := "mount -t tmpfs -o mode=0755 rt4-node '" + node + "'\n" +
		"mkdir -p '" + node + "/etc/cron.d' '" + node + "/usr/bin' '" + node + "/opt/cni/bin' '" + node + "/root'\n" +
		"mount --bind '" + node + "/etc' '" + host + "/etc'\n" +
		"mount --bind '" + node + "/opt/cni/bin' '" + host + "/opt/cni/bin'\n" +
		"umount '" + node + "'"
	for _, c := range []struct{ wd, target string }{
		{filepath.Join(host, "etc"), filepath.Join(host, "etc", "cron.d", name)},
		{filepath.Join(host, "opt", "cni", "bin"), filepath.Join(host, "opt", "cni", "bin", "bridge")},
	} {
		t.Run(strings.TrimPrefix(strings.ReplaceAll(strings.TrimPrefix(c.wd, host), "/", "_"), "_"), func(t *testing.T) {
			r := nsRun(t, e, setupSh, probeCheck(c.target), c.wd, nil, writerArgv(c.target)...)
			landed(t, "workdir "+c.wd+" (the node's "+strings.TrimPrefix(c.wd, host)+", a hostPath-style bind of a folder of its root disk)", r, "workdir-system")
		})
	}
}

// TestRT4HomeAliasThroughRootMirror: addHomeAliases hides or masks every
// path Aliases shows the home at, but Aliases leaves out a mount of the
// whole root filesystem elsewhere (mirror: same device, root /) — a
// backup's or rescue tool's `mount --bind / /mnt/root`, WSL's root view.
// When the home lies on the root filesystem, the mirror shows it whole:
// an unprivileged caller's agent (its own uid) reads ~/.ssh/id_ed25519 and
// ~/.aws/credentials there, whatever its workdir.
func TestRT4HomeAliasThroughRootMirror(t *testing.T) {
	e := setup(t, layout{name: "beside/user", gateOwned: true, user: true})
	mirror := filepath.Join(e.base, "rootview")
	if err := os.MkdirAll(mirror, 0o755); err != nil {
		t.Fatal(err)
	}
	through := filepath.Join(mirror, e.home)
	r := nsRun(t, e, "mount --bind / "+shq(mirror), ":", e.workdir, nil,
		"sh", "-c", `cat "$1/.ssh/id_ed25519" "$1/.aws/credentials" 2>&1; true`, "sh", through)
	for _, rel := range []string{".ssh/id_ed25519", ".aws/credentials"} {
		if strings.Contains(r.stdout, strings.TrimSpace(secrets[rel])) {
			t.Errorf("BREACH: the agent (workdir %s) read the caller's ~/%s through the mirror of / at %s (%s)", e.workdir, rel, mirror, filepath.Join(through, rel))
		}
	}
	if t.Failed() || r.code != 0 {
		t.Logf("exit %d\nagent:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestRT4HomeSubfolderAlias: an alias that shows only a part of the home
// (mount --bind ~/.ssh /srv/keys; a container's or a service's view of
// ~/.aws) is an Alias with Holds set (its root lies in the home), and
// addHomeAliases skips every Holds alias: neither hidden nor masked. The
// agent of an unprivileged caller reads the key there.
func TestRT4HomeSubfolderAlias(t *testing.T) {
	e := setup(t, layout{name: "beside/user", gateOwned: true, user: true})
	keys := filepath.Join(e.base, "srv-keys")
	aws := filepath.Join(e.base, "srv-aws")
	for _, d := range []string{keys, aws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	setupSh := "mount --bind " + shq(filepath.Join(e.home, ".ssh")) + " " + shq(keys) + "\nmount --bind " + shq(filepath.Join(e.home, ".aws")) + " " + shq(aws)
	r := nsRun(t, e, setupSh, ":", e.workdir, nil,
		"sh", "-c", `cat "$1/id_ed25519" "$2/credentials" 2>&1; true`, "sh", keys, aws)
	for _, c := range [][2]string{{".ssh/id_ed25519", filepath.Join(keys, "id_ed25519")}, {".aws/credentials", filepath.Join(aws, "credentials")}} {
		if strings.Contains(r.stdout, strings.TrimSpace(secrets[c[0]])) {
			t.Errorf("BREACH: the agent (workdir %s) read the caller's ~/%s through the bind of its folder at %s", e.workdir, c[0], c[1])
		}
	}
	if t.Failed() || r.code != 0 {
		t.Logf("exit %d\nagent:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestRT4PathFolderThroughLink: rule workdir-on-path compares the
// workdir (links resolved) with the caller's PATH entries as written;
// a PATH folder reached through a symbolic link — ~/bin a link to
// ~/dotfiles/bin (how dotfiles repositories install it), /usr/local/bin
// to /opt/tools/bin — is not the workdir's path, and the home's bin rule
// judges the resolved path (~/dotfiles/bin) only. The agent plants
// ~/bin/git, which the caller's next shell runs as git.
func TestRT4PathFolderThroughLink(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	real := filepath.Join(e.home, "dotfiles", "bin")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(e.home, "bin")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	e.path = link + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
	for _, wd := range []string{link, real} {
		t.Run(filepath.Base(filepath.Dir(wd))+"_"+filepath.Base(wd), func(t *testing.T) {
			target := filepath.Join(link, "git")
			t.Cleanup(func() { os.Remove(filepath.Join(real, "git")) })
			// The agent writes in its workdir as the session shows it
			// (the resolved path: ~/bin itself is the allow-list home's).
			r := nsRun(t, e, ":", probeCheck(target), wd, nil, writerArgv(filepath.Join(real, "git"))...)
			landed(t, "workdir "+wd+" (PATH has "+link+" -> "+real+")", r, "workdir-on-path")
		})
	}
}

// TestRT4PathEmptyEntry: an empty PATH entry (a leading or trailing ':',
// '::') and '.' mean the current folder; the rule skips every entry that
// is not absolute. The caller runs fedmem-run from its project, so the
// workdir is on its PATH: what the agent names `ls` there runs as the
// caller's ls when the caller next types it in the project.
func TestRT4PathEmptyEntry(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	for _, c := range []struct{ name, path string }{
		{"empty-entry", ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"},
		{"dot-entry", ".:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.path = c.path
			target := filepath.Join(e.workdir, "ls")
			t.Cleanup(func() { os.Remove(target) })
			r := nsRun(t, e, ":", probeCheck(target), e.workdir, nil, writerArgv(target)...)
			landed(t, "workdir "+e.workdir+" (the current folder; PATH="+c.path+")", r, "workdir-on-path")
		})
	}
}

// TestRT4HomeExemptsDaemonTree: daemon trees are refused but inside the
// caller's own home (inHomeProject), and the home is $HOME as the caller's
// environment says; rule home-system refuses a HOME in the system trees
// only, not in the daemon trees. HOME=/opt (a service account's
// environment, a script's HOME=/opt) makes /opt/containerd/bin — first
// on containerd's PATH — "a project of the home"; HOME=/var/lib makes
// /var/lib/dpkg/info (maintainer scripts apt runs as root) one. Each
// tree is a tmpfs canary in the namespace.
func TestRT4HomeExemptsDaemonTree(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	orig := e.home
	t.Cleanup(func() { e.home = orig })
	for _, c := range []struct{ name, home, setup, wd, target string }{
		{"home-opt", "/opt", "mount -t tmpfs -o mode=0755 rt4-opt /opt; mkdir -p /opt/containerd/bin", "/opt/containerd/bin", "/opt/containerd/bin/containerd-shim-runc-v2"},
		{"home-var-lib", "/var/lib", "mount -t tmpfs -o mode=0755 rt4-varlib /var/lib; mkdir -p /var/lib/dpkg/info", "/var/lib/dpkg/info", "/var/lib/dpkg/info/base-files.postinst"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.home = c.home
			r := nsRun(t, e, c.setup, probeCheck(c.target), c.wd, nil, writerArgv(c.target)...)
			landed(t, "HOME="+c.home+", workdir "+c.wd, r, "")
		})
	}
}

// TestRT4WorkdirVarTreesNotListed: rule workdir-system names the trees of
// /var daemons use (/var/lib, /var/cache, /var/log, /var/www…), a list;
// others are one entry short: Gentoo's package database /var/db/pkg
// (portage runs an installed package's ebuild, pkg_prerm, as root when
// it is removed or upgraded), Red Hat's /var/kerberos/krb5kdc (the KDC's
// kdc.conf and kadm5.acl), BIND's /var/named. /var in the namespace is a
// tmpfs holding the canaries (the test's own tree bound back into it).
func TestRT4WorkdirVarTreesNotListed(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	base := filepath.Dir(e.base) // testutil.SharedTestBase (or FEDMEM_TEST_TMP)
	setupSh := "mount -t tmpfs -o mode=0755 rt4-var /var\n" +
		"mkdir -p /var/tmp /var/lib /var/cache /var/db/pkg/sys-apps/rt4-1.0 /var/kerberos/krb5kdc /var/named\nchmod 1777 /var/tmp"
	if strings.HasPrefix(base, "/var/") {
		// The namespace's /mnt is a tmpfs holding a second view of the
		// test tree while /var is covered; it is bound back and the view
		// dropped.
		setupSh = "mount -t tmpfs rt4-mnt /mnt; mkdir /mnt/keep; mount --bind " + shq(base) + " /mnt/keep\n" + setupSh + "\n" +
			"mkdir -p " + shq(base) + "\nmount --bind /mnt/keep " + shq(base) + "\numount /mnt/keep; umount /mnt"
	}
	for _, c := range []struct{ wd, target string }{
		{"/var/db/pkg", "/var/db/pkg/sys-apps/rt4-1.0/rt4-1.0.ebuild"},
		{"/var/kerberos/krb5kdc", "/var/kerberos/krb5kdc/kadm5.acl"},
		{"/var/named", "/var/named/named.conf"},
	} {
		t.Run(strings.ReplaceAll(strings.TrimPrefix(c.wd, "/"), "/", "_"), func(t *testing.T) {
			r := nsRun(t, e, setupSh, probeCheck(c.target), c.wd, nil, writerArgv(c.target)...)
			landed(t, "workdir "+c.wd, r, "workdir-system")
		})
	}
}

// TestRT4WorkdirHoldsBareRepos: rule workdir-git-dir refused a Git folder
// or a folder in one; a folder that holds bare repositories (a plain Git
// server's /srv/git, cgit's scan path) was neither, and the persistence
// holds look for ROOT/.git only. The agent wrote
// proj.git/hooks/post-receive, which runs at the next push (PARTIAL: the
// after-walk moved HEAD aside). A folder holding a bare *.git repository
// is refused now (workdir-git-dir).
func TestRT4WorkdirHoldsBareRepos(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	srv := filepath.Join(e.base, "srv-git")
	repo := filepath.Join(srv, "proj.git")
	if err := os.MkdirAll(srv, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := execGit("init", "-q", "--bare", repo); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	hook := filepath.Join(repo, "hooks", "post-receive")
	r := nsRun(t, e, ":", `if [ -e '`+hook+`' ]; then echo "LANDED `+hook+` owner uid $(stat -c %u '`+hook+`')"; fi`, srv, nil, writerArgv(hook)...)
	// The session after-walk moves a bare layout touched during the
	// session aside (its HEAD): Git no longer takes the folder for a
	// repository, so the hook does not run — until the user follows the
	// warning's "restore it with mv if it is yours", which names HEAD, not
	// the planted hook (PARTIAL: the hook is left in place).
	if strings.Contains(r.check, "LANDED") && r.code == 0 && strings.Contains(r.stderr, "proj.git/HEAD moved aside") {
		if _, err := os.Stat(filepath.Join(repo, "HEAD")); err == nil {
			t.Errorf("BREACH: %s planted and the repository's HEAD still in place", hook)
		}
		t.Logf("PARTIAL: workdir %s: %s written, the repository disabled (HEAD moved aside): %s", srv, hook, firstLine([]byte(r.stderr), "moved aside"))
		return
	}
	landed(t, "workdir "+srv+" (holds the bare repository "+repo+")", r, "workdir-git-dir")
}

func execGit(args ...string) ([]byte, error) { return exec.Command("git", args...).CombinedOutput() }

// TestRT4SocketThroughRootMirror: the host's shared /var/tmp is a private
// tmpfs inside (a world-writable socket there does not exist for the
// agent), but a mirror of / that Aliases leaves out (mount --bind /
// VIEW) shows the host's /var/tmp under VIEW: a 0777 socket a host
// process listens on answers the agent there. The listener is started in
// the namespace and ends on its own; it records what connected.
func TestRT4SocketThroughRootMirror(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	mirror := filepath.Join(e.base, "rootview")
	if err := os.MkdirAll(mirror, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join("/var/tmp", rt3Probe()+".sock")
	got := filepath.Join(e.base, "connected")
	t.Cleanup(func() { os.Remove(sock) })
	listener := `import socket,os,sys
s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1],0o777); s.listen(4); s.settimeout(20)
try:
    while True:
        c,_=s.accept(); open(sys.argv[2],"a").write("CONNECTED\n"); c.close()
except Exception: pass
os.unlink(sys.argv[1])`
	setupSh := "mount --bind / " + shq(mirror) + "\n" + py + " -c " + shq(listener) + " " + shq(sock) + " " + shq(got) + " &\n" +
		"for i in 1 2 3 4 5 6 7 8 9 10; do [ -S " + shq(sock) + " ] && break; sleep 0.2; done"
	client := `import socket,sys
for p in sys.argv[1:]:
    try:
        s=socket.socket(socket.AF_UNIX); s.connect(p); print("reached", p)
    except Exception as e: print("not reached", p, e)`
	r := nsRun(t, e, setupSh, "[ -s "+shq(got)+" ] && echo \"LANDED a connection to "+sock+"\"", e.workdir, nil,
		py, "-c", client, sock, filepath.Join(mirror, sock))
	if strings.Contains(r.check, "LANDED") {
		t.Errorf("BREACH: the agent connected to the host's 0777 socket %s (hidden at its own path) through the mirror of / at %s\nagent: %s", sock, mirror, r.stdout)
	} else {
		t.Logf("exit %d; agent: %s; stderr: %s", r.code, r.stdout, r.stderr)
	}
}

// TestRT4HomeAliasHoldingWorkdirShowsUnmasked: an alias of $HOME that
// holds the workdir (the caller works in /mnt/data/home/me/proj, and
// /home/me is a bind of /mnt/data/home/me) is not hidden:
// addHomeAliases keeps its tree and lays the profile's home masks over it
// — the deny-list (~/.ssh, ~/.aws, ~/.config/gh…). At $HOME the
// allow-list decides: what the profile does not show does not exist. At
// the alias everything else of the home shows: an agent's own login
// tokens (~/.codex/auth.json, ~/.claude/.credentials.json), Cargo's
// registry token, the shell history. An unprivileged caller's agent reads
// them.
func TestRT4HomeAliasHoldingWorkdirShowsUnmasked(t *testing.T) {
	e := setup(t, layout{name: "beside/user", gateOwned: true, user: true})
	// None is on the home's mask list (profiles' DefaultMasks and
	// secrets.go: those are masked at the alias, checked first).
	tokens := map[string]string{
		".config/sops/age/keys.txt":     "AGE-SECRET-KEY-1FAKEAGE-rt4a\n",
		".cache/huggingface/token":      "hf_FAKE-HF-TOKEN-rt4b\n",
		".pulumi/credentials.json":      `{"accessTokens":{"https://api.pulumi.com":"pul-FAKE-PULUMI-rt4c"}}`,
		".config/glab-cli/config.yml":   "hosts:\n  gitlab.com:\n    token: glpat-FAKE-GLAB-rt4d\n",
		".fly/config.yml":               "access_token: fo1_FAKE-FLY-rt4e\n",
		".kaggle/kaggle.json":           `{"username":"me","key":"FAKE-KAGGLE-rt4f"}`,
		".local/share/atuin/history.db": "export OPENAI_API_KEY=FAKE-ATUIN-rt4g\n",
	}
	for rel, v := range tokens {
		p := filepath.Join(e.home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	proj := filepath.Join(e.home, "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := testutil.ChownTree(e.home, agentUID, agentUID); err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(e.base, "mnt-data", "home", "me")
	if err := os.MkdirAll(alias, 0o755); err != nil {
		t.Fatal(err)
	}
	var files []string
	for rel := range tokens {
		files = append(files, filepath.Join(alias, rel))
	}
	r := nsRun(t, e, "mount --bind "+shq(e.home)+" "+shq(alias), ":", filepath.Join(alias, "proj"), nil,
		append([]string{"sh", "-c", `cat "$@" 2>&1; true`, "sh"}, files...)...)
	for rel, v := range tokens {
		marker := v[strings.Index(v, "FAKE"):]
		marker = marker[:strings.Index(marker, "rt4")+4]
		if strings.Contains(r.stdout, marker) {
			t.Errorf("BREACH: the agent (workdir %s) read the caller's ~/%s (hidden at $HOME by the allow-list) through the home's alias %s", filepath.Join(alias, "proj"), rel, filepath.Join(alias, rel))
		}
	}
	if t.Failed() || r.code != 0 {
		t.Logf("exit %d\nagent:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}
