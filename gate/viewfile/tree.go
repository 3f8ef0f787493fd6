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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/vault/repo"
	"github.com/fedmem/fedmem/vault/view"
)

// The view tree (vault/view.TreeDir) holds what the conflict index shows
// (an allow-list, decide.ShownFile: a regular file of an exact mode in a
// folder the index walks, judged in force) at a commit the tree was
// brought to; nothing else is ever written (untracked files, notes not in
// force, gitlinks, links, odd modes, .git, the archive). A path in it that
// a later commit hides keeps its place and the text it had in force (a
// running session's paths and texts do not change to what is not in
// force, docs/profiles.md); the next sessions' overlays hide it (the
// manifest). A path a commit deletes, or that the index stops walking, is
// removed. Every write is a new file renamed over the old: a reader sees
// one whole version.

// syncTree moves the tree at dir from commit prev (zero: none, or not
// known) to head; shown is what head shows.
func syncTree(r *repo.Repo, dir string, prev, head repo.Hash, j *judged, shown map[string]decide.ShownFile) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("view tree: %w", err)
	}
	os.RemoveAll(dir + ".tmp") // what a crash left in the staging folder
	if prev.IsZero() {
		return rebuildTree(r, dir, j, shown)
	}
	chs, err := r.DiffPaths(prev, head)
	if err != nil {
		// The old commit is gone (a rewritten history): start again.
		return rebuildTree(r, dir, j, shown)
	}
	touched := map[string]bool{}
	// Removals first: a path a link stood at may be a folder now.
	for _, c := range chs {
		if !view.CleanRel(c.Path) {
			continue // a name Git refuses: never in the tree
		}
		touched[pageDir(c.Path)] = true
		if !c.New {
			if err := removeAt(dir, c.Path); err != nil {
				return err
			}
			delete(j.kept, c.Path)
		}
	}
	// What each change is: a shown file to write, or a path the tree
	// keeps (it held the file; HEAD does not show it) with the text it
	// had — hidden then by the manifest because the tree holds it
	// (KeptWhy), whatever the index says of HEAD's entry (an odd mode, a
	// folder the index does not walk: red team rtview4).
	var writes []string
	for _, c := range chs {
		if !c.New || !view.CleanRel(c.Path) {
			continue
		}
		if _, ok := shown[c.Path]; ok && !j.staleNow(c.Path) {
			writes = append(writes, c.Path)
			delete(j.kept, c.Path)
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(c.Path))); err != nil || !realParents(dir, c.Path) {
			continue // never shown: never written
		}
		if !sameKind(dir, c.Path, c.NewMode) || view.IsPage(c.Path) {
			// No longer a file that was shown (a link, a gitlink now), or
			// a page (never kept: its lines would go unfiltered): it goes.
			if err := removeAt(dir, c.Path); err != nil {
				return err
			}
			delete(j.kept, c.Path)
			continue
		}
		j.kept[c.Path] = true
	}
	j.keep()
	for _, p := range writes {
		if err := writeAt(r, dir, p, shown[p], j); err != nil {
			return err
		}
	}
	// The pages of every folder a change was in, filtered again: a note
	// hidden or shown there changes what they may list, the page itself
	// unchanged.
	for d := range touched {
		if j.before != nil && slices.Equal(j.before[d], j.names[d]) {
			continue // the same names hidden: a changed page was written above
		}
		if err := refreshPages(dir, d, j, shown, r); err != nil {
			return err
		}
	}
	return nil
}

// sameKind says whether the tree's entry at p is a regular file and mode
// is a file's (a kept path stays only as the file it was).
func sameKind(dir, p string, mode string) bool {
	fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
	return err == nil && fi.Mode().IsRegular() && strings.HasPrefix(mode, "100")
}

