package repo

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// Group commit (issue 9; the gate's side is gate/commit/groupcommit.go): while a
// batch is open, commits are written in memory, one chained on the
// previous; PublishBatch writes the group's objects as one pack, moves the
// branch once with a compare-and-swap, and checks the group's files out
// with one index write.

// commitBatch is a group of commits written in memory on top of base.
type commitBatch struct {
	branch    plumbing.ReferenceName
	base, tip plumbing.Hash
	objs      map[plumbing.Hash]plumbing.EncodedObject
	order     []plumbing.Hash
	commits   map[plumbing.Hash]bool
	files     map[string][]byte
	fileOrder []string
	// bases maps an object to the one it is a new version of (the tree
	// of the same folder, the blob at the same path before the commit):
	// a delta base when both are in the group's pack (pack.go).
	bases map[plumbing.Hash]plumbing.Hash
}

// overlay is the repository's storer with the group's objects in front.
type overlay struct {
	storage.Storer
	b *commitBatch
}

func (o overlay) SetEncodedObject(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	h := obj.Hash()
	if _, ok := o.b.objs[h]; !ok {
		o.b.objs[h] = obj
		o.b.order = append(o.b.order, h)
	}
	return h, nil
}

func (o overlay) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if obj, ok := o.b.objs[h]; ok && (t == plumbing.AnyObject || obj.Type() == t) {
		return obj, nil
	}
	return o.Storer.EncodedObject(t, h)
}

func (o overlay) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := o.b.objs[h]; ok {
		return nil
	}
	return o.Storer.HasEncodedObject(h)
}

func (o overlay) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if obj, ok := o.b.objs[h]; ok {
		return obj.Size(), nil
	}
	return o.Storer.EncodedObjectSize(h)
}

// BeginBatch starts writing commits in memory; without a branch to commit
// to (detached HEAD) it leaves the repository as it is.
func (g *Repo) BeginBatch() {
	if g.batch != nil {
		return
	}
	branch, head, err := g.Head()
	if err != nil {
		return
	}
	if _, ok := g.s.(storer.PackfileWriter); !ok {
		return
	}
	g.batch = &commitBatch{branch: branch, base: head, tip: head, objs: map[plumbing.Hash]plumbing.EncodedObject{},
		commits: map[plumbing.Hash]bool{}, files: map[string][]byte{}, bases: map[plumbing.Hash]plumbing.Hash{}}
	g.real = g.s
	g.s = overlay{Storer: g.real, b: g.batch}
}

// AbortBatch leaves batch mode, dropping anything unpublished.
func (g *Repo) AbortBatch() {
	if g.batch == nil {
		return
	}
	g.batch = nil
	g.s = g.real
}

// InBatch reports whether commit h is in the open, unpublished group.
func (g *Repo) InBatch(h string) bool {
	return g.batch != nil && h != "" && g.batch.commits[plumbing.NewHash(h)]
}

// MarkerBase is the commit a committing/ marker names: the on-disk tip of
// the branch (the walk from HEAD after a crash stops there).
func (g *Repo) MarkerBase(head plumbing.Hash) plumbing.Hash {
	if g.batch != nil {
		return g.batch.base
	}
	return head
}

// PublishBatch writes the group's objects as one pack, moves the branch
// from the group's base to its tip once ready (the group's barrier) returns
// nil, checks the files out, and starts a new group at the tip. It reports
// whether the branch moved; ready is not called when there is nothing to
// publish.
func (g *Repo) PublishBatch(ready func() error) (bool, error) {
	b := g.batch
	if b == nil || (len(b.commits) == 0 && len(b.files) == 0) {
		return false, nil
	}
	g.batch, g.s = nil, g.real
	defer g.BeginBatch()
	moved := false
	if len(b.commits) > 0 {
		if err := g.writePack(b); err != nil {
			return false, err
		}
		if err := ready(); err != nil {
			return false, err
		}
		g.fault("packed")
		if err := g.CASRef(b.branch, b.base, b.tip); err != nil {
			return false, err
		}
		moved = true
	}
	var ch []Change
	for _, p := range b.fileOrder {
		ch = append(ch, Change{p, b.files[p]})
	}
	return moved, g.Checkout(ch)
}

func (g *Repo) addBatchFiles(changes []Change) {
	for _, c := range changes {
		if _, ok := g.batch.files[c.Path]; !ok {
			g.batch.fileOrder = append(g.batch.fileOrder, c.Path)
		}
		g.batch.files[c.Path] = c.Content
	}
}

