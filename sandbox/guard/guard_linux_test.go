package guard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
)

// TestPlaceholdersSession: around a session on a workdir, the absent
// protected name gets its mode-0000 placeholder before, and after it the
// placeholder is gone, a watched name that appeared is moved aside (not
// deleted), a repository born in a subdirectory is moved aside, a watched
// name that was there before stays, and each move is a "persistence"
// event naming where it went.
func TestPlaceholdersSession(t *testing.T) {
	work, vaultDir := t.TempDir(), t.TempDir()
	envrc := filepath.Join(work, ".envrc")
	planted, kept := filepath.Join(work, "planted.sh"), filepath.Join(work, "kept.sh")
	if err := os.WriteFile(kept, []byte("the user's\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	pl := &mounts.Plan{Session: "sess1", Vault: vaultDir, Watch: []string{planted, kept},
		Mounts: []mounts.Mount{
			{Kind: mounts.BindRW, Source: work, Target: work, Dir: true, Why: "workdir"},
			{Kind: mounts.Protected, Target: envrc, Placeholder: true},
		}}
	var moved []map[string]any
	release, err := Placeholders(&Spec{Plan: pl, Event: func(name string, f map[string]any) {
		if name == "persistence" {
			moved = append(moved, f)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(envrc, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o7777 != 0 || st.Size != 0 {
		t.Fatalf("placeholder %s: %v, mode %#o size %d; want an empty mode-0000 file", envrc, err, st.Mode, st.Size)
	}
	// The session: the agent plants a watched name and a repository.
	if err := os.WriteFile(planted, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(work, "sub", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "sub", ".git", "config"), []byte("[core]\n\tfsmonitor = ./run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	release(false)
	if _, err := os.Lstat(envrc); !os.IsNotExist(err) {
		t.Errorf("placeholder %s still there after the session (%v)", envrc, err)
	}
	for _, c := range []struct{ path, aside string }{
		{planted, planted + quarantineMark + "sess1"},
		{filepath.Join(work, "sub", ".git"), filepath.Join(work, "sub", ".git") + quarantineMark + "sess1"},
	} {
		if _, err := os.Lstat(c.path); !os.IsNotExist(err) {
			t.Errorf("%s is still in place after the session (%v)", c.path, err)
		}
		if _, err := os.Lstat(c.aside); err != nil {
			t.Errorf("%s was not moved aside to %s: %v", c.path, c.aside, err)
		}
		found := false
		for _, f := range moved {
			found = found || (f["path"] == c.path && f["moved_to"] == c.aside && f["error"] == nil)
		}
		if !found {
			t.Errorf("no persistence event moving %s to %s: %v", c.path, c.aside, moved)
		}
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != "the user's\n" {
		t.Errorf("%s, there before the session, was touched: %q %v", kept, b, err)
	}
}

// TestRenameAsideNameTaken: the agent knows its session and can make the
// quarantine name first; the plant is moved to another name, and what the
// agent left at the expected one is not replaced.
func TestRenameAsideNameTaken(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hook"), []byte("plant"), 0o755); err != nil {
		t.Fatal(err)
	}
	taken := "hook" + quarantineMark + "s"
	if err := os.WriteFile(filepath.Join(dir, taken), []byte("decoy"), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	to, err := renameAside(fd, "hook", "s")
	if err != nil {
		t.Fatal(err)
	}
	if to == taken || !strings.HasPrefix(to, taken+"-") {
		t.Errorf("moved to %q, want %q with a random suffix", to, taken)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, to)); string(b) != "plant" {
		t.Errorf("%s holds %q, want the plant", to, b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, taken)); string(b) != "decoy" {
		t.Errorf("the name the agent took holds %q, want its own decoy", b)
	}
}

// TestRemovePlaceholderOnlyItsShape: after a session only what has the
// shape of fedmem's placeholder (mode 0000, an empty file or an empty
// directory) is removed; anything the user made at the name meanwhile
// stays.
func TestRemovePlaceholderOnlyItsShape(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, dirEntry bool, content string, mode os.FileMode) {
		p := filepath.Join(dir, name)
		var err error
		if dirEntry {
			err = os.Mkdir(p, 0o755)
			if err == nil && content != "" {
				err = os.WriteFile(filepath.Join(p, "inside"), []byte(content), 0o644)
			}
		} else {
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err == nil {
			err = os.Chmod(p, mode)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	mk("ph-file", false, "", 0)
	mk("ph-dir", true, "", 0)
	mk("user-file", false, "", 0o644)
	mk("full-file", false, "x", 0)
	mk("full-dir", true, "x", 0)
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	// In a setgid folder a placeholder directory made with mode 0 is
	// mode 2000 (mkdir inherits the bit); makePlaceholder's own call.
	sg := filepath.Join(dir, "setgid")
	if err := os.Mkdir(sg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sg, 0o755|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	makePlaceholder(mounts.Mount{Target: filepath.Join(sg, ".git"), Dir: true})
	if fi, err := os.Lstat(filepath.Join(sg, ".git")); err != nil || fi.Mode()&os.ModeSetgid == 0 {
		t.Fatalf("placeholder in a setgid folder: %v, %v; want a setgid directory (the case under test)", fi, err)
	}
	mk("user-setgid-dir", true, "", 0o755)
	if err := os.Chmod(filepath.Join(dir, "user-setgid-dir"), 0o755|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	for _, n := range []string{"ph-file", "ph-dir", "user-file", "full-file", "full-dir", "link", "user-setgid-dir"} {
		removePlaceholder(fd, n)
	}
	sgfd, err := unix.Open(sg, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sgfd)
	removePlaceholder(sgfd, ".git")
	if _, err := os.Lstat(filepath.Join(sg, ".git")); err == nil {
		t.Errorf("the setgid placeholder .git is left after removePlaceholder")
	}
	for n, want := range map[string]bool{"ph-file": false, "ph-dir": false, "user-file": true, "full-file": true, "full-dir": true, "link": true, "user-setgid-dir": true} {
		_, err := os.Lstat(filepath.Join(dir, n))
		if got := err == nil; got != want {
			t.Errorf("%s: present %v after removePlaceholder, want %v", n, got, want)
		}
	}
	// t.TempDir's cleanup needs to enter the mode-0000 directory.
	_ = os.Chmod(filepath.Join(dir, "full-dir"), 0o755)
}
