package escape

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
)

// homeStartupFiles are files in a home that a tool the user runs every day
// sources or runs by itself (a login shell, an interactive shell, an
// editor, a terminal multiplexer), none of them in HomePersist: no list of
// names holds them all.
var homeStartupFiles = []string{
	".cargo/env",                    // rustup adds `. "$HOME/.cargo/env"` to .profile and .bashrc
	".bashrc.d/rt.sh",               // Fedora's default .bashrc sources ~/.bashrc.d/*
	".config/fish/conf.d/rt.fish",   // fish sources every conf.d file
	".oh-my-zsh/custom/rt.zsh",      // oh-my-zsh sources $ZSH_CUSTOM/*.zsh
	".config/nvim/init.lua",         // neovim's user config
	".tmux.conf",                    // tmux: run-shell
	".emacs.d/init.el",              // emacs' user init
	".config/git/attributes",        // with a filter in a config
	".config/environment.d/rt.conf", // held (control)
	".profile",                      // a login shell's (HomePersist: control)
	".bashrc",                       // exists on the host (HomePersist: control)
}

// homeTopProbe tries every way the red team found to leave a startup
// file in a home that is the workdir, and the writes that must still work.
// One line per attempt: "<name> ok" or "<name> <errno name>".
const homeTopProbe = `
import errno, os, sys
H = os.environ["HOME"]
def out(name, f):
    try:
        f()
        print(name, "ok")
    except OSError as x:
        print(name, errno.errorcode.get(x.errno, str(x.errno)))
def write(p):
    def f():
        d = os.path.dirname(p)
        if not os.path.isdir(d):
            os.makedirs(d)
        with open(p, "a") as fh:
            fh.write("touch /tmp/pwned\n")
    return f
for rel in sys.argv[1:]:
    out("write:" + rel, write(os.path.join(H, rel)))
# renames: the dot-directory moved to a non-dot name (then written and
# moved back), a non-dot directory replaced
out("rename-dot-away", lambda: os.rename(H + "/.bashrc.d", H + "/bashrc.d"))
out("rename-proj", lambda: os.rename(H + "/proj", H + "/proj.old"))
out("move-into-dot", lambda: os.rename(H + "/proj/f", H + "/.profile"))
# hard links across the boundary, both ways
out("link-dot-into-proj", lambda: os.link(H + "/.bashrc", H + "/proj/bashrc"))
out("link-proj-into-dot", lambda: os.link(H + "/proj/f", H + "/.bashrc.d/f.sh"))
# symbolic links: planted at the top, planted in a project and written
# through, and the host's own non-dot link to a dot-directory
out("symlink-top", lambda: os.symlink(".bashrc.d", H + "/bd"))
out("symlink-in-proj", lambda: os.symlink("../.tmux.conf", H + "/proj/t"))
out("write-via-proj-link", write(H + "/proj/t"))
out("write-via-host-link", write(H + "/cfg/nvim/init.vim"))
# a dotfiles checkout: startup files that are links into a writable
# non-dot folder (stow, rcm, dotbot) — the target is the startup file
out("write-via-dot-link", write(H + "/.zshrc"))
out("write-link-target", write(H + "/dotfiles/zshrc"))
out("write-dir-link-target", write(H + "/dotfiles/nvim/init.lua"))
out("write-deep-link-target", write(H + "/dotfiles/shell/inputrc"))
out("rename-link-target-parent", lambda: os.rename(H + "/dotfiles/shell", H + "/dotfiles/shell2"))
out("dotfiles-other", write(H + "/dotfiles/README"))
out("write-dangling-target", write(H + "/dotfiles/zshenv"))
# a new name at the home's top level (refused: documented)
out("new-top-file", write(H + "/newtop.txt"))
# what must still work: the projects, their dot-files, a granted dot-dir
out("proj-write", write(H + "/proj/new.txt"))
out("proj-dotfile", write(H + "/proj/.env.local"))
out("proj-file", write(H + "/proj/f"))
out("granted", write(H + "/.rtgrant/state"))
`

// TestHomeStartupFilesInWorkdir: with the home in the writable workdir,
// nothing of the home's configuration is writable — existing dot-entries,
// new ones, at any depth, by rename, hard or symbolic link — while the
// agent runs (EROFS in the kernel: a host shell reading ~/.bashrc.d during
// the session finds it as it was), and nothing is left after the session;
// the projects in it stay writable, and a dot-directory the profile names
// in home.writable too (guarantee 6; docs/threat-model.md, rule
// home-config-readonly). On the old code every write went through.
func TestHomeStartupFilesInWorkdir(t *testing.T) {
	for _, l := range []layout{{name: "workdir-is-home/root"}, {name: "workdir-is-home/user", user: true, agentOwned: true}, {name: "workdir-holds-home/root"}} {
		t.Run(l.name, func(t *testing.T) { testHomeStartupFilesInWorkdir(t, l) })
	}
}

