package repo

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"

	"github.com/fedmem/fedmem/vault/repo/gitindex"
)

// ErrConcurrentUpdate is returned when the branch moved between reading HEAD
// and publishing a commit (the compare-and-swap failed).
var ErrConcurrentUpdate = errors.New("branch changed during the promotion")

// Repo is a vault's Git repository as the gate writes it: plumbing only
// (blobs, raw trees, commits, its own packs, compare-and-swap ref moves, the
// split index), never a work-tree scan.
type Repo struct {
	dir    string // work tree
	gitDir string
	r      *git.Repository
	s      storage.Storer
	// intent, in the gate's state dir, names the Git lock file the gate is
	// about to create; a gate killed while holding it removes it on restart
	// (a lock left behind would block every later promotion).
	intent string
	// signer signs every commit the repository writes (nil: unsigned).
	signer Signer
	// writeFile writes a work-tree file atomically (Options.WriteFile).
	writeFile func(tmpDir, path string, b []byte, mode os.FileMode) error
	// fault is Options.Fault (never nil).
	fault func(point string)
	// batch, while a pass groups its commits (batch.go): s is then an
	// overlay over real holding the group's objects in memory.
	batch *commitBatch
	real  storage.Storer
	// cache: blobAt's reads (commit → root tree, raw trees), by hash.
	cache readCache
}

// Options are what the gate lends an open repository.
type Options struct {
	// Intent is the file (in the gate's state dir) that names a Git lock
	// file before it is created; a lock a killed gate left is removed on
	// the next Open. Required for writing.
	Intent string
	// WriteFile writes a work-tree file atomically through a temporary
	// file in tmpDir; nil: WriteAtomicVia (synced). The gate passes its
	// own, which leaves the fsync to a group's barrier.
	WriteFile func(tmpDir, path string, b []byte, mode os.FileMode) error
	// Fault is called at named points of a write (pack-idx, packed,
	// index-shared, index); a crash test's helper kills itself there.
	Fault func(point string)
	// Signer signs every commit written (nil: unsigned).
	Signer Signer
}

// takeLock creates a Git lock file exclusively, recording the intent first
// (synced: the intent must be durable before the lock exists).
func (g *Repo) takeLock(lock string) (*os.File, error) {
	if err := WriteAtomicVia(filepath.Dir(g.intent), g.intent, []byte(lock), 0o600); err != nil {
		return nil, err
	}
	return os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}

func (g *Repo) dropIntent() { os.Remove(g.intent) }

// recoverLocks removes a lock file a killed gate left (see intent).
func (g *Repo) recoverLocks() error {
	b, err := os.ReadFile(g.intent)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	lock := string(b)
	if !strings.HasPrefix(lock, g.gitDir+"/") || !strings.HasSuffix(lock, ".lock") {
		return fmt.Errorf("lock intent %s names %q, not a lock in %s", g.intent, lock, g.gitDir)
	}
	if err := os.Remove(lock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	g.dropIntent()
	return nil
}

// Open opens the vault repository in dir for writing, and cleans up after
// a killed writer: temporary files, a half-written pack, a lock file its
// intent names.
func Open(dir string, o Options) (*Repo, error) {
	r, err := git.PlainOpen(dir)
	if err != nil {
		return nil, fmt.Errorf("open vault repository %s: %w", dir, err)
	}
	gitDir := filepath.Join(dir, ".git")
	g := newRepo(dir, r, newReindexing(r.Storer, gitDir), o)
	_ = os.RemoveAll(filepath.Join(g.gitDir, "fedmem-tmp")) // leftovers of a killed gate
	cleanPackLeftovers(gitDir)
	return g, g.recoverLocks()
}

// OpenReadOnly opens the vault repository in dir to read it, changing
// nothing (a running gate may be writing it).
func OpenReadOnly(dir string) (*Repo, error) {
	r, err := git.PlainOpen(dir)
	if err != nil {
		return nil, fmt.Errorf("open vault repository %s: %w", dir, err)
	}
	return newRepo(dir, r, r.Storer, Options{}), nil
}

func newRepo(dir string, r *git.Repository, s storage.Storer, o Options) *Repo {
	g := &Repo{dir: dir, gitDir: filepath.Join(dir, ".git"), r: r, s: s, intent: o.Intent, signer: o.Signer, writeFile: o.WriteFile, fault: o.Fault}
	if g.writeFile == nil {
		g.writeFile = WriteAtomicVia
	}
	if g.fault == nil {
		g.fault = func(string) {}
	}
	return g
}

// Dir is the work tree; GitDir the repository's .git folder.
func (g *Repo) Dir() string    { return g.dir }
func (g *Repo) GitDir() string { return g.gitDir }

// SetSigner makes every later commit signed by s (nil: unsigned).
func (g *Repo) SetSigner(s Signer) { g.signer = s }

// Head returns the branch HEAD names and its commit (zero hash if unborn).
func (g *Repo) Head() (plumbing.ReferenceName, plumbing.Hash, error) {
	if g.batch != nil {
		return g.batch.branch, g.batch.tip, nil
	}
	ref, err := g.s.Reference(plumbing.HEAD)
	if err != nil {
		return "", plumbing.ZeroHash, fmt.Errorf("read HEAD: %w", err)
	}
	if ref.Type() != plumbing.SymbolicReference || !ref.Target().IsBranch() {
		return "", plumbing.ZeroHash, fmt.Errorf("HEAD is detached; the gate commits only to a branch")
	}
	br, err := g.s.Reference(ref.Target())
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return ref.Target(), plumbing.ZeroHash, nil
	}
	if err != nil {
		return "", plumbing.ZeroHash, fmt.Errorf("read %s: %w", ref.Target(), err)
	}
	return ref.Target(), br.Hash(), nil
}

