package gate

import (
	"bytes"
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

// ErrBusy is returned when another gate holds the state directory.
var ErrBusy = errors.New("gate busy")

// repo is the vault's Git repository, written with plumbing only.
type repo struct {
	dir    string // work tree
	gitDir string
	r      *git.Repository
	s      storage.Storer
	// intent, in the gate's state dir, names the Git lock file the gate is
	// about to create; a gate killed while holding it removes it on restart
	// (a lock left behind would block every later promotion).
	intent string
	// signer signs every commit the gate writes (nil: unsigned); see sign.go.
	signer *Signer
	// batch, while a pass groups its commits (groupcommit.go): s is then an
	// overlay over real holding the group's objects in memory.
	batch *commitBatch
	real  storage.Storer
	// cache: blobAt's reads (commit → root tree, raw trees), by hash.
	cache readCache
}

// takeLock creates a Git lock file exclusively, recording the intent first.
func (g *repo) takeLock(lock string) (*os.File, error) {
	if err := writeAtomic(g.intent, []byte(lock), 0o600); err != nil {
		return nil, err
	}
	if lazyFor(g.intent) != nil {
		// In a pass's group mode writeAtomic left the fsync to the next
		// barrier; the intent must be durable before the lock exists.
		if err := fsyncAll(map[string]bool{g.intent: true}); err != nil {
			return nil, err
		}
		if err := syncDir(filepath.Dir(g.intent)); err != nil {
			return nil, err
		}
	}
	return os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}

func (g *repo) dropIntent() { os.Remove(g.intent) }

// recoverLocks removes a lock file a killed gate left (see intent).
func (g *repo) recoverLocks() error {
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

func openRepo(dir, intent string) (*repo, error) {
	r, err := git.PlainOpen(dir)
	if err != nil {
		return nil, fmt.Errorf("open vault repository %s: %w", dir, err)
	}
	gitDir := filepath.Join(dir, ".git")
	g := &repo{dir: dir, gitDir: gitDir, r: r, s: newReindexing(r.Storer, gitDir), intent: intent}
	_ = os.RemoveAll(filepath.Join(g.gitDir, "fedmem-tmp")) // leftovers of a killed gate
	cleanPackLeftovers(gitDir)
	return g, g.recoverLocks()
}

// head returns the branch HEAD names and its commit (zero hash if unborn).
func (g *repo) head() (plumbing.ReferenceName, plumbing.Hash, error) {
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

// fileAt returns the content of path in commit c, or nil if absent; a blob
// over maxFileAt is an error.
func (g *repo) fileAt(c plumbing.Hash, p string) ([]byte, error) {
	return g.blobAt(c, p, maxFileAt)
}

// blobAt reads path in commit c (nil if absent). limit < 0 reads it whole;
// otherwise a blob larger than limit is an error naming the path.
func (g *repo) blobAt(c plumbing.Hash, p string, limit int64) ([]byte, error) {
	if c.IsZero() {
		return nil, nil
	}
	h, err := g.rootTree(c)
	if err != nil {
		return nil, err
	}
	// Walk the raw trees (findEntry): decoding a folder of many notes
	// into objects, once per lookup, was most of a promotion's reads.
	parts := strings.Split(p, "/")
	for i, name := range parts {
		raw, err := g.rawTree(h)
		if err != nil {
			return nil, err
		}
		_, mode, id, err := findEntry(raw, h, name)
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

// rootTree returns the tree of commit c.
func (g *repo) rootTree(c plumbing.Hash) (plumbing.Hash, error) {
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

// rawTree returns the content of tree h (shared: the caller must not
// change it).
func (g *repo) rawTree(h plumbing.Hash) ([]byte, error) {
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
func (g *repo) cacheTree(h plumbing.Hash, raw []byte) {
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
func (g *repo) rawObject(t plumbing.ObjectType, h plumbing.Hash) ([]byte, error) {
	obj, err := g.s.EncodedObject(t, h)
	if err != nil {
		return nil, err
	}
	return readObject(obj)
}

// writeBlob stores b as a blob. b is kept as the object's content (not
// copied, see rawObj): the caller must not change it afterwards.
func (g *repo) writeBlob(b []byte) (plumbing.Hash, error) {
	return g.s.SetEncodedObject(newRawObj(plumbing.BlobObject, b))
}

// treeEdit is one file a tree edit writes: its path below the tree.
type treeEdit struct {
	parts []string
	blob  plumbing.Hash
}

// putPath returns the hash of tree (zero: empty) with blob at parts, writing
// only the trees along that path.
func (g *repo) putPath(tree plumbing.Hash, parts []string, blob plumbing.Hash) (plumbing.Hash, error) {
	return g.editTree(tree, []treeEdit{{parts, blob}})
}

// editTree returns the hash of tree (zero: empty) with every edit applied
// in order, writing each tree along the edited paths once. Trees are edited
// as raw bytes: an entry is spliced in at its place in Git's order, the
// other entries are copied, nothing is decoded into objects (a folder of
// 100k notes costs one copy per edit in it).
func (g *repo) editTree(tree plumbing.Hash, edits []treeEdit) (plumbing.Hash, error) {
	var raw []byte
	if !tree.IsZero() {
		var err error
		if raw, err = g.rawTree(tree); err != nil {
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
		_, oldMode, oldHash, err := findEntry(raw, tree, name)
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

// findEntry returns the offset, mode and id of the entry name in raw, the
// content of tree (mode "" if there is none).
func findEntry(raw []byte, tree plumbing.Hash, name string) (int, string, plumbing.Hash, error) {
	for off := 0; off < len(raw); {
		sp := bytes.IndexByte(raw[off:], ' ')
		if sp < 0 {
			return -1, "", plumbing.ZeroHash, fmt.Errorf("tree %s: malformed", tree)
		}
		nul := bytes.IndexByte(raw[off+sp:], 0)
		if nul < 0 || off+sp+nul+21 > len(raw) {
			return -1, "", plumbing.ZeroHash, fmt.Errorf("tree %s: malformed", tree)
		}
		end := off + sp + nul + 21
		if string(raw[off+sp+1:off+sp+nul]) == name {
			var h plumbing.Hash
			copy(h[:], raw[off+sp+nul+1:end])
			return off, string(raw[off : off+sp]), h, nil
		}
		off = end
	}
	return -1, "", plumbing.ZeroHash, nil
}

// spliceEntry returns raw (the content of tree) with the entry name set to
// id: a file, or a folder when isDir; it reports the entry it replaced
// (mode "" when there was none).
func spliceEntry(raw []byte, tree plumbing.Hash, name string, isDir bool, id plumbing.Hash) ([]byte, string, plumbing.Hash, error) {
	// Scan entries: "<octal mode> <name>\x00<20-byte id>" (no allocation
	// per entry: a folder of many notes is scanned once per edit).
	insertAt, replStart, replEnd := len(raw), -1, -1
	var oldMode string
	var oldHash plumbing.Hash
	bname := []byte(name)
	for off := 0; off < len(raw); {
		ename, dir, end, ok := nextEntry(raw, off)
		if !ok {
			return nil, "", oldHash, fmt.Errorf("tree %s: malformed", tree)
		}
		if bytes.Equal(ename, bname) {
			replStart, replEnd = off, end
			oldMode = string(raw[off : off+bytes.IndexByte(raw[off:], ' ')])
			copy(oldHash[:], raw[end-20:end])
			break
		}
		// (Git's order: a folder's name compares as if "/" followed it.)
		if insertAt == len(raw) && compareKeys(ename, dir, bname, isDir) > 0 {
			insertAt = off // keep scanning: the same name may sort later as the other kind
		}
		off = end
	}
	var entry []byte
	if !isDir {
		if oldMode == "40000" {
			return nil, "", oldHash, fmt.Errorf("%s is a folder in the vault", name)
		}
		entry = append([]byte("100644 "+name+"\x00"), id[:]...)
	} else {
		if replStart >= 0 && oldMode != "40000" {
			return nil, "", oldHash, fmt.Errorf("%s is a file in the vault, not a folder", name)
		}
		entry = append([]byte("40000 "+name+"\x00"), id[:]...)
	}
	var out []byte
	if replStart >= 0 {
		out = make([]byte, 0, len(raw)-(replEnd-replStart)+len(entry))
		out = append(append(append(out, raw[:replStart]...), entry...), raw[replEnd:]...)
	} else {
		out = make([]byte, 0, len(raw)+len(entry))
		out = append(append(append(out, raw[:insertAt]...), entry...), raw[insertAt:]...)
	}
	return out, oldMode, oldHash, nil
}

// change is one file a commit writes.
type change struct {
	Path    string // slash-separated, relative to the vault
	Content []byte
}

// commitChanges writes blobs, trees and a commit on top of parent, then
// publishes it with a compare-and-swap of the branch. Cost: the changed
// paths' blobs and the trees along them.
func (g *repo) commitChanges(branch plumbing.ReferenceName, parent plumbing.Hash, changes []change, sig object.Signature, msg string) (plumbing.Hash, error) {
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
		blob, err := g.writeBlob(ch.Content)
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
	if err := g.signer.SignCommit(com); err != nil {
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
	if err := g.casRef(branch, parent, h); err != nil {
		return plumbing.ZeroHash, err
	}
	return h, nil
}

// casRef moves branch from old to new with Git's lock-file protocol:
// create refs/heads/X.lock exclusively, re-read the ref, compare, write,
// fsync, rename. Unlike an in-place rewrite, a crash leaves either the old or
// the new value, and a concurrent `git` command is excluded by the same lock.
func (g *repo) casRef(branch plumbing.ReferenceName, old, new plumbing.Hash) error {
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

// checkout writes the changed files into the work tree (temp file + rename)
// and updates their index entries only, so `git status` stays clean without
// scanning the work tree. The index is written under index.lock.
func (g *repo) checkout(changes []change) error {
	if g.batch != nil {
		g.addBatchFiles(changes) // written once for the group (publishBatch)
		return nil
	}
	return g.checkoutNow(changes)
}

// checkoutNow is checkout outside a group's deferral.
func (g *repo) checkoutNow(changes []change) error {
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
		if err := writeAtomicVia(tmpDir, full, ch.Content, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", ch.Path, err)
		}
	}
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
	var puts []gitindex.Entry
	for _, ch := range changes {
		fi, err := os.Lstat(filepath.Join(g.dir, filepath.FromSlash(ch.Path)))
		if err != nil {
			return err
		}
		puts = append(puts, gitindex.FromFile(ch.Path, plumbing.ComputeHash(plumbing.BlobObject, ch.Content), fi))
	}
	if err := g.writeIndex(lf, lock, puts, nil); err != nil {
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
func (g *repo) writeIndex(lf *os.File, lock string, puts []gitindex.Entry, dels []string) error {
	indexPath := filepath.Join(g.gitDir, "index")
	raw, err := os.ReadFile(indexPath)
	if errors.Is(err, os.ErrNotExist) {
		raw, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("read index: %w", err)
	}
	u, err := gitindex.Apply(g.gitDir, raw, puts, dels, gitindex.Options{Split: g.splitIndex(), MaxDelta: indexMaxDelta})
	if err != nil {
		return fmt.Errorf("update index: %w", err)
	}
	if err := gitindex.WriteShared(g.gitDir, u, nil); err != nil {
		return err
	}
	if u.Shared != nil {
		groupFault("index-shared")
	}
	groupFault("index")
	return commitLockFile(lf, lock, indexPath, u.Index)
}

// indexMaxDelta is gitindex's MaxDelta (tests lower it to merge into a new
// shared file on every write).
var indexMaxDelta = gitindex.DefaultMaxDelta

// splitIndex reports whether the index is kept split: yes unless the
// repository's core.splitIndex says false (Git then keeps it plain too).
func (g *repo) splitIndex() bool {
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

// cleanSlug turns text into an ASCII slug: lower-case letters, digits and
// single dashes, at most 60 bytes.
func cleanSlug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		default:
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
				dash = true
			}
		}
		if b.Len() >= 60 {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}

// reservedBase are file names a promotion never writes (in any folder).
var reservedBase = map[string]bool{"index": true, "log": true, "agent": true, "rules": true, "policy": true, "readme": true}

// destPath computes where a note lands: folder from policy, slug from the
// title or the inbox file name, never a path from the draft.
func destPath(folder, title, name, sum string) string {
	slug := cleanSlug(title)
	if slug == "" {
		slug = cleanSlug(strings.TrimSuffix(name, path.Ext(name)))
	}
	if slug == "" {
		slug = "note-" + sum[:12]
	}
	if reservedBase[slug] {
		slug += "-note"
	}
	return folder + "/" + slug + ".md"
}
