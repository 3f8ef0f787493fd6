package viewfile

// Red team (round 4) of the gate's view tree (commits 77fa6f7, 9f2c653:
// the tree is an allow-list, its pages are pre-filtered, TreeVersion 2:
// a session whites out only the hidden paths the tree still holds).
// Failing tests say "BREACH:"; the others are attacks that held, kept as
// regression tests.

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/gate/internal/vaulttest"
	"github.com/fedmem/fedmem/vault/repo"
	"github.com/fedmem/fedmem/vault/view"
)

// rt4CommitTop makes HEAD a commit of HEAD's tree with its top-level
// entry name replaced by (mode, sub) — a remote's commit the gate syncs.
func rt4CommitTop(t *testing.T, v, name, mode, sub string) repo.Hash {
	t.Helper()
	var keep []string
	for _, l := range strings.Split(rtGit(t, v, "", "ls-tree", "HEAD"), "\n") {
		if l != "" && !strings.HasSuffix(l, "\t"+name) {
			keep = append(keep, l)
		}
	}
	// mktree normalises modes: the root goes through a raw tree too.
	var ents [][3]string
	for _, l := range keep {
		meta, n, _ := strings.Cut(l, "\t")
		f := strings.Fields(meta)
		ents = append(ents, [3]string{f[0], n, f[2]})
	}
	ents = append(ents, [3]string{mode, name, sub})
	sortEntries(ents)
	root := rtRawTree(t, v, ents...)
	c := rtGit(t, v, "", "commit-tree", root, "-p", "HEAD", "-m", "a remote's commit")
	rtGit(t, v, "", "update-ref", "HEAD", c)
	return repo.NewHash(c)
}

// sortEntries puts raw tree entries in Git's order (a folder's name
// compares as name + "/").
func sortEntries(ents [][3]string) {
	key := func(e [3]string) string {
		if strings.TrimLeft(e[0], "0") == "40000" {
			return e[1] + "/"
		}
		return e[1]
	}
	for i := 1; i < len(ents); i++ {
		for j := i; j > 0 && key(ents[j]) < key(ents[j-1]); j-- {
			ents[j], ents[j-1] = ents[j-1], ents[j]
		}
	}
}

// rt4Session is what a session starting at now sees of the view tree,
// as mounts.LoadView and view.BuildLayer build it over the tree: a
// whiteout at each path of m.At(now) the tree holds, and the pages of
// those paths' folders filtered of them; every other file of the tree as
// it is (the tree's pages are trusted to be filtered already).
func rt4Session(t *testing.T, v string, m *view.Manifest, now time.Time) map[string]string {
	t.Helper()
	tree := view.TreeDir(v)
	hide := map[string]bool{}
	var hidden []string
	for _, e := range m.At(now, nil) {
		if _, err := os.Lstat(filepath.Join(tree, filepath.FromSlash(e.Path))); err == nil {
			hide[e.Path] = true
			hidden = append(hidden, e.Path)
		}
	}
	pages := view.PagesOf(hidden)
	out := map[string]string{}
	_ = filepath.WalkDir(tree, func(full string, d fs.DirEntry, err error) error {
		if err != nil || full == tree {
			return nil
		}
		rel, _ := filepath.Rel(tree, full)
		rel = filepath.ToSlash(rel)
		if hide[rel] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(full)
		if err != nil {
			return nil
		}
		if view.IsPage(rel) {
			if names := pages[pageDir(rel)]; len(names) > 0 {
				b = view.FilterLinks(b, rel, func(p string) bool { return hide[p] })
			}
		}
		out[rel] = string(b)
		return nil
	})
	return out
}

// rt4Find lists the files of a session's view holding marker.
func rt4Find(seen map[string]string, marker string) []string {
	var out []string
	for p, b := range seen {
		if strings.Contains(b, marker) {
			out = append(out, p)
		}
	}
	return out
}

