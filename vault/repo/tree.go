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
