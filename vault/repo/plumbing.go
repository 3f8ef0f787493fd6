package repo

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// The Git vocabulary the rest of fedmem speaks. These are go-git's value
// types under the names this package gives them: a package outside this one
// names a hash, a branch, a commit or a tree entry through repo, and reaches
// Git's objects, trees, packs, refs and index only through the functions and
// methods of this package (go-git's own plumbing/porcelain split is the
// model: values here, the storage behind Repo).
type (
	// Hash is an object id.
	Hash = plumbing.Hash
	// RefName is a reference's full name (refs/heads/main).
	RefName = plumbing.ReferenceName
	// Commit is a decoded commit (its Hash, TreeHash, ParentHashes,
	// Message, Author, Committer and PGPSignature are read as fields).
	Commit = object.Commit
	// Signature is a commit's author or committer line.
	Signature = object.Signature
	// Tree is a decoded tree; TreeEntry one of its entries.
	Tree      = object.Tree
	TreeEntry = object.TreeEntry
	// EntryMode is a tree entry's mode.
	EntryMode = filemode.FileMode
)

// ZeroHash is the hash of nothing: an unborn branch, an absent object.
var ZeroHash = plumbing.ZeroHash

// The tree entry modes the gate tells apart.
const (
	ModeDir        = filemode.Dir
	ModeRegular    = filemode.Regular
	ModeExecutable = filemode.Executable
	ModeDeprecated = filemode.Deprecated
	ModeSymlink    = filemode.Symlink
	ModeSubmodule  = filemode.Submodule
)

// NewHash parses a hex object id (an invalid one gives a hash that names no
// object).
func NewHash(s string) Hash { return plumbing.NewHash(s) }

// BlobHash is the id content has as a blob.
func BlobHash(content []byte) Hash { return plumbing.ComputeHash(plumbing.BlobObject, content) }

// TreeHash is the id raw (a tree's content) has as a tree.
func TreeHash(raw []byte) Hash { return plumbing.ComputeHash(plumbing.TreeObject, raw) }

// BranchRef is the full name of branch (refs/heads/<branch>).
func BranchRef(branch string) RefName { return plumbing.NewBranchReferenceName(branch) }

// ParseMode reads a raw tree entry's octal mode ("100644", "40000").
func ParseMode(s string) (EntryMode, error) { return filemode.New(s) }

// IsNoteMode reports whether a raw tree entry's mode is a regular file
// (plain, executable or the deprecated group-writable one), not a link.
func IsNoteMode(mode string) bool {
	m, err := filemode.New(mode)
	return err == nil && m.IsFile() && m != filemode.Symlink
}

// ModeName names what a non-file entry is, for a message ("folder",
// "symbolic link", "submodule", else "special entry").
func ModeName(m EntryMode) string {
	switch m {
	case filemode.Dir:
		return "folder"
	case filemode.Symlink:
		return "symbolic link"
	case filemode.Submodule:
		return "submodule"
	}
	return "special entry"
}
