package viewfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/fedmem/fedmem/vault/repo"
	"github.com/fedmem/fedmem/vault/view"
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
func syncTree(r *repo.Repo, dir string, prev, head repo.Hash, j *judged) error {
	hidden := j.hidden
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("view tree: %w", err)
	}
	if prev.IsZero() {
		return rebuildTree(r, dir, head, j)
	}
	chs, err := r.Diff(prev, head)
	if err != nil {
		// The old commit is gone (a rewritten history): start again.
		return rebuildTree(r, dir, head, j)
	}
	touched := map[string]bool{}
	// Removals first: a path a link stood at may be a folder now.
	for _, c := range chs {
		for _, q := range []string{c.From, c.To} {
			if q != "" {
				touched[pageDir(q)] = true
			}
		}
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
		if err := writeAt(r, dir, c.To, c.ToMode, c.ToHash, j); err != nil {
			return err
		}
	}
	// The pages of every folder a change was in, filtered again: a note
	// hidden or shown there changes what they may list, the page itself
	// unchanged.
	for d := range touched {
		if err := refreshPages(r, dir, head, d, j); err != nil {
			return err
		}
	}
	return nil
}

// refreshPages writes folder d's pages at head (index.md, log.md, their
// archives) into the tree, filtered, where the tree shows them.
func refreshPages(r *repo.Repo, dir string, head repo.Hash, d string, j *judged) error {
	join := func(parts ...string) string {
		if d == "." {
			return path.Join(parts...)
		}
		return path.Join(append([]string{d}, parts...)...)
	}
	var pages []string
	for _, name := range []string{"index.md", "log.md"} {
		pages = append(pages, join(name))
	}
	for _, kind := range []string{"index", "log"} {
		e, err := r.EntryAt(head, join(kind))
		if err != nil || e == nil || e.Mode != repo.ModeDir {
			continue
		}
		t, err := r.Tree(e.Hash)
		if err != nil {
			return fmt.Errorf("view tree: %s: %w", join(kind), err)
		}
		for _, te := range t.Entries {
			if q := join(kind, te.Name); view.IsArchivePage(q) {
				pages = append(pages, q)
			}
		}
	}
	for _, q := range pages {
		e, err := r.EntryAt(head, q)
		if err != nil || e == nil || (e.Mode != repo.ModeRegular && e.Mode != repo.ModeExecutable && e.Mode != repo.ModeDeprecated) {
			continue
		}
		if j.hidden(q) {
			if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(q))); err != nil || !realParents(dir, q) {
				continue
			}
		}
		if err := writeAt(r, dir, q, e.Mode, e.Hash, j); err != nil {
			return err
		}
	}
	return nil
}

// judged is what the tree needs of the manifest: whether a path is hidden
// at its commit, and for each folder the names of its hidden entries (the
// lines its pages may not list, vault/view.FilterPage).
type judged struct {
	hidden func(string) bool
	names  map[string][]string
}

// pageDir is the folder whose notes the page (or any path) p is about: a
// page archive's (d/index/000001.md) is d's; anything else's its folder.
func pageDir(p string) string {
	if view.IsArchivePage(p) {
		return path.Dir(path.Dir(p))
	}
	return path.Dir(p)
}

// content is what the tree holds for blob b at p: a folder page without
// its lines that link a hidden note of its folder, anything else as it is.
func (j *judged) content(p string, b []byte) []byte {
	if !view.IsPage(p) {
		return b
	}
	return view.FilterPage(b, j.names[pageDir(p)], view.IsArchivePage(p))
}

// rebuildTree makes dir hold exactly head's files in force: each written
// where it differs, everything else removed.
func rebuildTree(r *repo.Repo, dir string, head repo.Hash, j *judged) error {
	hidden := j.hidden
	keep := map[string]bool{}
	err := r.Files(head, func(p string, mode repo.EntryMode, h repo.Hash) error {
		if hidden(p) || !cleanPath(p) {
			return nil
		}
		keep[p] = true
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			keep[d] = true
		}
		if realParents(dir, p) && same(r, filepath.Join(dir, filepath.FromSlash(p)), p, mode, h, j) {
			return nil
		}
		return writeAt(r, dir, p, mode, h, j)
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

// same says whether full already is the file (mode, content) of blob h
// at p: its content's object id is h (a page: the filtered blob).
func same(r *repo.Repo, full, p string, mode repo.EntryMode, h repo.Hash, j *judged) bool {
	fi, err := os.Lstat(full) // its folders are checked by the caller
	if err != nil {
		return false
	}
	switch mode {
	case repo.ModeSymlink:
		want, err := r.Blob(h)
		l, lerr := os.Readlink(full)
		return err == nil && lerr == nil && fi.Mode()&fs.ModeSymlink != 0 && l == string(want)
	case repo.ModeSubmodule:
		return false
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != fileMode(mode) {
		return false
	}
	got, err := readRegular(full, fi.Size())
	if err != nil {
		return false
	}
	if !view.IsPage(p) {
		return repo.BlobHash(got) == h
	}
	want, err := blobOf(r, p, h)
	return err == nil && bytes.Equal(got, j.content(p, want))
}

// blobOf is blob h, the content of p: the work tree's file when its
// object id is h (read and hashed: much cheaper than a packed object's
// deltas, and the same bytes whatever the work tree holds), else from the
// object store.
func blobOf(r *repo.Repo, p string, h repo.Hash) ([]byte, error) {
	full := filepath.Join(r.Dir(), filepath.FromSlash(p))
	if fi, err := os.Lstat(full); err == nil && fi.Mode().IsRegular() && fi.Size() <= maxWorkTreeRead {
		if b, err := readRegular(full, fi.Size()); err == nil && repo.BlobHash(b) == h {
			return b, nil
		}
	}
	return r.Blob(h)
}

// maxWorkTreeRead bounds what blobOf reads of the work tree.
const maxWorkTreeRead = 16 << 20

// readRegular reads the regular file full (no link followed, never
// blocking on a FIFO put there since), at most size bytes and one more.
func readRegular(full string, size int64) ([]byte, error) {
	f, err := os.OpenFile(full, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", full)
	}
	b, err := io.ReadAll(io.LimitReader(f, size+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != size {
		return nil, fmt.Errorf("%s: changed while read", full)
	}
	return b, nil
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
func writeAt(r *repo.Repo, dir, p string, mode repo.EntryMode, h repo.Hash, j *judged) error {
	if !cleanPath(p) {
		return fmt.Errorf("view tree: %q is not a clean vault path", p)
	}
	full := filepath.Join(dir, filepath.FromSlash(p))
	if mode == repo.ModeSubmodule {
		return removeAt(dir, p)
	}
	b, err := blobOf(r, p, h)
	if mode == repo.ModeSymlink {
		b, err = r.Blob(h) // a link's target, not a file the link leads to
	}
	if err != nil {
		return fmt.Errorf("view tree: %s: %w", p, err)
	}
	if mode != repo.ModeSymlink {
		b = j.content(p, b)
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