// TestRTView4PaddedFolderKeptPath (BREACH): a note in force is in the
// tree; a later remote commit gives its folder the zero-padded mode
// "040000" and withholds the note (or changes only the mode, and a
// commit after withholds it). The conflict index stops walking the folder
// (raw mode not "40000": dropDir), so the manifest no longer knows the
// note at all — not hidden; the tree's writer (go-git's diff, which reads
// "040000" as a folder) sees the note changed, finds it not shown and
// keeps the path with its old text ("a path hidden later keeps its
// text"); no whiteout is made for it, since the manifest does not hide
// it. Every later session reads a note withheld at HEAD (and a rebuilt
// tree would not hold it). Root cause: gate/viewfile/tree.go syncTree
// (a kept path relies on the manifest to hide it) against
// gate/decide/conflictindex.go diffDir/addEntry (a folder not walked is
// neither shown nor hidden: its kept files are not in idx.view).
func TestRTView4PaddedFolderKeptPath(t *testing.T) {
	inForce := "---\ntitle: Padded kept\n---\nRTVIEW4-PADKEPT text\n"
	withheld := "---\ntitle: Padded kept\nwithheld: {by: \"human:curator\", reason: poisoned}\n---\nRTVIEW4-PADKEPT text\n"
	for _, two := range []bool{false, true} {
		t.Run(map[bool]string{false: "one-commit", true: "mode-then-withhold"}[two], func(t *testing.T) {
			v := vaulttest.New(t)
			b1 := rtGit(t, v, inForce, "hash-object", "-w", "--stdin")
			inner1 := rtGit(t, v, "100644 blob "+b1+"\tsecret.md\n", "mktree")
			rt4CommitTop(t, v, "25-pad", "40000", rtRawTree(t, v, [3]string{"40000", "inner", inner1}))
			m, _ := rtWrite(t, v)
			if got := rt4Find(rt4Session(t, v, m, time.Now()), "RTVIEW4-PADKEPT"); len(got) != 1 {
				t.Fatalf("the note in force is not shown at first: %v", got)
			}
			if two {
				rt4CommitTop(t, v, "25-pad", "40000", rtRawTree(t, v, [3]string{"040000", "inner", inner1}))
				rtWrite(t, v)
			}
			b2 := rtGit(t, v, withheld, "hash-object", "-w", "--stdin")
			inner2 := rtGit(t, v, "100644 blob "+b2+"\tsecret.md\n", "mktree")
			rt4CommitTop(t, v, "25-pad", "40000", rtRawTree(t, v, [3]string{"040000", "inner", inner2}))
			m, head := rtWrite(t, v)
			if m.Tree != head.String() {
				t.Fatalf("the manifest names no tree at HEAD: sessions scan")
			}
			if got := rt4Find(rt4Session(t, v, m, time.Now()), "RTVIEW4-PADKEPT"); len(got) > 0 {
				t.Errorf("BREACH: a note withheld at HEAD under a folder turned to mode 040000 is shown to new sessions (kept in the tree, not in the manifest): %v", got)
			}
		})
	}
}

// TestRTView4DeprecatedModeKept (BREACH, the allow-list): a shown note
// whose mode a later commit changes from 100644 to the deprecated
// 100664, same blob. The conflict index re-reads the entry (raw tree
// bytes differ) and stops showing it (not 100644/100755); go-git's diff
// hashes 100664 as 100644 and reports no change, so the tree keeps the
// file — a file of a mode the allow-list does not show, in every session
// (a rebuilt tree does not hold it: moved ≠ rebuilt). Its text is in
// force (a withhold after it is judged and whited out: checked, held).
// Root cause: gate/viewfile/tree.go syncTree (moves only by repo.Diff,
// go-git object.DiffTree, which ignores a Regular↔Deprecated change)
// against gate/decide/conflictindex.go addEntry (shown only for raw
// modes 100644/100755).
func TestRTView4DeprecatedModeKept(t *testing.T) {
	v := vaulttest.New(t)
	b1 := rtGit(t, v, "---\ntitle: Mode\n---\nRTVIEW4-MODE text\n", "hash-object", "-w", "--stdin")
	rt4CommitTop(t, v, "25-mode", "40000", rtRawTree(t, v, [3]string{"100644", "m.md", b1}))
	rtWrite(t, v)
	rt4CommitTop(t, v, "25-mode", "40000", rtRawTree(t, v, [3]string{"100664", "m.md", b1}))
	m, head := rtWrite(t, v)
	r := vaulttest.Open(t, v)
	if _, ok := shownAt(t, r, head)["25-mode/m.md"]; ok {
		t.Fatalf("the index shows a 100664 file: the allow-list changed")
	}
	if got := rt4Find(rt4Session(t, v, m, time.Now()), "RTVIEW4-MODE"); len(got) > 0 {
		t.Errorf("BREACH: a file of mode 100664, not shown by the conflict index at HEAD, stays in the moved view tree (a rebuilt one lacks it): %v", got)
	}
	b2 := rtGit(t, v, "---\ntitle: Mode\nstatus: deprecated\n---\nRTVIEW4-MODE text\n", "hash-object", "-w", "--stdin")
	rt4CommitTop(t, v, "25-mode", "40000", rtRawTree(t, v, [3]string{"100664", "m.md", b2}))
	m, _ = rtWrite(t, v)
	if got := rt4Find(rt4Session(t, v, m, time.Now()), "RTVIEW4-MODE"); len(got) > 0 {
		t.Errorf("BREACH: a deprecated 100664 note kept in the tree is not whited out: %v", got)
	}
}

