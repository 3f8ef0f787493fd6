package viewfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/fedmem/fedmem/vault/repo"
)

// The view tree (vault/view.TreeDir) holds, at each path of the commit it
// is at, the file as the commit has it, for every path that was in force
// at a commit the tree was brought to: a path hidden at its first commit
// (untracked, not in force, a gitlink, .git, the archive) is never
// written. A path in it that a later commit hides keeps its place with
// the later content (a running session's paths do not change under it,
// docs/profiles.md); the next sessions' overlays hide it (the manifest).
// A path a commit deletes is removed.

// syncTree moves the tree at dir from commit prev (zero: none, or not
// known) to head; hidden says what head does not show.
func syncTree(r *repo.Repo, dir string, prev, head repo.Hash, hidden func(string) bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("view tree: %w", err)
	}
	if prev.IsZero() {
		return rebuildTree(r, dir, head, hidden)
	}
	chs, err := r.Diff(prev, head)
	if err != nil {
		// The old commit is gone (a rewritten history): start again.
		return rebuildTree(r, dir, head, hidden)
	}
	// Removals first: a path a link stood at may be a folder now.
	for _, c := range chs {
		if c.From != "" && c.From != c.To {
			if err := removeAt(dir, c.From); err != nil {
				return err
			}
		}
	}
	for _, c := range chs {
		if c.To == "" {
			continue
		}
		if hidden(c.To) {
			if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(c.To))); err != nil || !realParents(dir, c.To) {
				continue // never shown: not written
			}
		}
		if err := writeAt(r, dir, c.To, c.ToMode, c.ToHash); err != nil {
			return err
		}
	}
	return nil
}

// rebuildTree makes dir hold exactly head's files in force: each written
// where it differs, everything else removed.
func rebuildTree(r *repo.Repo, dir string, head repo.Hash, hidden func(string) bool) error {
	keep := map[string]bool{}
	err := r.Files(head, func(p string, mode repo.EntryMode, h repo.Hash) error {
		if hidden(p) || !cleanPath(p) {
			return nil
		}
		keep[p] = true
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			keep[d] = true
		}
		if realParents(dir, p) && same(r, filepath.Join(dir, filepath.FromSlash(p)), mode, h) {
			return nil
		}
		return writeAt(r, dir, p, mode, h)
	})
	if err != nil {
		return err
	}
	// Everything else goes, deepest first (WalkDir is lexical: collect).
	var gone []string
	err = filepath.WalkDir(dir, func(full string, d fs.DirEntry, err error) error {
		if err != nil || full == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, full)
		rel = filepath.ToSlash(rel)
		if !keep[rel] {
			gone = append(gone, full)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("view tree: %w", err)
	}
	for _, g := range gone {
		if err := os.RemoveAll(g); err != nil {
			return fmt.Errorf("view tree: %w", err)
		}
	}
	return nil
}

