package mounts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/vault"
)

// persistTable is the mountinfo text a correct backend adds for the plan's
// Protected (read-only) and Pinned mounts; nothing for an empty base table.
func persistTable(pl *Plan, base string) string {
	if base == "" {
		return ""
	}
	var b strings.Builder
	for i, m := range pl.Mounts {
		opt := "rw"
		if m.Kind == Protected {
			opt = "ro"
		} else if m.Kind != Pinned {
			continue
		}
		fmt.Fprintf(&b, "%d 1 0:%d / %s %s,nosuid,nodev - tmpfs tmpfs rw\n", 100+i, 100+i, m.Target, opt)
	}
	return b.String()
}

// fakeHost is a host tree for Build: paths ending in "/" are directories.
func fakeHost(paths ...string) func(string) (bool, bool) {
	return func(p string) (bool, bool) {
		for _, x := range paths {
			if x == p+"/" {
				return true, true
			}
			if x == p {
				return true, false
			}
		}
		return false, false
	}
}

// fakeList lists the same tree as fakeHost (mounts.Input List).
func fakeList(paths ...string) func(string) ([]string, error) {
	return func(dir string) ([]string, error) {
		var out []string
		seen := map[string]bool{}
		for _, x := range paths {
			rest, ok := strings.CutPrefix(x, dir+"/")
			if !ok || rest == "" {
				continue
			}
			name, _, _ := strings.Cut(rest, "/")
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
		return out, nil
	}
}

func kinds(pl *Plan) map[string]Mount {
	out := map[string]Mount{}
	for _, m := range pl.Mounts {
		if m.Kind == Protected || m.Kind == Pinned {
			if _, dup := out[m.Target]; dup {
				panic("duplicate protected target " + m.Target)
			}
			out[m.Target] = m
		}
	}
	return out
}

// TestPersistencePlan: at the top of the workdir the plan holds the
// repository's hooks and config (an absent .git/worktrees, .git/modules
// under a placeholder, which Git never lists) and every existing entry
// that matches a persistence family (.envrc, lefthook-local.yml,
// .cargo/config.toml, .claude/settings.json, .hg/hgrc), pinning their
// parents; an absent family name gets no mount and no placeholder — the
// after-session walk judges it — so no placeholder lies in the workdir
// outside .git (issue 23: placeholders were committed by git add -A).
func TestPersistencePlan(t *testing.T) {
	p, _, err := profiles.Load("claude")
	if err != nil {
		t.Fatal(err)
	}
	tree := []string{"/w/", "/w/.git/", "/w/.git/hooks/", "/w/.git/config", "/w/.git/info/", "/w/.claude/",
		"/w/.claude/settings.json", "/w/.claude/CLAUDE.md", "/w/.envrc", "/w/lefthook-local.yml", "/w/.cargo/", "/w/.cargo/config.toml",
		"/w/.hg/", "/w/.hg/hgrc", "/w/.hg/store/", "/w/README.md", "/w/CLAUDE.md",
		"/home/u/", "/home/u/.claude/", "/home/u/.claude/settings.json", "/home/u/.bashrc",
		"/v/", "/v/.git/"}
	pl, err := Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/w", Home: "/home/u", Exists: fakeHost(tree...), List: fakeList(tree...)})
	if err != nil {
		t.Fatal(err)
	}
	got := kinds(pl)
	want := map[string]struct {
		kind   Kind
		create bool
		dir    bool
	}{
		"/w/.git":                             {Pinned, false, true},
		"/w/.git/hooks":                       {Protected, false, true},
		"/w/.git/config":                      {Protected, false, false},
		"/w/.git/info":                        {Protected, false, true},
		"/w/.git/worktrees":                   {Protected, true, true},
		"/w/.git/modules":                     {Protected, true, true},
		"/w/.envrc":                           {Protected, false, false},
		"/w/lefthook-local.yml":               {Protected, false, false},
		"/w/.cargo":                           {Pinned, false, true},
		"/w/.cargo/config.toml":               {Protected, false, false},
		"/w/.hg":                              {Pinned, false, true},
		"/w/.hg/hgrc":                         {Protected, false, false},
		"/w/.claude":                          {Pinned, false, true},
		"/w/.claude/settings.json":            {Protected, false, false},
		"/home/u/.claude/settings.json":       {Protected, false, false},
		"/home/u/.claude/settings.local.json": {Protected, true, false},
		"/home/u/.claude/hooks":               {Protected, true, true},
	}
	for target, w := range want {
		m, ok := got[target]
		if !ok || m.Kind != w.kind || m.Placeholder != w.create || m.Dir != w.dir {
			t.Errorf("%s: got %+v (present %v), want kind %s create %v dir %v", target, m, ok, w.kind, w.create, w.dir)
		}
	}
	// Home is read-only under this profile: its rc files need no mount;
	// the vault's own .git is the vault's read-only bind's; absent family
	// names, the hg store, the project's instructions and content are not
	// held.
	for _, target := range []string{"/home/u/.bashrc", "/home/u/.codex/config.toml", "/v/.git/hooks", "/v/.git",
		"/w/.mcp.json", "/w/.vscode", "/w/.claude/commands", "/w/.claude/settings.local.json", "/w/.codex", "/w/.cursor",
		"/w/.hg/store", "/w/CLAUDE.md", "/w/.claude/CLAUDE.md", "/w/README.md", "/w/lefthook.yml", "/w/.npmrc"} {
		if m, ok := got[target]; ok {
			t.Errorf("%s: unexpected %+v", target, m)
		}
	}
	for _, m := range pl.Placeholders() {
		if vault.Within(m.Target, "/w") && !vault.Within(m.Target, "/w/.git") {
			t.Errorf("placeholder %s in the workdir outside .git: git status lists it, git add -A commits it", m.Target)
		}
	}
	// Order: after every writable bind, before the vault; a pin before
	// what it holds.
	idx := map[string]int{}
	for i, m := range pl.Mounts {
		idx[string(m.Kind)+" "+m.Target] = i
	}
	for _, pair := range [][2]string{
		{"rw /w", "pinned /w/.git"}, {"rw /home/u/.claude", "protected /home/u/.claude/settings.json"},
		{"pinned /w/.git", "protected /w/.git/hooks"}, {"protected /w/.git/config", "ro /v"},
		{"pinned /w/.cargo", "protected /w/.cargo/config.toml"},
	} {
		a, ok1 := idx[pair[0]]
		b, ok2 := idx[pair[1]]
		if !ok1 || !ok2 || a >= b {
			t.Errorf("want %q before %q", pair[0], pair[1])
		}
	}
	if len(pl.Placeholders()) == 0 || pl.Placeholders()[0].Kind != Protected {
		t.Errorf("placeholders: %+v", pl.Placeholders())
	}
}

// TestPersistenceInstructionsReadOnly: under `instructions: read-only` the
// existing instruction files at the top are held like a family.
func TestPersistenceInstructionsReadOnly(t *testing.T) {
	p, _, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	tree := []string{"/w/", "/w/CLAUDE.md", "/w/AGENTS.md", "/w/.github/", "/w/.github/copilot-instructions.md", "/w/README.md", "/v/"}
	in := Input{Vault: "/v", Session: "s1", Workdir: "/w", Home: "/home/u", Exists: fakeHost(tree...), List: fakeList(tree...)}
	pl, err := Build(p.PlanRequest(), in)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := kinds(pl)["/w/CLAUDE.md"]; ok {
		t.Errorf("instructions held under the default (report): %+v", m)
	}
	p.Instructions = profiles.InstructionsReadOnly
	if pl, err = Build(p.PlanRequest(), in); err != nil {
		t.Fatal(err)
	}
	got := kinds(pl)
	for _, target := range []string{"/w/CLAUDE.md", "/w/AGENTS.md", "/w/.github/copilot-instructions.md"} {
		if m, ok := got[target]; !ok || m.Kind != Protected || m.Placeholder {
			t.Errorf("%s under instructions: read-only: got %+v (present %v), want protected", target, m, ok)
		}
	}
	if _, ok := got["/w/README.md"]; ok || !pl.InstructionsReadOnly {
		t.Errorf("README held or plan flag unset: %v", pl.InstructionsReadOnly)
	}
}

// TestPersistenceNoRepo: the workdir as home holds the rc files, .git
// and every other dot-entry through the home's read-only top (homeTop),
// not by names: no placeholder is planted in the home; a project in it is
// writable through its own bind.
func TestPersistenceNoRepo(t *testing.T) {
	p, _, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	tree := []string{"/home/u/", "/home/u/.bashrc", "/home/u/.config/", "/home/u/proj/", "/home/u/notes.txt", "/v/"}
	pl, err := Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/home/u", Home: "/home/u",
		Exists: fakeHost(tree...), List: fakeList(tree...)})
	if err != nil {
		t.Fatal(err)
	}
	if pl.HomeTop != "/home/u" {
		t.Errorf("HomeTop %q, want /home/u", pl.HomeTop)
	}
	for target := range kinds(pl) {
		if vault.Within(target, "/home/u") {
			t.Errorf("%s held by name (a placeholder or bind in the home): the read-only top holds it", target)
		}
	}
	var order []string
	for _, m := range pl.Mounts {
		if vault.Within(m.Target, "/home/u") && (m.Kind == BindRO || m.Kind == BindRW) && !m.State {
			order = append(order, string(m.Kind)+" "+m.Target)
		}
	}
	want := []string{"rw /home/u", "ro /home/u", "rw /home/u/notes.txt", "rw /home/u/proj"}
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Errorf("binds in the home %v, want %v (the read-only top over the workdir, the non-dot entries writable)", order, want)
	}
}