// TestRTView4StaleNotShownListed (BREACH): a note in force until a
// stale_after, of mode 100664 (judged, not shown: never in the tree),
// listed by its folder's index.md. The tree's pages are filtered only of
// the notes hidden at its commit (m.Hidden), not of those in force until
// a time (m.Stale); the session filters pages only for hidden paths the
// tree holds — this one it does not. A session after stale_after reads
// the page listing (title and link) a note that is not in force.
// Root cause: gate/viewfile/viewfile.go newJudged (names from m.Hidden
// only) with mounts/view.go LoadView (v.hide only the paths the tree
// has: a stale note the tree lacks is trusted to be filtered already).
func TestRTView4StaleNotShownListed(t *testing.T) {
	v := vaulttest.New(t)
	note := rtGit(t, v, "---\ntitle: Soon stale\nstale_after: 2001-01-01T00:00:00Z\n---\nx\n", "hash-object", "-w", "--stdin")
	page := rtGit(t, v, "# Index\n\nNotes in this folder. Written by the fedmem gate.\n\n- [RTVIEW4-STALETITLE](s.md)\n- [Other](o.md)\n", "hash-object", "-w", "--stdin")
	other := rtGit(t, v, "---\ntitle: Other\n---\no\n", "hash-object", "-w", "--stdin")
	rt4CommitTop(t, v, "25-stale", "40000", rtRawTree(t, v, [3]string{"100644", "index.md", page}, [3]string{"100644", "o.md", other}, [3]string{"100664", "s.md", note}))
	m, _ := rtWrite(t, v)
	stale := false
	for _, e := range m.At(time.Now(), nil) {
		stale = stale || e.Path == "25-stale/s.md"
	}
	if !stale {
		t.Fatalf("s.md is not hidden as stale: %+v", m)
	}
	seen := rt4Session(t, v, m, time.Now())
	if !strings.Contains(seen["25-stale/index.md"], "](o.md)") {
		t.Fatalf("the page is not shown: %q", seen["25-stale/index.md"])
	}
	if got := rt4Find(seen, "RTVIEW4-STALETITLE"); len(got) > 0 {
		t.Errorf("BREACH: a folder page lists a note past its stale_after that the tree does not hold (no whiteout, no filter in the session): %v", got)
	}
}