// same says whether full already is the file (mode, content) of blob h.
func same(r *repo.Repo, full string, mode repo.EntryMode, h repo.Hash) bool {
	fi, err := os.Lstat(full) // its folders are checked by the caller
	if err != nil {
		return false
	}
	want, err := r.Blob(h)
	if err != nil {
		return false
	}
	switch mode {
	case repo.ModeSymlink:
		l, err := os.Readlink(full)
		return err == nil && fi.Mode()&fs.ModeSymlink != 0 && l == string(want)
	case repo.ModeSubmodule:
		return false
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != fileMode(mode) || fi.Size() != int64(len(want)) {
		return false
	}
	got, err := os.ReadFile(full)
	return err == nil && bytes.Equal(got, want)
}

// fileMode is the permission a file of the tree takes: readable by all
// (the sandbox's agent reads it), executable as the commit says.
func fileMode(mode repo.EntryMode) fs.FileMode {
	if mode == repo.ModeExecutable {
		return 0o755
	}
	return 0o644
}

// writeAt writes the entry (mode, blob h) at p under dir: a new file
// renamed over the old (a reader sees the old or the new, whole), its
// folders made readable by all. A gitlink is not written (nothing of a
// submodule is shown).
func writeAt(r *repo.Repo, dir, p string, mode repo.EntryMode, h repo.Hash) error {
	if !cleanPath(p) {
		return fmt.Errorf("view tree: %q is not a clean vault path", p)
	}
	full := filepath.Join(dir, filepath.FromSlash(p))
	if mode == repo.ModeSubmodule {
		return removeAt(dir, p)
	}
	b, err := r.Blob(h)
	if err != nil {
		return fmt.Errorf("view tree: %s: %w", p, err)
	}
	if err := mkdirs(dir, path.Dir(p)); err != nil {
		return err
	}
	if mode != repo.ModeSymlink {
		if fi, err := os.Lstat(full); err == nil && fi.Mode().IsRegular() {
			// In place: a running session's overlay keeps the file it
			// looked up (a file renamed over it in the lower layer is not
			// seen), and a note must read as the tree has it now, as the
			// work tree's did (docs/profiles.md, "During a session").
			return rewrite(full, b, fileMode(mode), p)
		}
	}
	tmp := filepath.Join(filepath.Dir(full), ".fedmem-view-"+strconv.Itoa(os.Getpid())+"-"+h.String()[:12])
	os.Remove(tmp)
	if mode == repo.ModeSymlink {
		err = os.Symlink(string(b), tmp)
	} else {
		err = writeFile(tmp, b, fileMode(mode))
	}
	if err == nil {
		err = os.Rename(tmp, full)
		if fi, serr := os.Lstat(full); err != nil && serr == nil && fi.IsDir() {
			// A folder stands where the file goes (a folder became a
			// file): it goes first.
			if err = os.RemoveAll(full); err == nil {
				err = os.Rename(tmp, full)
			}
		}
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("view tree: %s: %w", p, err)
	}
	return nil
}

// rewrite writes b over the regular file full, in place (no link
// followed), with perm.
func rewrite(full string, b []byte, perm fs.FileMode, p string) error {
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_TRUNC|syscall.O_NOFOLLOW, 0)
	if err == nil {
		_, err = f.Write(b)
		if err == nil {
			err = f.Chmod(perm)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("view tree: %s: %w", p, err)
	}
	return nil
}

// writeFile writes b to a new file p with perm (whatever the umask).
func writeFile(p string, b []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// mkdirs makes rel's folders under dir, readable by all, from the top:
// whatever else stands where a folder goes (a file, or a link — which the
// gate must never write through: a commit's link `a -> /home/gate` and a
// later commit's `a/.ssh/…`) is removed first.
func mkdirs(dir, rel string) error {
	if rel == "." || rel == "" {
		return nil
	}
	full := dir
	for _, name := range strings.Split(rel, "/") {
		full = filepath.Join(full, name)
		fi, err := os.Lstat(full)
		if err == nil && fi.IsDir() {
			continue
		}
		if err == nil {
			if err := os.Remove(full); err != nil {
				return fmt.Errorf("view tree: %w", err)
			}
		}
		if err := os.Mkdir(full, 0o755); err != nil {
			return fmt.Errorf("view tree: %w", err)
		}
		if err := os.Chmod(full, 0o755); err != nil {
			return fmt.Errorf("view tree: %w", err)
		}
	}
	return nil
}

// realParents says whether every folder above p in the tree is a folder
// (not a link): only then may p be removed or read by its path.
func realParents(dir, p string) bool {
	full := dir
	parts := strings.Split(p, "/")
	for _, name := range parts[:len(parts)-1] {
		full = filepath.Join(full, name)
		if fi, err := os.Lstat(full); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// removeAt removes p (a file, or a folder and what it holds) from the
// tree.
func removeAt(dir, p string) error {
	if !cleanPath(p) || !realParents(dir, p) {
		return nil // not in the tree (a link above it is removed on its own)
	}
	if err := os.RemoveAll(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
		return fmt.Errorf("view tree: %w", err)
	}
	return nil
}

// cleanPath: a relative, clean, slash-separated path that stays below.
func cleanPath(p string) bool {
	return p != "" && p != "." && p[0] != '/' && path.Clean(p) == p && p != ".." && !(len(p) > 3 && p[:3] == "../")
}

// removeManifest removes vaultDir's manifest (absent is fine).
func removeManifest(vaultDir string) error {
	if err := os.Remove(filepathManifest(vaultDir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("view manifest: %w", err)
	}
	return nil
}