func TestVerifyPersistence(t *testing.T) {
	pl := testPlan(t)
	full := goodTable + persistTable(pl, goodTable)
	if err := Verify(pl, strings.NewReader(full)); err != nil {
		t.Fatalf("good table: %v", err)
	}
	var target string
	for _, m := range pl.Mounts {
		if m.Kind == Protected && strings.HasSuffix(m.Target, "/w/.git") {
			target = m.Target
		}
	}
	if target == "" {
		t.Fatal("no protected .git in the test plan")
	}
	for name, table := range map[string]string{
		"writable":    strings.Replace(full, " "+target+" ro,", " "+target+" rw,", 1),
		"not mounted": dropLine(full, " "+target+" "),
	} {
		var ve *VerifyError
		if err := Verify(pl, strings.NewReader(table)); !errors.As(err, &ve) || ve.Rule != "persistence-readonly" || ve.Path != target {
			t.Errorf("%s: got %v, want persistence-readonly for %s", name, err, target)
		}
	}
}

func dropLine(table, needle string) string {
	var out []string
	for _, l := range strings.Split(table, "\n") {
		if !strings.Contains(l, needle) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestPersistenceConfiguredAbsent: a hooks directory or script the user's
// Git config names that does not exist yet gets no placeholder in the
// workdir (one would be an entry Git lists): it is watched (Plan.Watch,
// moved aside after the session if it appeared); inside .git a placeholder
// still holds it (Git lists nothing there).
func TestPersistenceConfiguredAbsent(t *testing.T) {
	p, _, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	tree := []string{"/w/", "/w/.git/", "/w/.git/config", "/w/.git/hooks/", "/w/tools/", "/v/"}
	cfg := "[core]\n\thooksPath = .githooks\n\tfsmonitor = tools/monitor.sh\n[alias]\n\tx = !.git/scripts/x.sh\n"
	pl, err := Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/w", Home: "/home/u", Exists: fakeHost(tree...), List: fakeList(tree...),
		ReadFile: func(f string) ([]byte, error) {
			if f == "/w/.git/config" {
				return []byte(cfg), nil
			}
			return nil, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	got := kinds(pl)
	for _, target := range []string{"/w/.githooks", "/w/tools/monitor.sh"} {
		if m, ok := got[target]; ok {
			t.Errorf("%s: %+v; an absent configured path in the workdir gets no mount", target, m)
		}
	}
	if strings.Join(pl.Watch, " ") != "/w/.githooks /w/tools/monitor.sh" {
		t.Errorf("watch: %v, want the two absent configured paths", pl.Watch)
	}
	if m, ok := got["/w/.git/scripts"]; !ok || m.Kind != Protected || !m.Placeholder {
		t.Errorf("/w/.git/scripts: got %+v (present %v), want a placeholder (inside .git)", m, ok)
	}
	qc := strings.Join(pl.QuarantineCandidates(), " ")
	if !strings.Contains(qc, "/w/.githooks") || !strings.Contains(qc, "/w/tools/monitor.sh") || !strings.Contains(qc, "/w/.git/commondir") {
		t.Errorf("quarantine candidates %q: want the watched names and .git/commondir", qc)
	}
}

// TestPersistenceFamilyLink: a family name at the top that is a symbolic
// link cannot be held by a mount on its name (the session was refused);
// its target is held instead where it lies in a writable path, and nothing
// where it lies outside (read-only already). A link to the workdir itself
// is a warning, not a read-only workdir.
func TestPersistenceFamilyLink(t *testing.T) {
	p, _, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	tree := []string{"/w/", "/w/AGENTS.md", "/w/.clinerules", "/w/.codex", "/w/shared/", "/w/shared/codex/", "/w/.npmrc", "/w/.zed", "/etc/npmrc", "/v/"}
	links := map[string]string{"/w/.clinerules": "/w/AGENTS.md", "/w/.codex": "/w/shared/codex", "/w/.npmrc": "/etc/npmrc", "/w/.zed": "/w"}
	pl, err := Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/w", Home: "/home/u", Exists: fakeHost(tree...), List: fakeList(tree...),
		RealPath: func(p string) string {
			if r, ok := links[p]; ok {
				return r
			}
			return p
		}})
	if err != nil {
		t.Fatal(err)
	}
	got := kinds(pl)
	for target, dir := range map[string]bool{"/w/AGENTS.md": false, "/w/shared/codex": true} {
		if m, ok := got[target]; !ok || m.Kind != Protected || m.Placeholder || m.Dir != dir {
			t.Errorf("%s (a family link's target): got %+v (present %v), want protected", target, m, ok)
		}
	}
	for _, target := range []string{"/w/.clinerules", "/w/.codex", "/w/.npmrc", "/etc/npmrc", "/w/.zed", "/w"} {
		if m, ok := got[target]; ok {
			t.Errorf("%s: unexpected %+v", target, m)
		}
	}
	if m := got["/w/shared"]; m.Kind != Pinned {
		t.Errorf("/w/shared: %+v, want pinned (holds the link's target)", m)
	}
	if !strings.Contains(strings.Join(pl.Warnings, "\n"), "/w is a writable path and a link to it is a persistence name") {
		t.Errorf("no warning for .zed -> /w: %v", pl.Warnings)
	}
}

// TestListedSocketsBoundBack: every listed socket is bound back onto
// itself once, read-only and marked Idmap (for a root caller the backend
// idmaps it owner→agent: issue 23), wherever it lies — the read-only host
// tree and the workdir as under /run — after the writable binds, so none
// covers it; one in the vault is left to the vault.
func TestListedSocketsBoundBack(t *testing.T) {
	p, _, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	p.UnixSockets = []string{"/srv/app/x.sock", "/w/run/y.sock", "/run/z.sock", "/v/gate.sock", "/srv/app/"}
	tree := []string{"/w/", "/w/run/", "/w/run/y.sock", "/srv/app/", "/srv/app/x.sock", "/run/", "/run/z.sock", "/v/", "/v/gate.sock", "/home/u/"}
	pl, err := Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/w", Home: "/home/u", Exists: fakeHost(tree...)})
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	work := -1
	for i, m := range pl.Mounts {
		if m.Target == "/w" && m.Kind == BindRW {
			work = i
		}
		if m.Why != WhyListedSocket {
			continue
		}
		n[m.Target]++
		if m.Kind != BindRO || !m.Idmap || m.Source != m.Target {
			t.Errorf("%s: %+v, want a read-only bind onto itself marked Idmap", m.Target, m)
		}
		if m.Target == "/w/run/y.sock" && i < work {
			t.Errorf("the workdir's listed socket is bound before the workdir (covered by it)")
		}
	}
	for _, s := range []string{"/srv/app/x.sock", "/w/run/y.sock", "/run/z.sock"} {
		if n[s] != 1 {
			t.Errorf("%s bound %d times, want once", s, n[s])
		}
	}
	if n["/v/gate.sock"] != 0 || n["/srv/app"] != 0 {
		t.Errorf("a socket in the vault or a directory bound as a listed socket: %v", n)
	}
	if strings.Join(pl.UnixSockets, ",") != "/srv/app/x.sock,/w/run/y.sock,/run/z.sock,/v/gate.sock,/srv/app" {
		t.Errorf("Plan.UnixSockets (Landlock's resolve-unix grants) %v", pl.UnixSockets)
	}
}

// TestHomeTopEntriesBounded: a home in the workdir with more non-dot
// entries than MaxHomeEntries (one bind each) is refused, naming the home
// and the rule, not half-planned.
func TestHomeTopEntriesBounded(t *testing.T) {
	p, _, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	tree := []string{"/home/u/", "/v/"}
	for i := 0; i <= MaxHomeEntries; i++ {
		tree = append(tree, fmt.Sprintf("/home/u/d%04d/", i))
	}
	_, err = Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/home/u", Home: "/home/u", Exists: fakeHost(tree...), List: fakeList(tree...)})
	if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "/home/u") || !strings.Contains(err.Error(), RuleHomeConfig) {
		t.Fatalf("got %v, want ErrPlan naming the home and %s", err, RuleHomeConfig)
	}
	if _, err := Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/home/u", Home: "/home/u", Exists: fakeHost(tree[:MaxHomeEntries+2]...), List: fakeList(tree[:MaxHomeEntries+2]...)}); err != nil {
		t.Fatalf("%d entries refused: %v", MaxHomeEntries, err)
	}
}