// TestRTView4StaleInTreeFiltered (held): the ordinary stale note — in
// force when the tree is written (stale_after passed, not yet swept),
// hidden at session start: the tree holds it, so the session whites it
// out and filters its folder's pages, the archive page too.
func TestRTView4StaleInTreeFiltered(t *testing.T) {
	v := vaulttest.New(t)
	vaulttest.Commit(t, v, map[string]string{
		"20-domains/st/s.md":             "---\ntitle: Stale one\nstale_after: 2001-01-01T00:00:00Z\n---\nRTVIEW4-STALEBODY\n",
		"20-domains/st/o.md":             "---\ntitle: Other\n---\no\n",
		"20-domains/st/index.md":         "# Index\n\n- [RTVIEW4-STALEIDX](s.md)\n- [Other](o.md)\n",
		"20-domains/st/log.md":           "# Log\n\n- promoted [RTVIEW4-STALELOG](s.md) from session x\n",
		"20-domains/st/index/000001.md":  "# Index\n\n- [RTVIEW4-STALEARCH](../s.md)\n",
		"20-domains/st/index/000002.md":  "# Index\n\n- [RTVIEW4-STALEARCH2](<../s.md>)\n",
		"20-domains/st/sub/index.md":     "# Index\n\n- [sub](x.md)\n",
		"20-domains/st/sub/x.md":         "x\n",
		"20-domains/st/deep/dd/index.md": "# Index\n",
	})
	m, _ := rtWrite(t, v)
	seen := rt4Session(t, v, m, time.Now())
	for _, mk := range []string{"RTVIEW4-STALEBODY", "RTVIEW4-STALEIDX", "RTVIEW4-STALELOG", "RTVIEW4-STALEARCH"} {
		if got := rt4Find(seen, mk); len(got) > 0 {
			t.Errorf("BREACH: %s of a stale note seen: %v", mk, got)
		}
	}
}

// TestRTView4HiddenFromStartPages (held): notes hidden when first
// committed — withheld, a dot file, a draft in a folder touched only by
// an archive page's change, a note at the vault's root — never reach the
// tree, and the tree's pages of their folders (root, archive, a page
// renamed into place) are filtered of them at each commit.
func TestRTView4HiddenFromStartPages(t *testing.T) {
	v := vaulttest.New(t)
	rtWrite(t, v)
	vaulttest.Commit(t, v, map[string]string{
		"20-domains/h/w.md":    "---\ntitle: W\nwithheld: {reason: x}\n---\nw\n",
		"20-domains/h/.dot.md": "RTVIEW4-HDOT\n",
		"20-domains/h/ok.md":   "ok\n",
		"root-draft.md":        "---\nstatus: draft\n---\nr\n",
		"index.md":             "# Index\n\n- [RTVIEW4-HROOT](root-draft.md)\n- [fine](README.md)\n",
	})
	rtWrite(t, v)
	// The pages come in later commits, each touching one folder only.
	vaulttest.Commit(t, v, map[string]string{"20-domains/h/index/000001.md": "# Index\n\n- [RTVIEW4-HARCH](../w.md)\n- [RTVIEW4-HARCHDOT](../.dot.md)\n"})
	rtWrite(t, v)
	vaulttest.Commit(t, v, map[string]string{"20-domains/h/elsewhere.md": "# Index\n\n- [RTVIEW4-HREN](w.md)\n"})
	rtWrite(t, v)
	vaulttest.Git(t, v, "mv", "20-domains/h/elsewhere.md", "20-domains/h/log.md")
	vaulttest.Git(t, v, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "rename into a page")
	m, _ := rtWrite(t, v)
	seen := rt4Session(t, v, m, time.Now())
	for _, mk := range []string{"RTVIEW4-HDOT", "RTVIEW4-HROOT", "RTVIEW4-HARCH", "RTVIEW4-HARCHDOT", "RTVIEW4-HREN"} {
		if got := rt4Find(seen, mk); len(got) > 0 {
			t.Errorf("BREACH: %s listed or shown: %v", mk, got)
		}
	}
	// Rebuilt the same.
	must(t, os.Remove(view.Path(v)))
	m, _ = rtWrite(t, v)
	seen = rt4Session(t, v, m, time.Now())
	for _, mk := range []string{"RTVIEW4-HDOT", "RTVIEW4-HROOT", "RTVIEW4-HARCH", "RTVIEW4-HARCHDOT", "RTVIEW4-HREN"} {
		if got := rt4Find(seen, mk); len(got) > 0 {
			t.Errorf("BREACH: rebuilt: %s listed or shown: %v", mk, got)
		}
	}
}