// maxFileAt bounds what fileAt reads of one note: a larger blob is an
// error, never silently cut (a cut note would be judged, or rewritten, on
// bytes that are not the vault's).
const maxFileAt = 16 << 20

// FileAt returns the content of path in commit c, or nil if absent; a blob
// over maxFileAt is an error.
func (g *Repo) FileAt(c plumbing.Hash, p string) ([]byte, error) {
	return g.BlobAt(c, p, maxFileAt)
}

// BlobAt reads path in commit c (nil if absent). limit < 0 reads it whole;
// otherwise a blob larger than limit is an error naming the path.
func (g *Repo) BlobAt(c plumbing.Hash, p string, limit int64) ([]byte, error) {
	if c.IsZero() {
		return nil, nil
	}
	h, err := g.RootTree(c)
	if err != nil {
		return nil, err
	}
	// Walk the raw trees (FindEntry): decoding a folder of many notes
	// into objects, once per lookup, was most of a promotion's reads.
	parts := strings.Split(p, "/")
	for i, name := range parts {
		raw, err := g.RawTree(h)
		if err != nil {
			return nil, err
		}
		_, mode, id, err := FindEntry(raw, h, name)
		if err != nil {
			return nil, err
		}
		if mode == "" || i < len(parts)-1 && mode != "40000" || i == len(parts)-1 && (mode == "40000" || mode == "160000") {
			return nil, nil // no file there
		}
		h = id
	}
	obj, err := g.s.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, err
	}
	if limit >= 0 && obj.Size() > limit {
		return nil, fmt.Errorf("%s at %s is %d bytes, over the gate's %d-byte limit for one note", p, c, obj.Size(), limit)
	}
	return readObject(obj)
}

// readCache keeps what blobAt reads again and again, by hash (so never
// stale): the root tree of a commit and the raw content of trees (those
// the gate read and those it wrote). Two generations: when trees passes
// readCacheBudget bytes it becomes old and a new one starts; a hit in old
// moves back (the folders a burst edits stay, the rest ages out).
type readCache struct {
	mu    sync.Mutex
	roots map[plumbing.Hash]plumbing.Hash
	trees map[plumbing.Hash][]byte
	old   map[plumbing.Hash][]byte
	bytes int
}

const readCacheBudget = 32 << 20

// RootTree returns the tree of commit c.
func (g *Repo) RootTree(c plumbing.Hash) (plumbing.Hash, error) {
	g.cache.mu.Lock()
	h, ok := g.cache.roots[c]
	g.cache.mu.Unlock()
	if ok {
		return h, nil
	}
	com, err := object.GetCommit(g.s, c)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	g.cache.mu.Lock()
	if g.cache.roots == nil || len(g.cache.roots) > 1<<16 {
		g.cache.roots = map[plumbing.Hash]plumbing.Hash{}
	}
	g.cache.roots[c] = com.TreeHash
	g.cache.mu.Unlock()
	return com.TreeHash, nil
}

