package intake

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/vault"
)

// TestReceiptThroughPlantedLink: a receipts folder or a receipt an agent
// replaced by a symbolic link is never written through; OpenAt refuses a
// link at the last component and in a parent.
func TestReceiptThroughPlantedLink(t *testing.T) {
	v, outside := t.TempDir(), t.TempDir()
	sess := filepath.Join(v, vault.InboxDir, "s-1")
	if err := os.MkdirAll(sess, 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := Open(v)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	// A receipt replaced by a link to a file outside: the rename replaces
	// the link, the outside file keeps its content.
	target := filepath.Join(outside, "victim")
	if err := os.WriteFile(target, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(sess, ".receipts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(sess, ".receipts", "d.md.json")); err != nil {
		t.Fatal(err)
	}
	if err := in.WriteReceipt("s-1", "d.md", []byte("{}\n"), ".tmp-1"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep\n" {
		t.Errorf("the receipt was written through the planted link: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(sess, ".receipts", "d.md.json")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("receipt is not a regular file: %v %v", fi, err)
	}
	// A receipts folder that is a link: refused.
	other := filepath.Join(v, vault.InboxDir, "s-2")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(other, ".receipts")); err != nil {
		t.Fatal(err)
	}
	if err := in.WriteReceipt("s-2", "d.md", []byte("{}\n"), ".tmp-2"); err == nil {
		t.Errorf("a receipt was written into a linked receipts folder")
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("the outside folder holds %d entries, want only the victim", len(ents))
	}
	if _, err := OpenAt(in.FD(), "s-2/.receipts/x", unix.O_RDONLY); !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.EXDEV) {
		t.Errorf("OpenAt through a linked parent: %v, want ELOOP or EXDEV", err)
	}
}

// TestNames: receipts of long names are hashed within NAME_MAX, and dot
// or .tmp names are still being written.
func TestNames(t *testing.T) {
	if got := ReceiptName("a.md"); got != "a.md.json" {
		t.Errorf("ReceiptName(a.md) = %q", got)
	}
	long := strings.Repeat("x", 252)
	if got := ReceiptName(long); len(got) > 255 || !strings.HasPrefix(got, "sha256-") {
		t.Errorf("ReceiptName of a 252-byte name = %q", got)
	}
	for n, want := range map[string]bool{".draft.md": true, "a.md.tmp": true, "a.md": false} {
		if IgnoredName(n) != want {
			t.Errorf("IgnoredName(%q) = %v", n, !want)
		}
	}
}