// TestHomeLinksHeld: with the home in the workdir, a dot-entry that links
// into a writable non-dot folder (a dotfiles checkout) has its target held
// read-only, the folders on the way pinned; a link that stays among the
// dot-entries needs nothing (read-only already); a dangling one is watched.
func TestHomeLinksHeld(t *testing.T) {
	p, _, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	p.Home.Writable = []string{".granted/"} // the agent's: its links hold nothing
	tree := []string{"/home/u/", "/home/u/.granted/", "/home/u/.granted/l", "/home/u/proj/", "/home/u/proj/main.go", "/home/u/.inputrc", "/home/u/.config/", "/home/u/.config/nvim", "/home/u/.zshenv", "/home/u/.alias",
		"/home/u/dotfiles/", "/home/u/dotfiles/shell/", "/home/u/dotfiles/shell/inputrc", "/home/u/dotfiles/nvim/", "/home/u/.real", "/v/"}
	links := map[string]string{"/home/u/.granted/l": "../proj/main.go", "/home/u/.inputrc": "dotfiles/shell/inputrc", "/home/u/.config/nvim": "../dotfiles/nvim", "/home/u/.zshenv": "dotfiles/zshenv", "/home/u/.alias": ".real"}
	real := func(p string) string {
		if t, ok := links[p]; ok && t != "dotfiles/zshenv" {
			return filepath.Clean(filepath.Join(filepath.Dir(p), t))
		}
		return p
	}
	readlink := func(p string) (string, error) {
		if t, ok := links[p]; ok {
			return t, nil
		}
		return "", errors.New("not a link")
	}
	pl, err := Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/home/u", Home: "/home/u",
		Exists: fakeHost(tree...), List: fakeList(tree...), RealPath: real, Readlink: readlink})
	if err != nil {
		t.Fatal(err)
	}
	got := kinds(pl)
	for target, kind := range map[string]Kind{
		"/home/u/dotfiles/shell/inputrc": Protected, "/home/u/dotfiles/shell": Pinned, "/home/u/dotfiles": Pinned, "/home/u/dotfiles/nvim": Protected,
	} {
		if m, ok := got[target]; !ok || m.Kind != kind {
			t.Errorf("%s: got %+v (present %v), want %s", target, m, ok, kind)
		}
	}
	if _, ok := got["/home/u/proj/main.go"]; ok {
		t.Error("a link the agent left in a granted dot-path (home.writable) held a project file")
	}
	if _, ok := got["/home/u/.real"]; ok {
		t.Error("a link among the dot-entries held by name: the read-only top holds it")
	}
	if !slices.Contains(pl.Watch, "/home/u/dotfiles/zshenv") {
		t.Errorf("the dangling ~/.zshenv's target is not watched: %v", pl.Watch)
	}
}