// TestRTView4DuplicateEntryDropped (held): a remote's tree with two
// entries of one name (fsck's duplicateEntries; a push without
// receive.fsckObjects takes it) — a withheld one first, an in-force one
// after — and a later commit that drops the second. The moved index can
// lose the name's judgement (dropNote on the leftover old entry), but a
// session sees neither text: the path is not in the tree.
func TestRTView4DuplicateEntryDropped(t *testing.T) {
	v := vaulttest.New(t)
	w := rtGit(t, v, "---\ntitle: Dup\nwithheld: {reason: x}\n---\nRTVIEW4-DUPW withheld\n", "hash-object", "-w", "--stdin")
	f := rtGit(t, v, "---\ntitle: Dup\n---\nRTVIEW4-DUPF in force\n", "hash-object", "-w", "--stdin")
	rt4CommitTop(t, v, "25-dup", "40000", rtRawTree(t, v, [3]string{"100644", "d.md", f}))
	rtWrite(t, v)
	rt4CommitTop(t, v, "25-dup", "40000", rtRawTree(t, v, [3]string{"100644", "d.md", w}, [3]string{"100644", "d.md", f}))
	rtWrite(t, v)
	rt4CommitTop(t, v, "25-dup", "40000", rtRawTree(t, v, [3]string{"100644", "d.md", w}))
	m, _ := rtWrite(t, v)
	seen := rt4Session(t, v, m, time.Now())
	for _, mk := range []string{"RTVIEW4-DUPW", "RTVIEW4-DUPF"} {
		if got := rt4Find(seen, mk); len(got) > 0 {
			t.Errorf("BREACH: HEAD's only d.md is withheld; the session sees %s in %v (manifest hidden: %v)", mk, got, m.Hidden)
		}
	}
}

// TestRTView4WithheldTextResurfaces (BREACH): a note in force (text A)
// is in the tree; a commit withholds it (the tree keeps A, the manifest
// hides it: held); a later remote commit brings a new text B in force
// under an entry the index does not show — the file's mode 100664 or
// "0100644", or its folder's mode "040000". The index judges B in force
// (or does not walk it): not hidden; the tree's writer finds the path
// not shown and keeps A. The text a curator withheld is back for every
// new session. Root cause: gate/viewfile/tree.go syncTree (a kept path
// is kept whenever the new entry is some file: sameKind; it relies on the
// manifest hiding it, which holds only while the path is judged hidden).
func TestRTView4WithheldTextResurfaces(t *testing.T) {
	a := "---\ntitle: Resurface\n---\nRTVIEW4-POISON text A\n"
	w := "---\ntitle: Resurface\nwithheld: {by: \"human:curator\", reason: poisoned}\n---\nRTVIEW4-POISON text A\n"
	b := "---\ntitle: Resurface\n---\nclean text B\n"
	for _, mode := range []string{"100664", "0100644", "dir-040000"} {
		t.Run(mode, func(t *testing.T) {
			v := vaulttest.New(t)
			commit := func(body, fileMode, dirMode string) {
				blob := rtGit(t, v, body, "hash-object", "-w", "--stdin")
				inner := rtRawTree(t, v, [3]string{fileMode, "r.md", blob})
				rt4CommitTop(t, v, "25-res", "40000", rtRawTree(t, v, [3]string{dirMode, "inner", inner}))
			}
			commit(a, "100644", "40000")
			rtWrite(t, v)
			commit(w, "100644", "40000")
			m, _ := rtWrite(t, v)
			if got := rt4Find(rt4Session(t, v, m, time.Now()), "RTVIEW4-POISON"); len(got) > 0 {
				t.Fatalf("the withheld note is shown at once: %v", got)
			}
			if mode == "dir-040000" {
				commit(b, "100644", "040000")
			} else {
				commit(b, mode, "40000")
			}
			m, _ = rtWrite(t, v)
			if got := rt4Find(rt4Session(t, v, m, time.Now()), "RTVIEW4-POISON"); len(got) > 0 {
				t.Errorf("BREACH: the withheld text comes back to new sessions once a later version is of an entry not shown (%s): %v", mode, got)
			}
		})
	}
}

