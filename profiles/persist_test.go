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
		TTY: "auto", Writable: []string{"/srv/proj/.git/hooks", "/srv/proj/src"}, Require: []string{"seccomp"}}
	w, errs := Check(p)
	all := strings.Join(w, "\n")
	for _, want := range []string{`home.writable ".codex/" holds ~/.codex/config.toml`, `writable[0] "/srv/proj/.git/hooks" is a project's .git/hooks`} {
		if !strings.Contains(all, want) {
			t.Errorf("no warning %q in:\n%s (errors %v)", want, all, errs)
		}
	}
	if strings.Contains(all, ".cache/x") || strings.Contains(all, "/srv/proj/src") {
		t.Errorf("warning for a harmless path:\n%s", all)
	}
}