// TestListedSocketThroughLinkNotBound (rule unix-socket-no-link): a listed
// socket whose path goes through a link — a folder on the way replaced by
// a link in the writable workdir, the socket's own name a link, the
// allow-list home's — is not bound (the bind would follow it wherever the
// link's writer chose), not granted to Landlock, and a warning names it
// with its real path and the rule.
func TestListedSocketThroughLinkNotBound(t *testing.T) {
	p, _, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	p.UnixSockets = []string{"/w/sock/app.sock", "/w/own.sock", "/home/u/.app/a.sock", "/run/z.sock"}
	tree := []string{"/w/", "/w/sock/app.sock", "/w/own.sock", "/srv/app.sock", "/home/u/", "/home/u/.app/a.sock", "/run/", "/run/z.sock"}
	links := map[string]string{"/w/sock/app.sock": "/srv/app.sock", "/home/u/.app/a.sock": "/run/docker.sock"}
	pl, err := Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/w", Home: "/home/u", Exists: fakeHost(tree...),
		RealPath: func(s string) string {
			if r, ok := links[s]; ok {
				return r
			}
			return s
		},
		Readlink: func(s string) (string, error) {
			if s == "/w/own.sock" {
				return "../srv/app.sock", nil // a dangling-looking link at the name itself
			}
			return "", os.ErrInvalid
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range pl.Mounts {
		if m.Why == WhyListedSocket && m.Target != "/run/z.sock" {
			t.Errorf("%s bound (%+v): its path goes through a link", m.Target, m)
		}
	}
	if strings.Join(pl.UnixSockets, ",") != "/run/z.sock" {
		t.Errorf("Plan.UnixSockets (Landlock's grants) %v, want only /run/z.sock", pl.UnixSockets)
	}
	for _, s := range []string{"/w/sock/app.sock", "/w/own.sock", "/home/u/.app/a.sock"} {
		found := false
		for _, w := range pl.Warnings {
			if strings.Contains(w, "unix_sockets "+s+":") && strings.Contains(w, RuleSocketNoLink) {
				found = true
			}
		}
		if !found {
			t.Errorf("no warning naming %s and rule %s: %v", s, RuleSocketNoLink, pl.Warnings)
		}
	}
}

// TestHomeNamedHeld (rule home-config-readonly): with the workdir the
// home, what names code inside its writable non-dot entries is held —
// a PATH directory, a home.show entry, a file ~/.bashrc sources, a
// PATH=$HOME/x line, a sourced glob's folder, ~/.config's include, an
// absent sourced file (watched) — and what names a place is not: a `cd`
// alias's folder, a Git includeIf gitdir: condition, a path in a history
// file, an absent path nothing sources.
func TestHomeNamedHeld(t *testing.T) {
	p, _, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	tree := []string{"/home/u/", "/home/u/.bashrc", "/home/u/.gitconfig", "/home/u/.bash_history", "/home/u/.config/", "/home/u/.config/fish/", "/home/u/.config/fish/config.fish",
		"/home/u/bin/", "/home/u/go/", "/home/u/go/bin/", "/home/u/tools/", "/home/u/tools/bin/", "/home/u/dotfiles/", "/home/u/dotfiles/aliases.sh", "/home/u/dotfiles/bash/", "/home/u/dotfiles/fish.fish", "/home/u/dotfiles/rel.sh", "/home/u/pylib/", "/home/u/zfuncs/", "/home/u/.vimrc", "/home/u/vimfiles/", "/home/u/lbin", "/home/u/dotfiles/bin/",
		"/home/u/proj/", "/home/u/proj/main.go", "/home/u/work/", "/home/u/work/client/", "/v/"}
	files := map[string]string{
		"/home/u/.bashrc":                  "export GOPATH=$HOME/go\nexport PYTHONPATH=$HOME/pylib\nfpath=(~/zfuncs $fpath)\n. dotfiles/rel.sh\n. ~/dotfiles/aliases.sh\nfor f in ~/dotfiles/bash/*.sh; do . \"$f\"; done\nexport PATH=\"$HOME/tools/bin:$PATH\"\nalias p='cd ~/proj'\n[ -f ~/dotfiles/local.sh ] && . ~/dotfiles/local.sh\necho ~/proj/notes.txt\n",
		"/home/u/.gitconfig":               "[includeIf \"gitdir:~/work/client/\"]\n\tpath = ~/dotfiles/client.gitconfig\n",
		"/home/u/.bash_history":            "vim ~/proj/main.go\n",
		"/home/u/.vimrc":                   "set runtimepath+=~/vimfiles\n",
		"/home/u/.config/fish/config.fish": "source /home/u/dotfiles/fish.fish\n",
	}
	pl, err := Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/home/u", Home: "/home/u",
		Exists: fakeHost(tree...), List: fakeList(tree...), PathDirs: []string{"/home/u/bin", "/usr/bin", "relative/bin", "/home/u/lbin"},
		RealPath: func(x string) string {
			if x == "/home/u/lbin" {
				return "/home/u/dotfiles/bin"
			}
			return x
		},
		ReadFile: func(f string) ([]byte, error) { return []byte(files[f]), nil }})
	if err != nil {
		t.Fatal(err)
	}
	got := kinds(pl)
	if _, ok := got["/home/u/lbin"]; ok {
		t.Error("a PATH entry that is a link held at the link (a mount point must not be one)")
	}
	for _, target := range []string{"/home/u/pylib", "/home/u/zfuncs", "/home/u/vimfiles", "/home/u/dotfiles/rel.sh", "/home/u/dotfiles/bin", "/home/u/bin", "/home/u/go/bin", "/home/u/dotfiles/aliases.sh", "/home/u/dotfiles/bash", "/home/u/tools/bin", "/home/u/dotfiles/fish.fish"} {
		if m, ok := got[target]; !ok || m.Kind != Protected {
			t.Errorf("%s: got %+v (present %v), want Protected", target, m, ok)
		}
	}
	for _, target := range []string{"/home/u/go", "/home/u/proj", "/home/u/proj/main.go", "/home/u/work/client", "/home/u/dotfiles"} {
		if m, ok := got[target]; ok && m.Kind == Protected {
			t.Errorf("%s held read-only (%+v): it is named as a place, not as code", target, m)
		}
	}
	for _, w := range []string{"/home/u/dotfiles/local.sh", "/home/u/dotfiles/client.gitconfig"} {
		if !slices.Contains(pl.Watch, w) {
			t.Errorf("the absent sourced %s is not watched: %v", w, pl.Watch)
		}
	}
	if slices.Contains(pl.Watch, "/home/u/proj/notes.txt") {
		t.Errorf("an absent path nothing sources is watched: %v", pl.Watch)
	}
}