// TestRTView4PageLinkSyntax (BREACH, pre-existing, pages not the gate's):
// a folder page a remote or a curator committed that lists a hidden note
// otherwise than the gate's `](name.md)` — a title attribute, a fragment,
// percent-encoding, a reference definition, an Obsidian wiki link, a
// sub-folder's or another folder's note — keeps the line in the tree
// (FilterPage matches `](name)`, `](./name)`, `](<name>)` of the page's
// own folder's names only), and the session, which trusts the tree's
// pages, shows it. Root cause: vault/view/pages.go FilterPage (exact
// link forms, own folder only) used by gate/viewfile/tree.go
// judged.content.
func TestRTView4PageLinkSyntax(t *testing.T) {
	v := vaulttest.New(t)
	hidden := "---\ntitle: Hidden\nwithheld: {reason: x}\n---\nh\n"
	lines := map[string]string{
		"title":     "- [RTVIEW4-LS-TITLE](h.md \"Hidden\")",
		"fragment":  "- [RTVIEW4-LS-FRAG](h.md#top)",
		"percent":   "- [RTVIEW4-LS-PCT](%68.md)",
		"reference": "- [RTVIEW4-LS-REF][r]\n\n[r]: h.md",
		"wiki":      "- [[h|RTVIEW4-LS-WIKI]]",
		"subfolder": "- [RTVIEW4-LS-SUB](sub/s.md)",
		"other":     "- [RTVIEW4-LS-OTHER](../other/o.md)",
		"multiline": "- [RTVIEW4-LS-MULTI\n  more](h.md)",
	}
	var page strings.Builder
	page.WriteString("# Index\n\n")
	for _, l := range lines {
		page.WriteString(l + "\n")
	}
	vaulttest.Commit(t, v, map[string]string{
		"20-domains/ls/h.md":     hidden,
		"20-domains/ls/sub/s.md": hidden,
		"20-domains/other/o.md":  hidden,
		"20-domains/ls/index.md": page.String(),
	})
	m, _ := rtWrite(t, v)
	seen := rt4Session(t, v, m, time.Now())
	idx := seen["20-domains/ls/index.md"]
	for name, l := range lines {
		mk := l[strings.Index(l, "RTVIEW4-"):]
		mk = mk[:strings.IndexAny(mk, "]|\n")]
		if strings.Contains(idx, mk) {
			t.Errorf("BREACH: a page lists a withheld note by a %s link: %q", name, mk)
		}
	}
}

// TestRTView4OldTreeVersion (held): a manifest whose tree line names
// another layout version (a tree written before TreeVersion 2, its pages
// not filtered) is not used: the next Write rebuilds the tree, pages
// filtered.
func TestRTView4OldTreeVersion(t *testing.T) {
	v := vaulttest.New(t)
	vaulttest.Commit(t, v, map[string]string{
		"20-domains/ov/w.md":     "---\ntitle: W\nwithheld: {reason: x}\n---\nw\n",
		"20-domains/ov/index.md": "# Index\n\n- [RTVIEW4-OLDV](w.md)\n",
	})
	_, head := rtWrite(t, v)
	// What a version-1 gate left: the page unfiltered, the tree line at 1.
	must(t, os.WriteFile(filepath.Join(view.TreeDir(v), "20-domains/ov/index.md"), []byte("# Index\n\n- [RTVIEW4-OLDV](w.md)\n"), 0o644))
	b, err := os.ReadFile(view.Path(v))
	must(t, err)
	must(t, os.WriteFile(view.Path(v), []byte(strings.Replace(string(b), "\t2 "+head.String(), "\t1 "+head.String(), 1)), 0o644))
	if m, err := view.Read(v, head.String()); err != nil || m.Tree != "" {
		t.Fatalf("a version-1 tree line is taken for a tree: %+v %v", m, err)
	}
	m, _ := rtWrite(t, v)
	if m.Tree != head.String() {
		t.Fatalf("no tree after the rewrite")
	}
	if got := rt4Find(rt4Session(t, v, m, time.Now()), "RTVIEW4-OLDV"); len(got) > 0 {
		t.Errorf("BREACH: a version-1 tree's unfiltered page is used: %v", got)
	}
}

