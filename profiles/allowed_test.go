package profiles

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckAllowed: a project profile (at any depth) or a file inside a
// writable path is used only once its content is allowed; a changed file is
// refused again; the user's folder and a file outside every writable path
// need no allow. The refusal names the file, its hash, the rule and the
// command.
func TestCheckAllowed(t *testing.T) {
	root := t.TempDir()
	os.Chmod(root, 0o755)
	work, home := filepath.Join(root, "work"), filepath.Join(root, "home")
	for _, d := range []string{work, home, filepath.Join(home, ".config")} {
		os.MkdirAll(d, 0o755)
		os.Chmod(d, 0o755)
	}
	store := AllowStore(home)
	writable := []string{work}
	sub := filepath.Join(work, "sub")
	os.MkdirAll(filepath.Join(sub, ".fedmem"), 0o755)
	search := SearchPath(sub, home)
	search[2].Dir = filepath.Join(root, "etc") // not the real /etc
	proj := writeProfile(t, search[0].Dir, "evil", "name: evil\nextends: default\n")
	os.Chmod(search[0].Dir, 0o755)
	os.Chmod(filepath.Dir(search[0].Dir), 0o755)

	load := func(name string) error {
		p, _, err := LoadFrom(name, search)
		if err != nil {
			t.Fatalf("load %s: %v", name, err)
		}
		return CheckAllowed(p, search, writable, store)
	}
	err := load("evil")
	_, hash, _ := HashFile(proj)
	if !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), proj) || !strings.Contains(err.Error(), hash) ||
		!strings.Contains(err.Error(), "rule:") || !strings.Contains(err.Error(), "fedmem profile allow "+proj) {
		t.Fatalf("unallowed project profile: %v", err)
	}
	// Outside every writable path it is still a project's .fedmem/profiles.
	p, _, _ := LoadFrom("evil", search)
	if err := CheckAllowed(p, search, nil, store); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("project profile with no writable path: %v", err)
	}
	if err := Allow(store, proj, hash); err != nil {
		t.Fatal(err)
	}
	if err := Allow(store, proj, hash); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(store); strings.Count(string(b), hash) != 1 {
		t.Errorf("store after two allows: %q", b)
	}
	if err := load("evil"); err != nil {
		t.Errorf("allowed: %v", err)
	}
	// Changed content: refused again.
	os.WriteFile(proj, []byte("name: evil\nextends: default\nnetwork: host\n"), 0o644)
	if err := load("evil"); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("changed after allow: %v", err)
	}
	// An explicit file in the workdir; the extends chain is checked too.
	f := writeProfile(t, work, "agent", "name: agent\nextends: "+filepath.Join(root, "base.yaml")+"\n")
	base := writeProfile(t, root, "base", "name: base\nextends: default\n")
	if err := load(f); !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), "lies inside "+work) {
		t.Errorf("file in the workdir: %v", err)
	}
	_, h, _ := HashFile(f)
	Allow(store, f, h)
	if err := load(f); err != nil {
		t.Errorf("allowed file extending one outside: %v", err)
	}
	writable = append(writable, root)
	if err := load(f); !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), base) {
		t.Errorf("extends a file in a writable path: %v", err)
	}
	// The user's folder needs no allow even inside a writable path.
	writeProfile(t, search[1].Dir, "mine", "name: mine\nextends: default\n")
	os.Chmod(search[1].Dir, 0o755)
	os.Chmod(filepath.Dir(search[1].Dir), 0o755)
	writable = append(writable, home)
	if err := load("mine"); err != nil {
		t.Errorf("user profile: %v", err)
	}
	// A store others may write is refused.
	os.Chmod(store, 0o666)
	if err := load(f); !errors.Is(err, ErrUntrustedProfile) || !strings.Contains(err.Error(), store) {
		t.Errorf("world-writable store: %v", err)
	}
}
