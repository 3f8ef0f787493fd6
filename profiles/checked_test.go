package profiles

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadCheckedLocates: a profile that breaks a rule is refused by
// LoadChecked with the file, the line and the rule — also when the
// offending setting comes from the profile it extends.
func TestLoadCheckedLocates(t *testing.T) {
	dir := t.TempDir()
	parent := filepath.Join(dir, "parent.yaml")
	child := filepath.Join(dir, "child.yaml")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(parent, "name: parent\nextends: default\n\nwritable:\n  - /srv/ok\n  - /etc\n")
	write(child, "name: child\nextends: "+parent+"\nwritable: [/usr/local/x]\n")
	_, _, _, err := LoadChecked(child)
	if err == nil || !errors.Is(err, ErrBreaksRule) {
		t.Fatalf("LoadChecked(child) = %v, want ErrBreaksRule", err)
	}
	for _, want := range []string{
		parent + `:6: writable[1] "/etc" lies inside the system directory /etc`,
		"(rule writable-system-dir)",
		child + `:3: writable[2] "/usr/local/x" lies inside the system directory /usr`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %q:\n%v", want, err)
		}
	}
	p, hash, warns, err := LoadChecked("testdata/valid.yaml")
	if err != nil || p == nil || hash == "" {
		t.Fatalf("LoadChecked(valid) = %v, %q, %v", p, hash, err)
	}
	_ = warns
}
