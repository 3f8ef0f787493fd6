package mounts

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/profiles"
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

func TestPersistencePlan(t *testing.T) {
	p, _, err := profiles.Load("claude")
	if err != nil {
		t.Fatal(err)
	}
	host := fakeHost("/w/", "/w/.git/", "/w/.git/hooks/", "/w/.git/config", "/w/.git/info/", "/w/.claude/",
		"/w/.claude/settings.json", "/home/u/", "/home/u/.claude/", "/home/u/.claude/settings.json", "/home/u/.bashrc",
		"/v/", "/v/.git/")
	pl, err := Build(p, Input{Vault: "/v", Session: "s1", Workdir: "/w", Home: "/home/u", Exists: host})
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
		"/w/.envrc":                           {Protected, true, false},
		"/w/.mcp.json":                        {Protected, true, false},
		"/w/.vscode":                          {Protected, true, true},
		"/w/.claude":                          {Pinned, false, true},
		"/w/.claude/settings.json":            {Protected, false, false},
		"/w/.claude/commands":                 {Protected, true, true},
		"/w/.codex":                           {Protected, true, true},
		"/w/.cursor":                          {Protected, true, true},
		"/w/.zed":                             {Protected, true, true},
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
	// the vault's own .git is the vault's read-only bind's.
	for _, target := range []string{"/home/u/.bashrc", "/home/u/.codex/config.toml", "/v/.git/hooks", "/v/.git"} {
		if m, ok := got[target]; ok {
			t.Errorf("%s: unexpected %+v", target, m)
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

// TestPersistenceNoRepo: without a .git the name itself is held, so the
// agent cannot `git init` a repository with hooks of its own; the workdir
// as home protects the rc files.
func TestPersistenceNoRepo(t *testing.T) {
	p, _, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := Build(p, Input{Vault: "/v", Session: "s1", Workdir: "/home/u", Home: "/home/u",
		Exists: fakeHost("/home/u/", "/home/u/.bashrc", "/home/u/.config/", "/v/")})
	if err != nil {
		t.Fatal(err)
	}
	got := kinds(pl)
	for target, kind := range map[string]Kind{
		"/home/u/.git": Protected, "/home/u/.bashrc": Protected, "/home/u/.zshrc": Protected,
		"/home/u/.config": Pinned, "/home/u/.config/fish": Protected, "/home/u/.config/systemd": Protected,
	} {
		if m, ok := got[target]; !ok || m.Kind != kind {
			t.Errorf("%s: got %+v (present %v), want %s", target, m, ok, kind)
		}
	}
	if _, ok := got["/home/u/.git/hooks"]; ok {
		t.Error("/home/u/.git/hooks planned although /home/u/.git is held as a whole")
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
		if m.Kind == Protected && strings.HasSuffix(m.Target, "/.envrc") {
			target = m.Target
		}
	}
	if target == "" {
		t.Fatal("no protected .envrc in the test plan")
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
