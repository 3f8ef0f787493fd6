package repo

import (
	"bytes"
	"cmp"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// Raw trees. A tree's content is a run of entries "<octal mode> <name>\x00<20-byte id>"
// in Git's order (by name, a folder's name compared as if "/" followed it).
// The gate reads and edits trees as these bytes, never decoding a folder of
// many notes into objects: these are the only functions that parse them.

// NextEntry parses the tree entry at off in raw: its name (a folder's
// marked by dir) and where it ends; ok false if it is malformed.
func NextEntry(raw []byte, off int) (name []byte, dir bool, end int, ok bool) {
	sp := bytes.IndexByte(raw[off:], ' ')
	if sp < 0 {
		return nil, false, 0, false
	}
	nul := bytes.IndexByte(raw[off+sp:], 0)
	if nul < 0 || off+sp+nul+21 > len(raw) {
		return nil, false, 0, false
	}
	return raw[off+sp+1 : off+sp+nul], string(raw[off:off+sp]) == "40000", off + sp + nul + 21, true
}

// CompareKeys orders two tree entries as Git does: by name, a folder's
// name followed by "/". (Only where treeDelta looks for a match depends
// on it: an entry is copied only when its bytes are equal.)
func CompareKeys(a []byte, aDir bool, b []byte, bDir bool) int {
	n := min(len(a), len(b))
	if c := bytes.Compare(a[:n], b[:n]); c != 0 {
		return c
	}
	next := func(s []byte, dir bool) int {
		if len(s) > n {
			return int(s[n])
		}
		if dir {
			return '/'
		}
		return -1 // the key ends here
	}
	return cmp.Compare(next(a, aDir), next(b, bDir))
}

// FindEntry returns the offset, mode and id of the entry name in raw, the
// content of tree (mode "" if there is none).
func FindEntry(raw []byte, tree plumbing.Hash, name string) (int, string, plumbing.Hash, error) {
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
		ename, dir, end, ok := NextEntry(raw, off)
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
		if insertAt == len(raw) && CompareKeys(ename, dir, bname, isDir) > 0 {
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

// PathChange is one path at which two commits' trees differ, as DiffPaths
// reports it: whether the new tree has an entry there that is not a
// folder, and that entry's mode as its tree writes it.
type PathChange struct {
	Path    string
	New     bool
	NewMode string
}

// rawEntry is one entry of a raw tree.
type rawEntry struct {
	name []byte
	mode string
	id   plumbing.Hash
	tree bool
}

// isTreeMode: a folder's mode, as Git writes it (40000) or zero-padded
// (040000, which Git only warns of).
func isTreeMode(mode string) bool { return mode == "40000" || mode == "040000" }

// parseRaw splits a raw tree into its entries (TreeCursor's walk).
func parseRaw(raw []byte) ([]rawEntry, error) {
	var out []rawEntry
	c := &TreeCursor{Raw: raw}
	for {
		if !c.Next() {
			return nil, fmt.Errorf("tree: malformed")
		}
		if !c.OK {
			return out, nil
		}
		var id plumbing.Hash
		copy(id[:], c.All[len(c.All)-20:])
		mode := string(c.Mode)
		out = append(out, rawEntry{name: c.Name, mode: mode, id: id, tree: isTreeMode(mode)})
	}
}

// DiffPaths lists every path (of an entry that is not a folder) at which
// the trees of commits from and to differ, comparing entries as their
// trees write them — mode text and id — where go-git's diff compares
// decoded modes (100664 and 100644 alike, 040000 and 40000 alike): a
// folder whose mode text changed has every path below it listed, on both
// sides. A path on both sides is listed once, New set. Zero is the empty
// tree.
func (g *Repo) DiffPaths(from, to plumbing.Hash) ([]PathChange, error) {
	root := func(c plumbing.Hash) ([]byte, error) {
		if c.IsZero() {
			return nil, nil
		}
		h, err := g.RootTree(c)
		if err != nil {
			return nil, err
		}
		return g.RawTree(h)
	}
	o, err := root(from)
	if err != nil {
		return nil, err
	}
	n, err := root(to)
	if err != nil {
		return nil, err
	}
	seen := map[string]int{}
	var out []PathChange
	add := func(p string, isNew bool, mode string) {
		if i, ok := seen[p]; ok {
			if isNew {
				out[i].New, out[i].NewMode = true, mode
			}
			return
		}
		seen[p] = len(out)
		out = append(out, PathChange{Path: p, New: isNew, NewMode: mode})
	}
	var all func(p string, e rawEntry, isNew bool) error
	all = func(p string, e rawEntry, isNew bool) error {
		if !e.tree {
			add(p, isNew, e.mode)
			return nil
		}
		raw, err := g.RawTree(e.id)
		if err != nil {
			return err
		}
		es, err := parseRaw(raw)
		if err != nil {
			return err
		}
		for _, c := range es {
			if err := all(p+"/"+string(c.name), c, isNew); err != nil {
				return err
			}
		}
		return nil
	}
	var walk func(prefix string, oRaw, nRaw []byte) error
	walk = func(prefix string, oRaw, nRaw []byte) error {
		olds, err := parseRaw(oRaw)
		if err != nil {
			return err
		}
		ns, err := parseRaw(nRaw)
		if err != nil {
			return err
		}
		join := func(name []byte) string {
			if prefix == "" {
				return string(name)
			}
			return prefix + "/" + string(name)
		}
		i, j := 0, 0
		for i < len(olds) || j < len(ns) {
			c := 0
			switch {
			case i == len(olds):
				c = 1
			case j == len(ns):
				c = -1
			default:
				c = CompareKeys(olds[i].name, olds[i].tree, ns[j].name, ns[j].tree)
			}
			switch {
			case c < 0:
				if err := all(join(olds[i].name), olds[i], false); err != nil {
					return err
				}
				i++
			case c > 0:
				if err := all(join(ns[j].name), ns[j], true); err != nil {
					return err
				}
				j++
			default:
				oe, ne := olds[i], ns[j]
				i, j = i+1, j+1
				if oe.mode == ne.mode && oe.id == ne.id {
					continue
				}
				if oe.tree && ne.tree && oe.mode == ne.mode {
					or, err := g.RawTree(oe.id)
					if err != nil {
						return err
					}
					nr, err := g.RawTree(ne.id)
					if err != nil {
						return err
					}
					if err := walk(join(ne.name), or, nr); err != nil {
						return err
					}
					continue
				}
				if err := all(join(oe.name), oe, false); err != nil {
					return err
				}
				if err := all(join(ne.name), ne, true); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk("", o, n); err != nil {
		return nil, err
	}
	return out, nil
}

// TreeCursor walks the entries of a raw tree in order: Next moves to the
// next (OK false at the end) and reports false when the tree is
// malformed; Name, Mode (as the tree writes it), Dir and All (the whole
// entry, its id the last 20 bytes) describe the entry.
type TreeCursor struct {
	Raw             []byte
	off, end        int
	Name, Mode, All []byte
	Dir, OK         bool
}

// Next moves c to the next entry.
func (c *TreeCursor) Next() bool {
	c.off = c.end
	if c.off >= len(c.Raw) {
		c.OK = false
		return true
	}
	name, dir, end, ok := NextEntry(c.Raw, c.off)
	if !ok {
		c.OK = false
		return false
	}
	sp := bytes.IndexByte(c.Raw[c.off:], ' ')
	c.Name, c.Dir, c.end, c.OK = name, dir, end, true
	c.Mode, c.All = c.Raw[c.off:c.off+sp], c.Raw[c.off:end]
	return true
}

// SortedTree reports whether raw's entries are in Git's order, each key
// after the one before (malformed: false).
func SortedTree(raw []byte) bool {
	c := &TreeCursor{Raw: raw}
	var prev []byte
	prevDir := false
	for first := true; ; first = false {
		if !c.Next() {
			return false
		}
		if !c.OK {
			return true
		}
		if !first && CompareKeys(prev, prevDir, c.Name, c.Dir) >= 0 {
			return false
		}
		prev, prevDir = c.Name, c.Dir
	}
}
