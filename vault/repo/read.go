package repo

import (
	"errors"
	"fmt"
	"io"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Commit reads commit h.
func (g *Repo) Commit(h Hash) (*Commit, error) { return object.GetCommit(g.s, h) }

// Tree reads tree h.
func (g *Repo) Tree(h Hash) (*Tree, error) { return object.GetTree(g.s, h) }

// TreeOf reads the tree of commit c (the empty tree for zero).
func (g *Repo) TreeOf(c Hash) (*Tree, error) {
	if c.IsZero() {
		return &object.Tree{}, nil
	}
	com, err := object.GetCommit(g.s, c)
	if err != nil {
		return nil, err
	}
	return com.Tree()
}

// EntryAt is the tree entry at path p in commit c (a file or a folder), or
// nil when nothing is there.
func (g *Repo) EntryAt(c Hash, p string) (*TreeEntry, error) {
	t, err := g.TreeOf(c)
	if err != nil {
		return nil, err
	}
	e, err := t.FindEntry(p)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrFileNotFound) {
		return nil, nil
	}
	return e, err
}

// BlobPrefix reads at most n bytes of blob h.
func (g *Repo) BlobPrefix(h Hash, n int64) ([]byte, error) {
	obj, err := g.s.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(io.LimitReader(rd, n))
}

// Blob reads blob h whole.
func (g *Repo) Blob(h Hash) ([]byte, error) {
	b, err := g.rawObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	return b, nil
}

// Files calls fn for every entry of commit c's tree that is not a folder
// (files, links and gitlinks), in tree order; an error from fn stops the
// walk and is returned.
func (g *Repo) Files(c Hash, fn func(p string, mode EntryMode, h Hash) error) error {
	t, err := g.TreeOf(c)
	if err != nil {
		return err
	}
	w := object.NewTreeWalker(t, true, nil)
	defer w.Close()
	for {
		name, e, err := w.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if e.Mode == ModeDir {
			continue
		}
		if err := fn(name, e.Mode, e.Hash); err != nil {
			return err
		}
	}
}

// FileChange is one path at which two trees differ: its name in the old
// tree (From, "" when added) and in the new (To, "" when deleted), and the
// new entry's mode.
type FileChange struct {
	From, To string
	ToMode   EntryMode
}

// Diff lists the paths at which the trees of commits from and to differ
// (a zero hash is the empty tree).
func (g *Repo) Diff(from, to Hash) ([]FileChange, error) {
	ft, err := g.TreeOf(from)
	if err != nil {
		return nil, err
	}
	tt, err := g.TreeOf(to)
	if err != nil {
		return nil, err
	}
	return diffTrees(ft, tt)
}

func diffTrees(from, to *Tree) ([]FileChange, error) {
	chs, err := object.DiffTree(from, to)
	if err != nil {
		return nil, err
	}
	out := make([]FileChange, 0, len(chs))
	for _, c := range chs {
		out = append(out, FileChange{From: c.From.Name, To: c.To.Name, ToMode: c.To.TreeEntry.Mode})
	}
	return out, nil
}

// ChangedPaths lists the files commit com changed against its first
// parent (every file for a root commit); deletions are not listed.
func (g *Repo) ChangedPaths(com *Commit) ([]string, error) {
	to, err := com.Tree()
	if err != nil {
		return nil, err
	}
	from := &object.Tree{}
	if com.NumParents() > 0 {
		p, err := com.Parent(0)
		if err != nil {
			return nil, err
		}
		if from, err = p.Tree(); err != nil {
			return nil, err
		}
	}
	chs, err := diffTrees(from, to)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range chs {
		if c.To != "" {
			out = append(out, c.To)
		}
	}
	return out, nil
}

// WriteCommit writes a commit of tree root on parents, by author and
// committer, signed like every commit of this repository, without moving
// any ref.
func (g *Repo) WriteCommit(root Hash, parents []Hash, author, committer Signature, msg string) (Hash, error) {
	com := &object.Commit{Author: author, Committer: committer, Message: msg, TreeHash: root, ParentHashes: parents}
	if err := signCommit(g.signer, com); err != nil {
		return plumbing.ZeroHash, err
	}
	obj := g.s.NewEncodedObject()
	if err := com.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return g.s.SetEncodedObject(obj)
}

// Ref reads the reference name: its hash, or zero and ok false when there
// is no such reference.
func (g *Repo) Ref(name RefName) (h Hash, ok bool, err error) {
	ref, err := g.s.Reference(name)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	return ref.Hash(), true, nil
}

// SetRef points the reference name at h (no compare-and-swap: for a
// remote-tracking ref only the gate writes).
func (g *Repo) SetRef(name RefName, h Hash) error {
	return g.s.SetReference(plumbing.NewHashReference(name, h))
}

// Log calls fn with every commit reachable from HEAD of the repository in
// dir, newest committer time first, until fn returns ErrStop (not an
// error) or another error.
func Log(dir string, fn func(*Commit) error) error {
	r, err := git.PlainOpen(dir)
	if err != nil {
		return fmt.Errorf("open vault repository %s: %w", dir, err)
	}
	it, err := r.Log(&git.LogOptions{Order: git.LogOrderCommitterTime})
	if err != nil {
		return fmt.Errorf("%s: history: %w", dir, err)
	}
	err = it.ForEach(fn)
	if err != nil && !errors.Is(err, storer.ErrStop) {
		return fmt.Errorf("%s: history: %w", dir, err)
	}
	return nil
}

// ErrStop ends a Log walk early without an error.
var ErrStop = storer.ErrStop

// MergeBase walks the first-parent chains of a and b back in step until one
// reaches a commit the other has seen. It returns the base and the commits
// of each side above it, newest first. Cost: the distance to the base (the
// gate keeps history linear), not the length of history; at most max steps.
func (g *Repo) MergeBase(a, b Hash, max int) (base Hash, aSide, bSide []Hash, err error) {
	seenA, seenB := map[Hash]int{}, map[Hash]int{}
	ca, cb := a, b
	for i := 0; i < max && (!ca.IsZero() || !cb.IsZero()); i++ {
		if !ca.IsZero() {
			if _, ok := seenB[ca]; ok {
				return ca, aSide, bSide[:seenB[ca]], nil
			}
			seenA[ca] = len(aSide)
			aSide = append(aSide, ca)
			if ca, err = g.FirstParent(ca); err != nil {
				return
			}
		}
		if !cb.IsZero() {
			if _, ok := seenA[cb]; ok {
				return cb, aSide[:seenA[cb]], bSide, nil
			}
			seenB[cb] = len(bSide)
			bSide = append(bSide, cb)
			if cb, err = g.FirstParent(cb); err != nil {
				return
			}
		}
	}
	if b.IsZero() {
		return plumbing.ZeroHash, aSide, nil, nil
	}
	return plumbing.ZeroHash, nil, nil, errors.New("the vault and the remote branch share no history (or it is deeper than the walk bound)")
}

// FirstParent is commit h's first parent (zero for a root commit).
func (g *Repo) FirstParent(h Hash) (Hash, error) {
	c, err := g.Commit(h)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read commit %s: %w", h, err)
	}
	if c.NumParents() == 0 {
		return plumbing.ZeroHash, nil
	}
	return c.ParentHashes[0], nil
}