// reindexing is the repository's storer, made to notice packs written by
// others: go-git loads the list of pack indexes once, so after `git gc`
// (which `git commit` may start in the background) moves loose objects
// into a new pack and prunes them, every lookup of one would fail. On a
// miss, when the pack folder changed since the last look, the pack indexes
// are loaded again and the lookup retried.
//
// It also keeps the objects of the gate's latest packs in memory (recent,
// up to recentBudget bytes): the next groups read those trees, pages and
// commits again, and would otherwise have go-git load every pack index
// anew (its list is reloaded whole) and inflate them from the new pack.
type reindexing struct {
	storage.Storer
	packDir string
	mu      sync.Mutex
	seen    time.Time
	// recent: objects of the latest packs; groups: their hashes per pack,
	// oldest first; bytes: their total size.
	recent map[plumbing.Hash]plumbing.EncodedObject
	groups [][]plumbing.Hash
	bytes  int64
	// unlisted: the gate wrote a pack go-git has not listed yet (the
	// folder's mtime may not show it: it ticks coarsely).
	unlisted bool
}

// recentBudget bounds the bytes of objects reindexing keeps in memory.
var recentBudget int64 = 64 << 20

// addRecent keeps a written pack's objects in memory, dropping the oldest
// packs' beyond the budget.
func (r *reindexing) addRecent(objs map[plumbing.Hash]plumbing.EncodedObject, order []plumbing.Hash) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.recent == nil {
		r.recent = map[plumbing.Hash]plumbing.EncodedObject{}
	}
	var kept []plumbing.Hash
	for _, h := range order {
		if _, ok := r.recent[h]; ok {
			continue
		}
		r.recent[h] = objs[h]
		r.bytes += objs[h].Size()
		kept = append(kept, h)
	}
	r.groups = append(r.groups, kept)
	r.unlisted = true
	for r.bytes > recentBudget && len(r.groups) > 1 {
		for _, h := range r.groups[0] {
			r.bytes -= r.recent[h].Size()
			delete(r.recent, h)
		}
		r.groups = r.groups[1:]
	}
}

func (r *reindexing) recentObject(h plumbing.Hash) plumbing.EncodedObject {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recent[h]
}

func newReindexing(s storage.Storer, gitDir string) storage.Storer {
	r := &reindexing{Storer: s, packDir: filepath.Join(gitDir, "objects", "pack")}
	if fi, err := os.Stat(r.packDir); err == nil {
		r.seen = fi.ModTime()
	}
	return r
}

// refresh reloads the pack indexes when the pack folder changed; it
// reports whether it did.
func (r *reindexing) refresh() bool {
	ri, ok := r.Storer.(interface{ Reindex() })
	if !ok {
		return false
	}
	fi, err := os.Stat(r.packDir)
	if err != nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if fi.ModTime().Equal(r.seen) && !r.unlisted {
		return false
	}
	r.seen, r.unlisted = fi.ModTime(), false
	ri.Reindex()
	return true
}

// missing: the object is not where go-git's list of packs says (gone
// with a deleted pack, or in one it has not indexed).
func missing(err error) bool {
	return errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, dotgit.ErrPackfileNotFound)
}

func (r *reindexing) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if obj := r.recentObject(h); obj != nil && (t == plumbing.AnyObject || obj.Type() == t) {
		return obj, nil
	}
	obj, err := r.Storer.EncodedObject(t, h)
	if missing(err) && r.refresh() {
		return r.Storer.EncodedObject(t, h)
	}
	return obj, err
}

func (r *reindexing) HasEncodedObject(h plumbing.Hash) error {
	if r.recentObject(h) != nil {
		return nil
	}
	err := r.Storer.HasEncodedObject(h)
	if missing(err) && r.refresh() {
		return r.Storer.HasEncodedObject(h)
	}
	return err
}

func (r *reindexing) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if obj := r.recentObject(h); obj != nil {
		return obj.Size(), nil
	}
	n, err := r.Storer.EncodedObjectSize(h)
	if missing(err) && r.refresh() {
		return r.Storer.EncodedObjectSize(h)
	}
	return n, err
}

// PackfileWriter is the real storer's (a group's pack is written by
// writePack, see pack.go; this marks a storer that can hold packs).
func (r *reindexing) PackfileWriter() (io.WriteCloser, error) {
	pw, ok := r.Storer.(storer.PackfileWriter)
	if !ok {
		return nil, errors.New("storer cannot write packfiles")
	}
	return pw.PackfileWriter()
}

// Batching reports whether a batch is open.
func (g *Repo) Batching() bool { return g.batch != nil }

// BatchTip is the open batch's last commit (zero when none is open).
func (g *Repo) BatchTip() plumbing.Hash {
	if g.batch == nil {
		return plumbing.ZeroHash
	}
	return g.batch.tip
}

// BatchBase is the on-disk tip of the branch the open batch was built on
// (zero when none is open).
func (g *Repo) BatchBase() plumbing.Hash {
	if g.batch == nil {
		return plumbing.ZeroHash
	}
	return g.batch.base
}

// BatchFiles are the paths the open batch will check out, in order (nil
// when none is open).
func (g *Repo) BatchFiles() []string {
	if g.batch == nil {
		return nil
	}
	return g.batch.fileOrder
}
