package view

import (
	"bytes"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strings"
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

// Within says whether p or a folder above it is in set (a hidden folder
// hides what it holds).
func Within(set map[string]bool, p string) bool {
	for q := p; ; {
		if set[q] {
			return true
		}
		i := strings.LastIndexByte(q, '/')
		if i < 0 {
			return false
		}
		q = q[:i]
	}
}

// Link destinations a page line may hold: an inline link's `](dest`, a
// reference definition's `[label]: dest`, a wiki link's `[[dest`.
var (
	inlineDest = regexp.MustCompile(`\]\(\s*<?([^)\s>]*)`)
	refDef     = regexp.MustCompile(`^\s*\[([^\]]+)\]:\s*<?([^\s>]+)`)
	wikiDest   = regexp.MustCompile(`\[\[([^\]|#]+)`)
)

// FilterLinks drops from the page at p (a vault path, or one relative to
// the folder a view shows) every line with a link to a hidden path —
// however the link is written: a title or a fragment after it,
// percent-encoded, a reference definition (and the lines that use its
// label), an Obsidian wiki link, a note of another folder — and, for a
// link whose text began on earlier lines, those lines too. A destination
// is resolved against the page's folder; one that leaves the tree, an
// absolute URL or a bare fragment is no vault path. It returns b itself
// when no line goes.
func FilterLinks(b []byte, p string, hidden func(string) bool) []byte {
	dir := path.Dir(p)
	lines := bytes.SplitAfter(b, []byte("\n"))
	drop := make([]bool, len(lines))
	hiddenDest := func(dest string) bool {
		if dest == "" || strings.HasPrefix(dest, "#") || strings.Contains(dest, "://") || strings.HasPrefix(dest, "mailto:") {
			return false
		}
		if i := strings.IndexAny(dest, "#?"); i >= 0 {
			dest = dest[:i]
		}
		if u, err := url.PathUnescape(dest); err == nil {
			dest = u
		}
		q := path.Join(dir, dest)
		if strings.HasPrefix(dest, "/") || q == "." || q == ".." || strings.HasPrefix(q, "../") {
			return false
		}
		return hidden(q) || !strings.HasSuffix(q, ".md") && hidden(q+".md")
	}
	labels := map[string]bool{}
	for i, l := range lines {
		s := string(l)
		for _, m := range inlineDest.FindAllStringSubmatch(s, -1) {
			drop[i] = drop[i] || hiddenDest(m[1])
		}
		if m := refDef.FindStringSubmatch(s); m != nil && hiddenDest(m[2]) {
			drop[i] = true
			labels[strings.ToLower(m[1])] = true
		}
		for _, m := range wikiDest.FindAllStringSubmatch(s, -1) {
			drop[i] = drop[i] || hiddenDest(strings.TrimSpace(m[1]))
		}
	}
	for i, l := range lines {
		s := strings.ToLower(string(l))
		for lb := range labels {
			if strings.Contains(s, "]["+lb+"]") || strings.Contains(s, "["+lb+"][]") {
				drop[i] = true
			}
		}
	}
	// A dropped link whose text opened on an earlier line: back to it.
	for i := range lines {
		if !drop[i] {
			continue
		}
		open := bytes.Count(lines[i], []byte("]")) - bytes.Count(lines[i], []byte("["))
		for k := i - 1; k >= 0 && open > 0; k-- {
			drop[k] = true
			open -= bytes.Count(lines[k], []byte("[")) - bytes.Count(lines[k], []byte("]"))
		}
	}
	var out []byte
	changed := false
	for i, l := range lines {
		if drop[i] {
			changed = true
			continue
		}
		out = append(out, l...)
	}
	if !changed {
		return b
	}
	if out == nil {
		out = []byte{}
	}
	return out
}