// TestRTView4KeptPageNotRefiltered (BREACH, new with TreeVersion 2): a
// folder page shown at first (100644) lists a note that does not exist
// (deleted since, or not yet come: pages keep the lines of deleted
// notes); a remote commit changes the page's mode to 100664 (same blob:
// go-git sees no change, the index stops showing it — the tree keeps
// it); then the note comes back withheld. refreshPages re-filters only
// the pages the index shows, so the kept page still lists it; the note
// never reaches the tree, so the session makes no whiteout and filters
// no page for it (mounts/view.go LoadView trusts the tree's pages). The
// session reads a page listing a withheld note (its title). Root cause:
// gate/viewfile/tree.go refreshPages (`shown[...]` only: a kept page is
// never filtered again) with mounts/view.go LoadView (v.hide: only paths
// the tree holds).
func TestRTView4KeptPageNotRefiltered(t *testing.T) {
	v := vaulttest.New(t)
	page := rtGit(t, v, "# Index\n\n- [RTVIEW4-KEPTPAGE secret title](x.md)\n- [Other](o.md)\n", "hash-object", "-w", "--stdin")
	other := rtGit(t, v, "o\n", "hash-object", "-w", "--stdin")
	rt4CommitTop(t, v, "25-kp", "40000", rtRawTree(t, v, [3]string{"100644", "index.md", page}, [3]string{"100644", "o.md", other}))
	rtWrite(t, v)
	rt4CommitTop(t, v, "25-kp", "40000", rtRawTree(t, v, [3]string{"100664", "index.md", page}, [3]string{"100644", "o.md", other}))
	rtWrite(t, v)
	x := rtGit(t, v, "---\ntitle: RTVIEW4-KEPTPAGE secret title\nwithheld: {reason: poisoned}\n---\nx\n", "hash-object", "-w", "--stdin")
	rt4CommitTop(t, v, "25-kp", "40000", rtRawTree(t, v, [3]string{"100664", "index.md", page}, [3]string{"100644", "o.md", other}, [3]string{"100644", "x.md", x}))
	m, _ := rtWrite(t, v)
	if got := rt4Find(rt4Session(t, v, m, time.Now()), "RTVIEW4-KEPTPAGE"); len(got) > 0 {
		t.Errorf("BREACH: a page kept in the tree (no longer shown) lists a note withheld at HEAD, unfiltered: %v", got)
	}
}

// TestRTView4RootArchivePage (BREACH, pages not the gate's): the root's
// index.md rolled into index/000001.md (what AppendLine does for any
// folder) is not an archive page to the view (IsArchivePage wants two
// slashes), so its lines linking a hidden root note (`](../d.md)`) are
// never filtered. Root cause: vault/view/view.go IsArchivePage
// (`strings.Count(dir, "/") < 2`).
func TestRTView4RootArchivePage(t *testing.T) {
	v := vaulttest.New(t)
	vaulttest.Commit(t, v, map[string]string{
		"d.md":             "---\ntitle: D\nstatus: draft\n---\nd\n",
		"index.md":         "# Index\n\nOlder entries: [index/000001.md](index/000001.md)\n",
		"index/000001.md":  "# Index\n\n- [RTVIEW4-ROOTARCH](../d.md)\n",
		"20-domains/r2.md": "r\n",
	})
	m, _ := rtWrite(t, v)
	if got := rt4Find(rt4Session(t, v, m, time.Now()), "RTVIEW4-ROOTARCH"); len(got) > 0 {
		t.Errorf("BREACH: the root's archive page lists a hidden root note: %v", got)
	}
}

// TestRTView4BigPage (held): a folder page larger than
// view.MaxPageBytes that lists a withheld note is filtered in the tree
// (the gate filters any size); in the session it is not rewritten (the
// note is not in the tree) and shows filtered.
func TestRTView4BigPage(t *testing.T) {
	v := vaulttest.New(t)
	big := "# Index\n\n" + strings.Repeat("- [filler](o.md)\n", (view.MaxPageBytes/17)+1000) + "- [RTVIEW4-BIGPAGE](w.md)\n"
	vaulttest.Commit(t, v, map[string]string{
		"20-domains/bp/w.md":     "---\ntitle: W\nwithheld: {reason: x}\n---\nw\n",
		"20-domains/bp/o.md":     "o\n",
		"20-domains/bp/index.md": big,
	})
	m, _ := rtWrite(t, v)
	seen := rt4Session(t, v, m, time.Now())
	if len(seen["20-domains/bp/index.md"]) < view.MaxPageBytes {
		t.Fatalf("the big page is not in the tree")
	}
	if got := rt4Find(seen, "RTVIEW4-BIGPAGE"); len(got) > 0 {
		t.Errorf("BREACH: a big page lists a withheld note: %v", got)
	}
}