// TestHomeStartupHardLinkRefused: a home in a writable path whose startup
// file has a second hard link is refused, naming the file and the rule;
// a hard-linked file in a cache (~/.cache/uv, pnpm's store) is not a
// startup file and refuses nothing.
func TestHomeStartupHardLinkRefused(t *testing.T) {
	p, _, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		linked string
		refuse bool
	}{{"/home/u/.tmux.conf", true}, {"/home/u/.config/fish/config.fish", true}, {"/home/u/.cache/uv/x", false}, {"/home/u/.config/granted/x", false}} {
		// .config/granted is the profile's home.writable: the agent's.
		p.Home.Writable = []string{".config/granted/"}
		tree := []string{"/home/u/", "/home/u/.tmux.conf", "/home/u/.config/", "/home/u/.config/fish/", "/home/u/.config/fish/config.fish", "/home/u/.cache/", "/home/u/.cache/uv/", "/home/u/.cache/uv/x", "/home/u/.config/granted/", "/home/u/.config/granted/x", "/home/u/dotfiles/", "/v/"}
		_, err := Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/home/u", Home: "/home/u",
			Exists: fakeHost(tree...), List: fakeList(tree...), ReadFile: func(string) ([]byte, error) { return nil, nil },
			Links: func(x string) int {
				if x == c.linked {
					return 2
				}
				return 1
			}})
		switch {
		case c.refuse && (err == nil || !strings.Contains(err.Error(), c.linked) || !strings.Contains(err.Error(), RuleHomeConfig)):
			t.Errorf("%s hard-linked: %v, want a refusal naming it and %s", c.linked, err, RuleHomeConfig)
		case !c.refuse && err != nil:
			t.Errorf("%s hard-linked: %v, want no refusal", c.linked, err)
		}
	}
}
