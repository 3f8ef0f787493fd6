package view

import (
	"bytes"
	"path"
	"sort"
)

// PagesOf returns, for the hidden notes of a tree (paths relative to it),
// the folder pages that may list them and, for each, the names of the
// hidden notes of its folder: a folder's index.md and log.md, and the
// archive pages under its index/ and log/ (listed by the caller, which
// reads the tree).
func PagesOf(hidden []string) map[string][]string {
	byDir := map[string][]string{}
	for _, h := range hidden {
		d, base := path.Split(h)
		byDir[path.Clean("./"+d)] = append(byDir[path.Clean("./"+d)], base)
	}
	for _, v := range byDir {
		sort.Strings(v)
	}
	return byDir
}

// FilterPage drops from a folder page (b) every line that links to one of
// the hidden notes of its folder (names): `- [Title](name.md)` in index.md
// and log.md, `](../name.md)` in an archive page (archive is true). It
// returns b itself when no line goes.
func FilterPage(b []byte, names []string, archive bool) []byte {
	var targets [][]byte
	for _, n := range names {
		if archive {
			targets = append(targets, []byte("](../"+n+")"), []byte("](.././"+n+")"))
		} else {
			targets = append(targets, []byte("]("+n+")"), []byte("](./"+n+")"))
		}
		// An angle-bracketed destination names the same file.
		if archive {
			targets = append(targets, []byte("](<../"+n+">)"))
		} else {
			targets = append(targets, []byte("](<"+n+">)"))
		}
	}
	var out []byte
	changed := false
	for rest := b; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		drop := false
		for _, t := range targets {
			if bytes.Contains(line, t) {
				drop = true
				break
			}
		}
		if drop {
			changed = true
			continue
		}
		out = append(out, line...)
	}
	if !changed {
		return b
	}
	if out == nil {
		out = []byte{}
	}
	return out
}