// refreshPages writes folder d's shown pages (index.md, log.md, their
// archives) into the tree, filtered.
func refreshPages(dir, d string, j *judged, shown map[string]decide.ShownFile, r *repo.Repo) error {
	prefix := d + "/"
	if d == "." {
		prefix = ""
	}
	for _, name := range []string{"index.md", "log.md"} {
		if err := refreshPage(r, dir, prefix+name, j, shown); err != nil {
			return err
		}
	}
	for _, kind := range []string{"index", "log"} {
		ents, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(prefix+kind)))
		if err != nil {
			continue // no archive pages in the tree yet: a new one was written as a change
		}
		for _, e := range ents {
			if q := prefix + kind + "/" + e.Name(); view.IsArchivePage(q) {
				if err := refreshPage(r, dir, q, j, shown); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// refreshPage writes the page q filtered when HEAD shows it, and takes it
// out of the tree when the tree holds it and HEAD does not (a page kept
// would list what is hidden now: red team rtview4,
// TestRTView4KeptPageNotRefiltered).
func refreshPage(r *repo.Repo, dir, q string, j *judged, shown map[string]decide.ShownFile) error {
	if f, ok := shown[q]; ok && !j.staleNow(q) {
		return writeAt(r, dir, q, f, j)
	}
	if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(q))); err == nil && realParents(dir, q) {
		delete(j.kept, q)
		return removeAt(dir, q)
	}
	return nil
}

// judged is what the tree needs of the manifest: whether a path is hidden
// at its commit, and for each folder the names of its hidden entries (the
// folders whose pages are filtered again when they change).
type judged struct {
	hidden func(string) bool
	names  map[string][]string
	// before are names at the commit the tree was at (nil: not known):
	// a folder's pages are filtered again only when its names changed.
	before map[string][]string
	// hiddenPaths are the manifest's hidden paths; kept the paths the
	// tree holds that HEAD does not show (KeptWhy: carried from manifest
	// to manifest); stale when a note in force goes stale.
	hiddenPaths []string
	kept        map[string]bool
	stale       map[string]time.Time
	now         time.Time
}

// staleNow says whether p has gone stale by now: not written into the
// tree (a running session must not be given it).
func (j *judged) staleNow(p string) bool {
	t, ok := j.stale[p]
	return ok && !j.now.Before(t)
}

// isHidden says whether p is not shown to the next sessions: hidden at
// the manifest's commit (or below a hidden folder), kept, or stale now.
func (j *judged) isHidden(p string) bool {
	return j.hidden(p) || j.kept[p] || j.staleNow(p)
}

