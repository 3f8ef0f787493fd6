package profiles

import (
	"strings"
	"testing"
)

func TestPersistenceWarnings(t *testing.T) {
	p, _, err := Load("claude")
	if err != nil {
		t.Fatal(err)
	}
	w, _ := Check(p)
	if !strings.Contains(strings.Join(w, "\n"), `home.writable ".claude/" holds ~/.claude/settings.json`) {
		t.Errorf("claude: no warning about ~/.claude/settings.json:\n%s", strings.Join(w, "\n"))
	}
	p = &Profile{Name: "x", Network: NetworkNone, Home: Home{Mode: "ro", Writable: []string{".codex/", ".cache/x/"}},
		TTY: "auto", Writable: []string{"/srv/proj/.git/hooks", "/srv/proj/src", "/srv/proj/.cargo/config.toml", "/srv/proj/lefthook-local.yml"}, Require: []string{"seccomp"}}
	w, errs := Check(p)
	all := strings.Join(w, "\n")
	for _, want := range []string{`home.writable ".codex/" holds ~/.codex/config.toml`, `writable[0] "/srv/proj/.git/hooks" is a project's .git/hooks`,
		`writable[2] "/srv/proj/.cargo/config.toml" is a project's .cargo/config.* (package managers and tool version managers)`,
		`writable[3] "/srv/proj/lefthook-local.yml" is a project's lefthook-local.y*ml (git hook managers)`} {
		if !strings.Contains(all, want) {
			t.Errorf("no warning %q in:\n%s (errors %v)", want, all, errs)
		}
	}
	if strings.Contains(all, ".cache/x") || strings.Contains(all, "/srv/proj/src") {
		t.Errorf("warning for a harmless path:\n%s", all)
	}
}

// TestBuiltinLimits: every built-in agent profile bounds pids, memory and
// /tmp; cgroup_optional covers the inherited defaults only.
func TestBuiltinLimits(t *testing.T) {
	for _, name := range []string{"default", "claude", "codex", "aider", "strict", "ci"} {
		p, _, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		l := p.Limits
		if l.Pids == 0 || l.Memory == 0 || l.TmpBytes == 0 {
			t.Errorf("%s: limits %+v, want pids, memory and tmp_bytes", name, l)
		}
		if name != "ci" && (!l.OptionalMemory || !l.OptionalPids) {
			t.Errorf("%s: the default limits should be cgroup_optional: %+v", name, l)
		}
	}
	parent, _, err := Load("default")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		body           string
		memOpt, pidOpt bool
	}{
		{"name: a\n", true, true},
		{"name: a\nlimits:\n  memory: 64MiB\n", false, true},
		{"name: a\nlimits:\n  pids: 32\n", true, false},
		{"name: a\nlimits:\n  pids: 32\n  cgroup_optional: true\n", true, true},
	} {
		child, err := Parse("test", []byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		m := merge(parent, child)
		if m.Limits.OptionalMemory != c.memOpt || m.Limits.OptionalPids != c.pidOpt {
			t.Errorf("%q over default: optional memory %v pids %v, want %v %v", c.body, m.Limits.OptionalMemory, m.Limits.OptionalPids, c.memOpt, c.pidOpt)
		}
	}
}