// RawTree returns the content of tree h (shared: the caller must not
// Change it).
func (g *Repo) RawTree(h plumbing.Hash) ([]byte, error) {
	g.cache.mu.Lock()
	raw, ok := g.cache.trees[h]
	old := false
	if !ok {
		raw, ok = g.cache.old[h]
		old = ok
	}
	g.cache.mu.Unlock()
	if ok {
		if old {
			g.cacheTree(h, raw) // a hit in the old generation moves back
		}
		return raw, nil
	}
	raw, err := g.rawObject(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	g.cacheTree(h, raw)
	return raw, nil
}

// cacheTree keeps raw as the content of tree h.
func (g *Repo) cacheTree(h plumbing.Hash, raw []byte) {
	g.cache.mu.Lock()
	if _, ok := g.cache.trees[h]; ok {
		g.cache.mu.Unlock()
		return
	}
	if g.cache.trees == nil || g.cache.bytes+len(raw) > readCacheBudget {
		g.cache.old, g.cache.trees, g.cache.bytes = g.cache.trees, map[plumbing.Hash][]byte{}, 0
	}
	g.cache.trees[h] = raw
	g.cache.bytes += len(raw)
	g.cache.mu.Unlock()
}

// rawObject returns the content of object h of type t.
func (g *Repo) rawObject(t plumbing.ObjectType, h plumbing.Hash) ([]byte, error) {
	obj, err := g.s.EncodedObject(t, h)
	if err != nil {
		return nil, err
	}
	return readObject(obj)
}

// WriteBlob stores b as a blob. b is kept as the object's content (not
// copied, see rawObj): the caller must not Change it afterwards.
func (g *Repo) WriteBlob(b []byte) (plumbing.Hash, error) {
	return g.s.SetEncodedObject(newRawObj(plumbing.BlobObject, b))
}

// treeEdit is one file a tree edit writes: its path below the tree.
type treeEdit struct {
	parts []string
	blob  plumbing.Hash
}

// PutPath returns the hash of tree (zero: empty) with blob at parts, writing
// only the trees along that path.
func (g *Repo) PutPath(tree plumbing.Hash, parts []string, blob plumbing.Hash) (plumbing.Hash, error) {
	return g.editTree(tree, []treeEdit{{parts, blob}})
}

// editTree returns the hash of tree (zero: empty) with every edit applied
// in order, writing each tree along the edited paths once. Trees are edited
// as raw bytes: an entry is spliced in at its place in Git's order, the
// other entries are copied, nothing is decoded into objects (a folder of
// 100k notes costs one copy per edit in it).
func (g *Repo) editTree(tree plumbing.Hash, edits []treeEdit) (plumbing.Hash, error) {
	var raw []byte
	if !tree.IsZero() {
		var err error
		if raw, err = g.RawTree(tree); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	// Files here first, in order; then each sub-folder once, with its
	// edits in order (the first edit naming it decides its place).
	var dirs []string
	sub := map[string][]treeEdit{}
	for _, e := range edits {
		if len(e.parts) > 1 {
			if _, ok := sub[e.parts[0]]; !ok {
				dirs = append(dirs, e.parts[0])
			}
			sub[e.parts[0]] = append(sub[e.parts[0]], treeEdit{e.parts[1:], e.blob})
			continue
		}
		var err error
		var oldMode string
		var oldHash plumbing.Hash
		raw, oldMode, oldHash, err = spliceEntry(raw, tree, e.parts[0], false, e.blob)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if oldMode != "" && g.batch != nil {
			g.batch.bases[e.blob] = oldHash
		}
	}
	for _, name := range dirs {
		_, oldMode, oldHash, err := FindEntry(raw, tree, name)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if oldMode != "" && oldMode != "40000" {
			return plumbing.ZeroHash, fmt.Errorf("%s is a file in the vault, not a folder", name)
		}
		if oldMode == "" {
			oldHash = plumbing.ZeroHash
		}
		h, err := g.editTree(oldHash, sub[name])
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if raw, _, _, err = spliceEntry(raw, tree, name, true, h); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	if raw == nil {
		raw = []byte{} // the empty tree
	}
	obj := newRawObj(plumbing.TreeObject, raw)
	h, err := g.s.SetEncodedObject(obj)
	if err == nil {
		g.cacheTree(h, obj.b) // the next edit of this folder starts here
	}
	if err == nil && !tree.IsZero() && g.batch != nil {
		g.batch.bases[h] = tree
	}
	return h, err
}

// Change is one file a commit writes.
type Change struct {
	Path    string // slash-separated, relative to the vault
	Content []byte
}

// CommitChanges writes blobs, trees and a commit on top of parent, then
// publishes it with a compare-and-swap of the branch. Cost: the changed
// paths' blobs and the trees along them.
func (g *Repo) CommitChanges(branch plumbing.ReferenceName, parent plumbing.Hash, changes []Change, sig object.Signature, msg string) (plumbing.Hash, error) {
	root := plumbing.ZeroHash
	var parents []plumbing.Hash
	if !parent.IsZero() {
		c, err := object.GetCommit(g.s, parent)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("read commit %s: %w", parent, err)
		}
		root = c.TreeHash
		parents = []plumbing.Hash{parent}
	}
	var edits []treeEdit
	var paths []string
	for _, ch := range changes {
		blob, err := g.WriteBlob(ch.Content)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("write blob for %s: %w", ch.Path, err)
		}
		edits = append(edits, treeEdit{strings.Split(ch.Path, "/"), blob})
		paths = append(paths, ch.Path)
	}
	if len(edits) > 0 {
		var err error
		if root, err = g.editTree(root, edits); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("write trees for %s: %w", strings.Join(paths, ", "), err)
		}
	}
	com := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: root, ParentHashes: parents}
	if err := signCommit(g.signer, com); err != nil {
		return plumbing.ZeroHash, err
	}
	obj := g.s.NewEncodedObject()
	if err := com.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	h, err := g.s.SetEncodedObject(obj)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write commit: %w", err)
	}
	if err := g.CASRef(branch, parent, h); err != nil {
		return plumbing.ZeroHash, err
	}
	return h, nil
}

