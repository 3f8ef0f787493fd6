package escape

import (
	"github.com/fedmem/fedmem/test/testutil"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Red team of issue 22 (the home in a writable path, listed sockets bound
// back idmapped, Landlock granting exactly the listed sockets).

// TestRT22ListedSocketLinkPlanted: a socket the profile lists in the
// workdir (a dev server's socket, W/sock/app.sock) is bound back onto
// itself idmapped root→agent. The agent, in one session, moves the
// socket's folder aside (the bind is on the socket, not on its folder:
// rename works) and leaves a relative link in its place, W/sock ->
// ../srv. In the next session the listed path resolves, on the host and in
// the sandbox alike, to ../srv/app.sock: a root-only (0600) socket in the
// host tree the sandbox shows read-only, which the profile does not list.
// On the old code that bind followed the link and, idmapped root→agent,
// made the agent the socket's owner: it answered (HOST-SOCKET) — on every
// backend. The same link into /run (../../run with a listed docker.sock)
// reaches the host's docker socket. Rule unix-socket-no-link: a listed
// path that goes through a link is not bound (a warning names it and its
// real path); the unlisted socket refuses the agent (EACCES: DAC). A link
// the agent puts at a listed name that was absent (its server not running)
// refused the next session on the old code (exit 125: the mount point is
// a link) and is not bound either.
func TestRT22ListedSocketLinkPlanted(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	srv := filepath.Join(e.base, "srv")
	must(t, os.MkdirAll(srv, 0o755))
	secret := filepath.Join(srv, "app.sock")
	serveSocket(t, secret, 0, 0, 0o600)
	sockDir := filepath.Join(e.workdir, "sock")
	must(t, os.MkdirAll(sockDir, 0o755))
	listed := filepath.Join(sockDir, "app.sock")
	serveSocket(t, listed, 0, 0, 0o600)
	// A second listed socket, absent when the session starts (its server
	// is not running): the agent puts a link at the name itself.
	absent := filepath.Join(e.workdir, "later.sock")
	prof := filepath.Join(e.outDir, "listed.yaml")
	must(t, os.WriteFile(prof, []byte("name: listed\nextends: default\nunix_sockets: ["+listed+", "+absent+"]\n"), 0o644))

	// Session 1: the listed socket answers; the agent plants the links.
	plant := `python3 -c "$1" "LISTED=$2" "SECRET=$3" && mv "$4" "$4.old" && ln -s ../srv "$4" && ln -s ../srv/app.sock "$5" && echo PLANTED`
	o1, s1, c1 := e.rtsbRun(t, []string{"--profile", prof}, nil, "sh", "-c", plant, "sh", socketProbe, listed, secret, sockDir, absent)
	t.Logf("session 1: exit %d\n%s%s", c1, o1, s1)
	got1 := parseProbe([]byte(o1))
	if c1 != 0 || got1["LISTED"] != "HOST-SOCKET" || !strings.Contains(o1, "PLANTED") {
		t.Fatalf("session 1: the listed socket did not answer or the link was not planted (exit %d): %v", c1, got1)
	}
	if got1["SECRET"] != "EACCES" {
		t.Fatalf("session 1: the unlisted root-only socket: %q, want EACCES", got1["SECRET"])
	}
	if fi, err := os.Lstat(sockDir); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was not left on the host: %v", err)
	}

	// Session 2: the listed path now goes through the agent's link.
	o2, s2, c2 := e.rtsbRun(t, []string{"--profile", prof}, nil, "python3", "-c", socketProbe, "VIA_LISTED="+listed, "VIA_NAME="+absent, "SECRET="+secret)
	t.Logf("session 2: exit %d\n%s%s", c2, o2, s2)
	if c2 != 0 {
		t.Fatalf("session 2: exit %d (a planted link must not refuse the next session)", c2)
	}
	got2 := parseProbe([]byte(o2))
	for _, k := range []string{"VIA_LISTED", "VIA_NAME", "SECRET"} {
		if got2[k] != "EACCES" {
			t.Errorf("%s: %q, want EACCES (the unlisted root-only socket behind the agent's link must not answer)", k, got2[k])
		}
	}
	for _, l := range []string{listed, absent} {
		if !strings.Contains(s2, "unix_sockets "+l+": the path goes through a symbolic link") || !strings.Contains(s2, "unix-socket-no-link") {
			t.Errorf("no warning naming %s and rule unix-socket-no-link on stderr:\n%s", l, s2)
		}
	}
}

// rt22HomeProbe writes each path (relative to $HOME) given as NAME=rel and
// prints "NAME ok" or "NAME <errno>".
const rt22HomeProbe = `
import errno, os, sys
H = os.environ["HOME"]
for arg in sys.argv[1:]:
    name, rel = arg.split("=", 1)
    p = os.path.join(H, rel)
    try:
        with open(p, "a") as fh:
            fh.write("touch /tmp/pwned\n")
        print(name, "ok")
    except OSError as x:
        print(name, errno.errorcode.get(x.errno, str(x.errno)))
print("END")
`

// TestRT22HomeCodeInNonDotEntries: with the workdir the home, the
// read-only top holds every dot-entry, but code the user's next login runs
// also lies in non-dot entries, writable through their own binds:
//
//   - ~/bin on the caller's PATH (Debian's and Ubuntu's ~/.profile put an
//     existing ~/bin first on PATH): a planted ~/bin/git runs instead of
//     git in the user's next shell; ~/go/bin likewise (go install's
//     default, on PATH, and in the default profile's home.show: shown
//     read-only, not a place to write);
//   - a startup file that sources a file of a non-dot folder by name, not
//     through a link (~/.bashrc: ". ~/dotfiles/aliases.sh",
//     'source "$HOME/scripts/env.sh"'): the sourced file is the startup
//     file;
//   - a dotfiles link deeper than the link walk's 3 levels (GNU stow
//     unfolds ~/.config/nvim when two packages share it:
//     ~/.config/nvim/lua/user/init.lua -> ../../../../dotfiles/nvim/init.lua).
//
// On the old code every one was written (ok) and kept. Rule
// home-config-readonly: what the caller's PATH, the profile's home.show
// and the home's own startup files name in a non-dot entry is held
// read-only (EROFS) like the dot-entries; the rest of the entry, and the
// projects, stay writable.
func TestRT22HomeCodeInNonDotEntries(t *testing.T) {
	for _, l := range []layout{{name: "workdir-is-home/root"}, {name: "workdir-is-home/user", user: true, agentOwned: true}, {name: "workdir-holds-home/root"}} {
		t.Run(l.name, func(t *testing.T) { testRT22HomeCodeInNonDotEntries(t, l) })
	}
}

func testRT22HomeCodeInNonDotEntries(t *testing.T, l layout) {
	e := setup(t, l)
	e.workdir = e.home
	if strings.HasPrefix(l.name, "workdir-holds-home/") {
		e.workdir = e.base // the home's parent: the vault lies in it too
	}
	h := e.home
	for _, d := range []string{"bin", "go/bin", "go/src/proj", "dotfiles/nvim", "scripts", "proj", ".config/nvim/lua/user"} {
		must(t, os.MkdirAll(filepath.Join(h, d), 0o755))
	}
	files := map[string]string{
		"bin/mytool":             "#!/bin/sh\necho the user's tool\n",
		"go/bin/gopls":           "binary\n",
		"dotfiles/aliases.sh":    "alias ll='ls -l'\n",
		"dotfiles/nvim/init.lua": "-- the user's\n",
		"scripts/env.sh":         "export X=1\n",
		"proj/f":                 "project file\n",
		".bashrc":                "# user's bashrc\n. ~/dotfiles/aliases.sh\nsource \"$HOME/scripts/env.sh\"\n",
	}
	for rel, c := range files {
		must(t, os.WriteFile(filepath.Join(h, rel), []byte(c), 0o644))
	}
	must(t, os.Symlink("../../../../dotfiles/nvim/init.lua", filepath.Join(h, ".config/nvim/lua/user/init.lua")))
	must(t, os.MkdirAll(filepath.Join(h, "dotfiles", "bin"), 0o755))
	must(t, os.Symlink("dotfiles/bin", filepath.Join(h, "lbin"))) // a dotfiles checkout's bin on PATH
	if l.user {
		must(t, testutil.ChownTree(h, agentUID, agentUID))
	}
	path := "PATH=" + filepath.Join(h, "bin") + ":" + filepath.Join(h, "go", "bin") + ":" + filepath.Join(h, "lbin") + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
	o, s, c := e.rtsbRun(t, nil, []string{path}, "python3", "-c", rt22HomeProbe,
		"BIN_TOOL=bin/mytool", "BIN_NEW=bin/git", "LINKED_BIN=lbin/git", "GOBIN_NEW=go/bin/go", "GOBIN_TOOL=go/bin/gopls",
		"SOURCED=dotfiles/aliases.sh", "SOURCED_HOME=scripts/env.sh", "DEEP_LINK=.config/nvim/lua/user/init.lua", "DEEP_TARGET=dotfiles/nvim/init.lua",
		"PROJ=proj/new.txt", "GOSRC=go/src/proj/main.go", "OTHER_SCRIPT=scripts/other.txt")
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", c, o, s)
	if c != 0 || !strings.Contains(o, "END") {
		t.Fatalf("the probe did not run (exit %d)", c)
	}
	got := parseProbe([]byte(o))
	for _, k := range []string{"BIN_TOOL", "BIN_NEW", "LINKED_BIN", "GOBIN_NEW", "GOBIN_TOOL", "SOURCED", "SOURCED_HOME", "DEEP_LINK", "DEEP_TARGET"} {
		if got[k] != "EROFS" {
			t.Errorf("%s: %q, want EROFS (code the user's next login runs, rule home-config-readonly)", k, got[k])
		}
	}
	for _, k := range []string{"PROJ", "GOSRC", "OTHER_SCRIPT"} {
		if got[k] != "ok" {
			t.Errorf("%s: %q, want ok (a project's file stays writable)", k, got[k])
		}
	}
	for rel, want := range files {
		if b, _ := os.ReadFile(filepath.Join(h, rel)); string(b) != want {
			t.Errorf("%s changed on the host: %q", rel, b)
		}
	}
	for _, rel := range []string{"bin/git", "go/bin/go", "dotfiles/bin/git"} {
		if _, err := os.Lstat(filepath.Join(h, rel)); err == nil {
			t.Errorf("%s exists on the host after the session", rel)
		}
	}
}

// TestRT22HomeDotFileHardLinked: a startup file that is a hard link to a
// file in a writable non-dot entry (`ln ~/dotfiles/tmux.conf
// ~/.tmux.conf`, as some dotfiles set-ups do, without -s) is one inode
// under two names: the read-only top holds ~/.tmux.conf's name, not the
// inode, and on the old code the agent wrote it through
// ~/dotfiles/tmux.conf (ok, kept after the session: the user's next tmux
// runs its run-shell lines; a .vimrc so linked is moved aside after the
// session by the editors family, its inode still changed under
// ~/dotfiles). Neither the link walk (symbolic links) nor the names the
// startup files hold see the other name, and finding it means walking
// every project: the session is refused (exit 125), naming the file, its
// hard links and rule home-config-readonly.
func TestRT22HomeDotFileHardLinked(t *testing.T) {
	e := setup(t, layout{name: "workdir-is-home/root"})
	e.workdir = e.home
	must(t, os.MkdirAll(filepath.Join(e.home, "dotfiles"), 0o755))
	src := filepath.Join(e.home, "dotfiles", "tmux.conf")
	must(t, os.WriteFile(src, []byte("# the user's\n"), 0o644))
	must(t, os.Link(src, filepath.Join(e.home, ".tmux.conf")))
	o, s, c := e.rtsbRun(t, nil, nil, "python3", "-c", rt22HomeProbe, "VIA_NAME=.tmux.conf", "VIA_OTHER_NAME=dotfiles/tmux.conf")
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", c, o, s)
	if b, _ := os.ReadFile(src); string(b) != "# the user's\n" {
		t.Errorf("~/.tmux.conf written through its hard link ~/dotfiles/tmux.conf (%s): %q", parseProbe([]byte(o))["VIA_OTHER_NAME"], b)
	}
	if c != 125 || strings.Contains(o, "END") {
		t.Fatalf("exit %d, want 125 (refused before the agent runs)", c)
	}
	for _, w := range []string{filepath.Join(e.home, ".tmux.conf"), "2 hard links", "home-config-readonly"} {
		if !strings.Contains(s, w) {
			t.Errorf("the refusal does not name %q:\n%s", w, s)
		}
	}
}

// TestRT22WorkdirPathDirPlanted (open breach, FEDMEM_OPEN_BREACHES=1): the
// caller's PATH names a folder of the workdir (direnv's PATH_add bin in
// the project's .envrc, a `export PATH=$PWD/bin:$PATH`): the agent leaves
// bin/git there, and the user's next `git` in that shell — a command the
// user did not choose to take from the project — runs it. The fix that
// holds a home's PATH folders read-only (homeNamed) is not applied to the
// workdir: a project's bin/ is often its build output (`make` writes it),
// and holding it read-only breaks the build. Candidate fixes: hold a PATH
// folder of a writable root read-only unless the profile names it
// writable, or report a program created there after the session (the
// after-session walk) and move it aside. Under workdir: propose it does not
// reach the tree and is flagged (TestProposeFlagsProgramOnPath).
func TestRT22WorkdirPathDirPlanted(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	bin := filepath.Join(e.workdir, "bin")
	must(t, os.MkdirAll(bin, 0o755))
	path := "PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
	o, s, c := e.rtsbRun(t, nil, []string{path}, "sh", "-c", `printf '#!/bin/sh\necho PLANTED-GIT\n' > "$1/git" && chmod +x "$1/git" && echo WROTE`, "sh", bin)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", c, o, s)
	if _, err := os.Stat(filepath.Join(bin, "git")); err == nil {
		if os.Getenv("FEDMEM_OPEN_BREACHES") != "1" {
			t.Skipf("open breach (FEDMEM_OPEN_BREACHES=1 makes it fail): %s/git, on the caller's PATH, written and kept", bin)
		}
		t.Errorf("%s/git, on the caller's PATH, written by the agent and kept after the session (want EROFS or moved aside)", bin)
	}
}