func testHomeStartupFilesInWorkdir(t *testing.T, l layout) {
	e := setup(t, l)
	e.workdir = e.home
	if strings.HasPrefix(l.name, "workdir-holds-home/") {
		e.workdir = e.base // the home's parent: the vault lies in it too
	}
	// .rtgrant does not exist: the profile's home.writable names it, and
	// the launcher makes it.
	for _, d := range []string{".bashrc.d", ".config", "proj"} {
		must(t, os.MkdirAll(filepath.Join(e.home, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(e.home, "proj", "f"), []byte("project file\n"), 0o644))
	must(t, os.Symlink(".config", filepath.Join(e.home, "cfg")))
	for _, d := range []string{"dotfiles/nvim", "dotfiles/shell"} {
		must(t, os.MkdirAll(filepath.Join(e.home, d), 0o755))
	}
	for _, f := range []string{"dotfiles/zshrc", "dotfiles/nvim/init.lua", "dotfiles/shell/inputrc", "dotfiles/README"} {
		must(t, os.WriteFile(filepath.Join(e.home, f), []byte("# the user's\n"), 0o644))
	}
	must(t, os.Symlink("dotfiles/zshrc", filepath.Join(e.home, ".zshrc")))
	must(t, os.Symlink("../dotfiles/nvim", filepath.Join(e.home, ".config", "nvim2")))
	must(t, os.Symlink("dotfiles/shell/inputrc", filepath.Join(e.home, ".inputrc")))
	must(t, os.Symlink("dotfiles/zshenv", filepath.Join(e.home, ".zshenv"))) // dangling
	profDir := e.outDir
	if e.workdir == e.base {
		profDir = testutil.TempDir(t) // not in a path the agent may write
	}
	prof := filepath.Join(profDir, "hometop.yaml")
	must(t, os.WriteFile(prof, []byte("name: hometop\nextends: default\nhome:\n  writable: [.rtgrant/]\n"), 0o644))
	if l.user {
		must(t, testutil.ChownTree(e.home, agentUID, agentUID))
	}
	bashrc, _ := os.ReadFile(filepath.Join(e.home, ".bashrc"))
	evs := filepath.Join(e.outDir, "events.jsonl")
	o, s, c := e.rtsbRun(t, []string{"--profile", prof, "--events", evs}, nil, append([]string{"python3", "-c", homeTopProbe}, homeStartupFiles...)...)
	t.Logf("session: exit %d\nstdout:\n%s\nstderr:\n%s", c, o, s)
	if c != 0 {
		t.Fatalf("exit %d", c)
	}
	got := map[string]string{}
	for _, ln := range strings.Split(o, "\n") {
		if k, v, ok := strings.Cut(ln, " "); ok {
			got[k] = v
		}
	}
	want := map[string][]string{
		"rename-dot-away":           {"EROFS"},
		"rename-proj":               {"EROFS", "EBUSY"},
		"move-into-dot":             {"EXDEV", "EROFS"},
		"link-dot-into-proj":        {"EXDEV", "EROFS"},
		"link-proj-into-dot":        {"EXDEV", "EROFS"},
		"symlink-top":               {"EROFS"},
		"symlink-in-proj":           {"ok"},
		"write-via-proj-link":       {"EROFS"},
		"write-via-host-link":       {"EROFS"},
		"new-top-file":              {"EROFS"},
		"write-via-dot-link":        {"EROFS"},
		"write-link-target":         {"EROFS"},
		"write-dir-link-target":     {"EROFS"},
		"write-deep-link-target":    {"EROFS"},
		"rename-link-target-parent": {"EBUSY"},
		"dotfiles-other":            {"ok"},
		"write-dangling-target":     {"ok"}, // watched: moved aside after the session

		"proj-write":   {"ok"},
		"proj-dotfile": {"ok"},
		"proj-file":    {"ok"},
		"granted":      {"ok"},
	}
	for _, f := range homeStartupFiles {
		want["write:"+f] = []string{"EROFS"}
	}
	for k, w := range want {
		if !contains(w, got[k]) {
			t.Errorf("%s: %q, want one of %v", k, got[k], w)
		}
	}
	// After the session: nothing of it on the host.
	var kept []string
	for _, f := range homeStartupFiles {
		if b, err := os.ReadFile(filepath.Join(e.home, f)); err == nil && strings.Contains(string(b), "pwned") {
			kept = append(kept, f)
		}
	}
	if len(kept) > 0 {
		t.Errorf("startup files the agent wrote into the home, kept after the session: %v", kept)
	}
	if b, _ := os.ReadFile(filepath.Join(e.home, ".bashrc")); string(b) != string(bashrc) {
		t.Errorf(".bashrc changed: %q", b)
	}
	for _, p := range []string{"bashrc.d", "bd", "newtop.txt", "proj.old", ".bashrc.d/f.sh", ".config/nvim/init.vim"} {
		if _, err := os.Lstat(filepath.Join(e.home, p)); err == nil {
			t.Errorf("%s exists on the host after the session", p)
		}
	}
	if b, err := os.ReadFile(filepath.Join(e.home, "dotfiles", "zshenv")); err == nil {
		t.Errorf("dotfiles/zshenv, the target of the dangling ~/.zshenv, kept after the session: %q", b)
	}
	for _, f := range []string{"dotfiles/zshrc", "dotfiles/nvim/init.lua", "dotfiles/shell/inputrc"} {
		if b, _ := os.ReadFile(filepath.Join(e.home, f)); string(b) != "# the user's\n" {
			t.Errorf("%s, a startup file's link target, changed: %q", f, b)
		}
	}
	for _, p := range []string{"proj/new.txt", "proj/.env.local", ".rtgrant/state", "dotfiles/README"} {
		if b, err := os.ReadFile(filepath.Join(e.home, p)); err != nil || !strings.Contains(string(b), "pwned") {
			t.Errorf("%s: the agent's write did not reach the host (%v)", p, err)
		}
	}
	// Why: each refusal is a filesystem denial naming the rule.
	named := map[string]bool{}
	for _, m := range eventsOf(t, evs, "denied") {
		if h, _ := m["hint"].(string); m["kind"] == "filesystem" && m["errno"] == "EROFS" && strings.Contains(h, "home-config-readonly") {
			p, _ := m["path"].(string)
			named[p] = true
		}
	}
	for _, p := range []string{".tmux.conf", ".bashrc", ".cargo/env", ".bashrc.d", "bd", "newtop.txt"} {
		if !named[filepath.Join(e.home, p)] {
			t.Errorf("no EROFS denial naming rule home-config-readonly for %s; got %v", p, named)
		}
	}
}