// keep makes names hold the kept paths too (their lines leave the pages).
func (j *judged) keep() {
	paths := append([]string{}, j.hiddenPaths...)
	for p := range j.kept {
		paths = append(paths, p)
	}
	for p := range j.stale {
		if j.staleNow(p) {
			paths = append(paths, p) // stale already: not listed either
		}
	}
	j.names = view.PagesOf(paths)
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
// its lines that link a path not shown (isHidden), anything else as it is.
func (j *judged) content(p string, b []byte) []byte {
	if !view.IsPage(p) {
		return b
	}
	return view.FilterLinks(b, p, j.isHidden)
}

// rebuildTree makes dir hold exactly what is shown: each file written
// where it differs, everything else removed.
func rebuildTree(r *repo.Repo, dir string, j *judged, shown map[string]decide.ShownFile) error {
	j.kept = map[string]bool{}
	j.keep()
	keep := map[string]bool{}
	for p, f := range shown {
		if !view.CleanRel(p) || j.staleNow(p) {
			continue
		}
		keep[p] = true
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			keep[d] = true
		}
		if realParents(dir, p) && same(r, filepath.Join(dir, filepath.FromSlash(p)), p, f, j) {
			continue
		}
		if err := writeAt(r, dir, p, f, j); err != nil {
			return err
		}
	}
	// Everything else goes (WalkDir is lexical: collect, then remove).
	var gone []string
	err := filepath.WalkDir(dir, func(full string, d fs.DirEntry, err error) error {
		if err != nil || full == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, full)
		rel = filepath.ToSlash(rel)
		if !keep[rel] || (d.IsDir() != !shownFile(shown, rel)) {
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

// shownFile says whether p is a shown file (not a folder on the way).
func shownFile(shown map[string]decide.ShownFile, p string) bool {
	_, ok := shown[p]
	return ok
}

// same says whether full already is the file (mode, content) of blob h
// at p: its content's object id is h (a page: the filtered blob).
func same(r *repo.Repo, full, p string, f decide.ShownFile, j *judged) bool {
	h := f.Blob
	fi, err := os.Lstat(full) // its folders are checked by the caller
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != filePerm(r, p, f.Mode) {
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

// filePerm is the permission the tree's file at p takes: the work tree's
// file's, never writable by others than the gate (the tree is the gate's)
// and never more than the commit's mode allows — 0644, 0755 executable —
// so that a file the owner keeps from the agent (0600) is kept so.
func filePerm(r *repo.Repo, p string, mode repo.EntryMode) fs.FileMode {
	max := fs.FileMode(0o644)
	if mode == repo.ModeExecutable {
		max = 0o755
	}
	if fi, err := os.Lstat(filepath.Join(r.Dir(), filepath.FromSlash(p))); err == nil && fi.Mode().IsRegular() {
		return fi.Mode().Perm() & max
	}
	return max
}

// dirPerm is the permission the tree's folder at rel takes: the work
// tree's folder's (a folder the owner made 0700 stays closed to the
// agent), at most 0755.
func dirPerm(r *repo.Repo, rel string) fs.FileMode {
	if fi, err := os.Lstat(filepath.Join(r.Dir(), filepath.FromSlash(rel))); err == nil && fi.IsDir() {
		return fi.Mode().Perm()&0o755 | 0o700 // the gate itself must go on writing it
	}
	return 0o755
}

// writeAt writes the shown file f at p under dir: a new file renamed over
// the old (a reader sees the old or the new, whole; a running session's
// overlay, which keeps the file it looked up, mostly the old), its
// folders made as the work tree's are.
func writeAt(r *repo.Repo, dir, p string, f decide.ShownFile, j *judged) error {
	if !view.CleanRel(p) {
		return nil // a name Git refuses: never shown
	}
	full := filepath.Join(dir, filepath.FromSlash(p))
	b, err := blobOf(r, p, f.Blob)
	if err != nil {
		return fmt.Errorf("view tree: %s: %w", p, err)
	}
	b = j.content(p, b)
	if err := mkdirs(r, dir, path.Dir(p)); err != nil {
		return err
	}
	tmp, err := tmpName(dir, "f")
	if err != nil {
		return err
	}
	err = writeFile(tmp, b, filePerm(r, p, f.Mode))
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

// tmpName is a fresh name in the tree's staging folder beside it (the
// same filesystem, not in the sandbox's view): what is written there is
// renamed into the tree whole, with its mode — a file made in place
// with another mode first and read then keeps that mode in a running
// overlay (its inode cache).
func tmpName(dir, kind string) (string, error) {
	stage := dir + ".tmp"
	if err := os.MkdirAll(stage, 0o700); err != nil {
		return "", fmt.Errorf("view tree: %w", err)
	}
	tmpSeq++
	p := filepath.Join(stage, kind+strconv.Itoa(os.Getpid())+"-"+strconv.FormatUint(tmpSeq, 10))
	os.RemoveAll(p)
	return p, nil
}

// tmpSeq numbers tmpName's names (the gate writes the tree from one
// goroutine at a time, under the conflict index's lock).
var tmpSeq uint64

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
func mkdirs(r *repo.Repo, dir, rel string) error {
	if rel == "." || rel == "" {
		return nil
	}
	full, sub := dir, ""
	for _, name := range strings.Split(rel, "/") {
		full, sub = filepath.Join(full, name), path.Join(sub, name)
		perm := dirPerm(r, sub)
		fi, err := os.Lstat(full)
		if err == nil && fi.IsDir() {
			if fi.Mode().Perm() != perm {
				if err := os.Chmod(full, perm); err != nil {
					return fmt.Errorf("view tree: %w", err)
				}
			}
			continue
		}
		if err == nil {
			if err := os.Remove(full); err != nil {
				return fmt.Errorf("view tree: %w", err)
			}
		}
		// Made aside (tmpName) with its mode, then renamed into place: a
		// reader never meets it with another mode — the receipts' recorder
		// lists a new folder as soon as it appears, and an overlay keeps
		// the mode it first saw of an inode (TestRTView3NewFolderReceipt:
		// EACCES 1 run in 3).
		tmp, err := tmpName(dir, "d")
		if err != nil {
			return err
		}
		if err := os.Mkdir(tmp, 0o700); err != nil {
			return fmt.Errorf("view tree: %w", err)
		}
		err = os.Chmod(tmp, perm)
		if err == nil {
			err = os.Rename(tmp, full)
		}
		if err != nil {
			os.Remove(tmp)
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
	if !view.CleanRel(p) || !realParents(dir, p) {
		return nil // not in the tree (a link above it is removed on its own)
	}
	if err := os.RemoveAll(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
		return fmt.Errorf("view tree: %w", err)
	}
	return nil
}

// removeManifest removes vaultDir's manifest (absent is fine).
func removeManifest(vaultDir string) error {
	if err := os.Remove(view.Path(vaultDir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("view manifest: %w", err)
	}
	return nil
}
