package repo

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"

	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/repo/gitindex"
)

// gitRepo wraps the few go-git plumbing calls Init needs. It writes blobs,
// trees, a commit and a compare-and-swap ref update itself: no worktree scan.
type gitRepo struct {
	r *git.Repository
	s storage.Storer
}

// headState is what HEAD points at: the branch and, unless unborn, its commit.
type headState struct {
	branch plumbing.ReferenceName
	ref    *plumbing.Reference // nil when the branch is unborn
	tree   *object.Tree        // nil when the branch is unborn
}

func openOrInit(dir string, fresh bool) (*gitRepo, error) {
	var r *git.Repository
	var err error
	if fresh {
		r, err = git.PlainInitWithOptions(dir, &git.PlainInitOptions{
			InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(Branch)},
		})
		if err != nil {
			return nil, fmt.Errorf("init %s: git init: %w", dir, err)
		}
	} else {
		r, err = git.PlainOpen(dir)
		if err != nil {
			return nil, fmt.Errorf("init %s: open repository: %w", dir, err)
		}
	}
	return &gitRepo{r: r, s: r.Storer}, nil
}

func (g *gitRepo) head() (headState, error) {
	var h headState
	ref, err := g.s.Reference(plumbing.HEAD)
	if err != nil {
		return h, fmt.Errorf("read HEAD: %w", err)
	}
	if ref.Type() != plumbing.SymbolicReference {
		return h, fmt.Errorf("HEAD is detached at %s; check out branch %s first", ref.Hash(), Branch)
	}
	h.branch = ref.Target()
	br, err := g.s.Reference(h.branch)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return h, nil // unborn
	}
	if err != nil {
		return h, fmt.Errorf("read %s: %w", h.branch, err)
	}
	c, err := object.GetCommit(g.s, br.Hash())
	if err != nil {
		return h, fmt.Errorf("read commit %s of %s: %w", br.Hash(), h.branch, err)
	}
	t, err := c.Tree()
	if err != nil {
		return h, fmt.Errorf("read tree of %s: %w", br.Hash(), err)
	}
	h.ref, h.tree = br, t
	return h, nil
}

// inTree reports whether p is a regular file in HEAD's tree, and its blob.
func (g *gitRepo) inTree(h headState, p string) (bool, plumbing.Hash, error) {
	if h.tree == nil {
		return false, plumbing.ZeroHash, nil
	}
	e, err := h.tree.FindEntry(p)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return false, plumbing.ZeroHash, nil
	}
	if err != nil {
		return false, plumbing.ZeroHash, fmt.Errorf("look up %s in HEAD: %w", p, err)
	}
	if !e.Mode.IsFile() {
		return false, plumbing.ZeroHash, fmt.Errorf("%s in HEAD is not a regular file (mode %s)", p, e.Mode)
	}
	return true, e.Hash, nil
}

// hasTrackedContent reports whether folder is a non-empty tree in HEAD.
func (g *gitRepo) hasTrackedContent(h headState, folder string) (bool, error) {
	if h.tree == nil {
		return false, nil
	}
	e, err := h.tree.FindEntry(folder)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look up %s in HEAD: %w", folder, err)
	}
	return e.Mode == filemode.Dir, nil
}

func (g *gitRepo) blob(h plumbing.Hash) ([]byte, error) {
	b, err := object.GetBlob(g.s, h)
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

func (g *gitRepo) writeBlob(content []byte) (plumbing.Hash, error) {
	o := g.s.NewEncodedObject()
	o.SetType(plumbing.BlobObject)
	o.SetSize(int64(len(content)))
	w, err := o.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(content); err != nil {
		w.Close()
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return g.s.SetEncodedObject(o)
}

// commit records the worktree content of paths on top of HEAD and moves the
// branch with a compare-and-swap, so a concurrent gate commit is not lost.
func (g *gitRepo) commit(root string, h headState, paths []string, msg string, when time.Time) (string, error) {
	blobs := map[string]plumbing.Hash{}
	for _, p := range paths {
		content, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			return "", fmt.Errorf("commit: %w", err)
		}
		id, err := g.writeBlob(content)
		if err != nil {
			return "", fmt.Errorf("commit: write blob for %s: %w", p, err)
		}
		blobs[p] = id
	}
	treeID, err := g.writeTree(h.tree, blobs)
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	sig := object.Signature{Name: GateName, Email: GateEmail, When: when}
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: treeID}
	if h.ref != nil {
		c.ParentHashes = []plumbing.Hash{h.ref.Hash()}
	}
	o := g.s.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		return "", fmt.Errorf("commit: encode: %w", err)
	}
	id, err := g.s.SetEncodedObject(o)
	if err != nil {
		return "", fmt.Errorf("commit: write: %w", err)
	}
	if err := g.s.CheckAndSetReference(plumbing.NewHashReference(h.branch, id), h.ref); err != nil {
		return "", fmt.Errorf("commit: update %s: %w", h.branch, err)
	}
	return id.String(), nil
}