// CASRef moves branch from old to new with Git's lock-file protocol:
// create refs/heads/X.lock exclusively, re-read the ref, compare, write,
// fsync, rename. Unlike an in-place rewrite, a crash leaves either the old or
// the new value, and a concurrent `git` command is excluded by the same lock.
func (g *Repo) CASRef(branch plumbing.ReferenceName, old, new plumbing.Hash) error {
	if b := g.batch; b != nil && branch == b.branch {
		// In a group: the branch moves in memory; publishBatch moves it
		// on disk once for the group.
		if old != b.tip {
			return fmt.Errorf("%s is at %s in this group, expected %s: %w", branch, b.tip, old, ErrConcurrentUpdate)
		}
		b.tip = new
		b.commits[new] = true
		return nil
	}
	refPath := filepath.Join(g.gitDir, filepath.FromSlash(branch.String()))
	if err := os.MkdirAll(filepath.Dir(refPath), 0o755); err != nil {
		return err
	}
	lock := refPath + ".lock"
	f, err := g.takeLock(lock)
	if err != nil {
		return fmt.Errorf("lock %s: %w", branch, err)
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(lock)
		}
		g.dropIntent()
	}()
	cur := plumbing.ZeroHash
	if ref, err := g.s.Reference(branch); err == nil {
		cur = ref.Hash()
	} else if !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return fmt.Errorf("read %s: %w", branch, err)
	}
	if cur != old {
		return fmt.Errorf("%s is at %s, expected %s: %w", branch, cur, old, ErrConcurrentUpdate)
	}
	if _, err := f.WriteString(new.String() + "\n"); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(lock, refPath); err != nil {
		return err
	}
	done = true
	return syncDir(filepath.Dir(refPath))
}

// Checkout writes the changed files into the work tree (temp file + rename)
// and updates their index entries only, so `git status` stays clean without
// scanning the work tree. The index is written under index.lock.
func (g *Repo) Checkout(changes []Change) error {
	if g.batch != nil {
		g.addBatchFiles(changes) // written once for the group (publishBatch)
		return nil
	}
	return g.CheckoutNow(changes)
}

// CheckoutNow is Checkout outside a batch's deferral (a journal's redo).
func (g *Repo) CheckoutNow(changes []Change) error {
	for _, ch := range changes {
		full := filepath.Join(g.dir, filepath.FromSlash(ch.Path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		// The temporary file lives under .git, where Git never reports it:
		// a gate killed mid-write leaves nothing in `git status`.
		tmpDir := filepath.Join(g.gitDir, "fedmem-tmp")
		if err := os.MkdirAll(tmpDir, 0o755); err != nil {
			return err
		}
		if err := g.writeFile(tmpDir, full, ch.Content, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", ch.Path, err)
		}
	}
	return g.editIndex(func() ([]gitindex.Entry, error) {
		var puts []gitindex.Entry
		for _, ch := range changes {
			fi, err := os.Lstat(filepath.Join(g.dir, filepath.FromSlash(ch.Path)))
			if err != nil {
				return nil, err
			}
			puts = append(puts, gitindex.FromFile(ch.Path, plumbing.ComputeHash(plumbing.BlobObject, ch.Content), fi))
		}
		return puts, nil
	}, nil)
}

// RemovePaths deletes files from the work tree (and parent folders left
// empty) and their index entries.
func (g *Repo) RemovePaths(paths []string) error {
	for _, p := range paths {
		full := filepath.Join(g.dir, filepath.FromSlash(p))
		if err := os.Remove(full); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", p, err)
		}
		for d := path.Dir(p); d != "." && strings.Contains(d, "/"); d = path.Dir(d) {
			if os.Remove(filepath.Join(g.dir, filepath.FromSlash(d))) != nil {
				break
			}
		}
	}
	return g.editIndex(nil, paths)
}

// editIndex takes .git/index.lock (its intent recorded first), records
// the entries puts makes (nil: none) and removes dels, and commits the
// lock; on an error the lock is removed. The one place the index-lock
// steps are written.
func (g *Repo) editIndex(puts func() ([]gitindex.Entry, error), dels []string) error {
	lock := filepath.Join(g.gitDir, "index.lock")
	lf, err := g.takeLock(lock)
	if err != nil {
		return fmt.Errorf("lock index: %w", err)
	}
	done := false
	defer func() {
		if !done {
			lf.Close()
			os.Remove(lock)
		}
		g.dropIntent()
	}()
	var ps []gitindex.Entry
	if puts != nil {
		if ps, err = puts(); err != nil {
			return err
		}
	}
	if err := g.writeIndex(lf, lock, ps, dels); err != nil {
		return err
	}
	done = true
	return nil
}

// writeIndex records puts and removes dels in .git/index, whose lock lf
// (at lock) the caller holds: a split index (gitindex) rewrites only its
// small part, so the cost does not grow with the vault; a new shared file,
// when the split part is merged into one, is made durable before the
// index that names it is renamed into place.
func (g *Repo) writeIndex(lf *os.File, lock string, puts []gitindex.Entry, dels []string) error {
	indexPath := filepath.Join(g.gitDir, "index")
	raw, err := os.ReadFile(indexPath)
	if errors.Is(err, os.ErrNotExist) {
		raw, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("read index: %w", err)
	}
	u, err := gitindex.Apply(g.gitDir, raw, puts, dels, gitindex.Options{Split: g.splitIndex(), MaxDelta: IndexMaxDelta})
	if err != nil {
		return fmt.Errorf("update index: %w", err)
	}
	if err := gitindex.WriteShared(g.gitDir, u, nil); err != nil {
		return err
	}
	if u.Shared != nil {
		g.fault("index-shared")
	}
	g.fault("index")
	return commitLockFile(lf, lock, indexPath, u.Index)
}

// IndexMaxDelta is gitindex's MaxDelta for the index writes of every Repo
// (a crash test lowers it to merge into a new shared file on every write).
var IndexMaxDelta = gitindex.DefaultMaxDelta

// splitIndex reports whether the index is kept split: yes unless the
// repository's core.splitIndex says false (Git then keeps it plain too).
func (g *Repo) splitIndex() bool {
	cfg, err := g.r.Config()
	if err != nil || cfg.Raw == nil {
		return true
	}
	return gitindex.WantSplit(cfg.Raw.Section("core").Option("splitIndex"))
}

// commitLockFile writes b into the open lock file, syncs it and renames it
// over target (Git's lock-file protocol).
func commitLockFile(lf *os.File, lock, target string, b []byte) error {
	if _, err := lf.Write(b); err != nil {
		return err
	}
	if err := lf.Sync(); err != nil {
		return err
	}
	if err := lf.Close(); err != nil {
		return err
	}
	return os.Rename(lock, target)
}

// WholeFileAt is FileAt without a size limit.
func (g *Repo) WholeFileAt(c plumbing.Hash, p string) ([]byte, error) {
	return g.BlobAt(c, p, -1)
}