// writeTree writes base with files (slash paths → blob) added or replaced,
// rewriting only the trees on the changed paths.
func (g *gitRepo) writeTree(base *object.Tree, files map[string]plumbing.Hash) (plumbing.Hash, error) {
	entries := map[string]object.TreeEntry{}
	if base != nil {
		for _, e := range base.Entries {
			entries[e.Name] = e
		}
	}
	sub := map[string]map[string]plumbing.Hash{}
	for p, id := range files {
		first, rest, nested := strings.Cut(p, "/")
		if !nested {
			entries[first] = object.TreeEntry{Name: first, Mode: filemode.Regular, Hash: id}
			continue
		}
		if sub[first] == nil {
			sub[first] = map[string]plumbing.Hash{}
		}
		sub[first][rest] = id
	}
	for name, files := range sub {
		var subBase *object.Tree
		if e, ok := entries[name]; ok {
			if e.Mode != filemode.Dir {
				return plumbing.ZeroHash, fmt.Errorf("%s is a file in HEAD, expected a folder", name)
			}
			t, err := object.GetTree(g.s, e.Hash)
			if err != nil {
				return plumbing.ZeroHash, fmt.Errorf("read tree %s: %w", name, err)
			}
			subBase = t
		}
		id, err := g.writeTree(subBase, files)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries[name] = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: id}
	}
	t := &object.Tree{}
	for _, e := range entries {
		t.Entries = append(t.Entries, e)
	}
	// Git orders tree entries by name, comparing a folder as if its name
	// ended in '/'; fsck --strict rejects any other order.
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(t.Entries, func(i, j int) bool { return key(t.Entries[i]) < key(t.Entries[j]) })
	o := g.s.NewEncodedObject()
	if err := t.Encode(o); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encode tree: %w", err)
	}
	return g.s.SetEncodedObject(o)
}

// updateIndex records paths in .git/index with their current stat data and
// content hash, so `git status` finds the worktree clean without re-reading
// files. It takes .git/index.lock like the Git CLI does.
func (g *gitRepo) updateIndex(root string, paths []string, owner vault.Owner) error {
	if len(paths) == 0 {
		return nil
	}
	lock := filepath.Join(root, ".git", "index.lock")
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
	if err != nil {
		return fmt.Errorf("lock index: %w (is another git or gate process running?)", err)
	}
	fail := func(err error) error {
		f.Close()
		os.Remove(lock)
		return err
	}
	var puts []gitindex.Entry
	for _, p := range paths {
		full := filepath.Join(root, filepath.FromSlash(p))
		content, err := os.ReadFile(full)
		if err != nil {
			return fail(fmt.Errorf("index %s: %w", p, err))
		}
		fi, err := os.Lstat(full)
		if err != nil {
			return fail(fmt.Errorf("index %s: %w", p, err))
		}
		puts = append(puts, gitindex.FromFile(p, plumbing.ComputeHash(plumbing.BlobObject, content), fi))
	}
	gitDir := filepath.Join(root, ".git")
	raw, err := os.ReadFile(filepath.Join(gitDir, "index"))
	if errors.Is(err, os.ErrNotExist) {
		raw, err = nil, nil
	}
	if err != nil {
		return fail(fmt.Errorf("read index: %w", err))
	}
	// Split like the gate keeps it (gitindex), unless core.splitIndex
	// says false.
	split := true
	if cfg, err := g.r.Config(); err == nil && cfg.Raw != nil {
		split = gitindex.WantSplit(cfg.Raw.Section("core").Option("splitIndex"))
	}
	u, err := gitindex.Apply(gitDir, raw, puts, nil, gitindex.Options{Split: split})
	if err != nil {
		return fail(fmt.Errorf("update index: %w", err))
	}
	chown := func(sf *os.File) error { return sf.Chown(owner.UID, owner.GID) }
	if err := gitindex.WriteShared(gitDir, u, chown); err != nil {
		return fail(fmt.Errorf("write shared index: %w", err))
	}
	if err := f.Chown(owner.UID, owner.GID); err != nil {
		return fail(fmt.Errorf("chown index: %w", err))
	}
	_, err = f.Write(u.Index)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(lock, filepath.Join(root, ".git", "index"))
	}
	if err != nil {
		os.Remove(lock)
		return fmt.Errorf("write index: %w", err)
	}
	return nil
}
