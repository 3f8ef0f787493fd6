package decide

// The conflict index (issue 24 item 3): one index of the whole vault, every
// folder depth, of the notes that hold a name — in force, or withheld (a
// withheld note keeps its title and subject reserved: it comes back by
// reverify, and must not come back beside another note of that name). A
// name is a normalised title or `subject` (NormTitle); a title and a subject
// name the same thing, so each is looked up against both.
//
// The index follows HEAD by the difference of trees, like the folder index
// before it (evidence.go) but recursively: from the root tree it last
// indexed to the one asked for, a folder whose tree id did not change is
// skipped whole, a changed one is walked against its old content, and only
// the notes that came, left or changed are read (their frontmatter, cached
// by blob id). A promotion costs the trees along the changed paths, never a
// scan of the vault. The first request builds it whole (once per process
// and repository).

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/fedmem/fedmem/gate/decide/shape"
	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/repo"
	"github.com/fedmem/fedmem/vault/view"
)

// namedNote is one note that holds a name.
type namedNote struct {
	Path      string
	Withheld  bool // reserved, not in force
	BySubject bool // the name is its subject (else its title)
	// Variant: the note's name has the same subject key (nameKeyOf: the
	// same words in another order, with other function words, in
	// look-alike letters), not the same normalised name.
	Variant bool
}

// vaultIndex is the conflict index of one repository at one root tree.
type vaultIndex struct {
	root repo.Hash
	// raws: the content of every indexed folder's tree ("" is the root),
	// the old side of the next difference.
	raws map[string][]byte
	// unsorted: indexed folders whose tree is not in Git's order.
	unsorted map[string]bool
	notes    map[string]indexedName
	titles   map[string][]string
	subjects map[string][]string
	// keys: the subject key (nameKeyOf) of every name (title, alias,
	// subject) → the paths holding one with that key.
	keys map[string][]string
	// words: each word of the title, subject and aliases of a note in
	// force (shape.NameKey, function words and numbers left out) → the paths
	// holding it (offsubject.go, rule subject-other-note).
	words map[string][]string
	// added counts the notes put in since the index was made (what a move
	// cost: TestConflictIndexMovesByDifference).
	added int
	// view: the notes, at every depth, that the sandbox's in-force view
	// hides or hides once stale (viewmanifest.go).
	view map[string]viewNote
	// shown: the files the in-force view shows (an allow-list: a regular
	// file of mode 100644 or 100755 in a folder of mode 40000 the index
	// walks, judged in force; nothing the index skips), which the gate's
	// view tree holds (gate/viewfile).
	shown map[string]ShownFile
}

// ShownFile is a file the in-force view shows: its blob and mode.
type ShownFile struct {
	Blob repo.Hash
	Mode repo.EntryMode
}

type indexedName struct {
	title, subject string
	withheld       bool
	aliases        []string // held like titles
	blob           repo.Hash
}

// vaultIndexes holds one vaultIndex per repository (by its .git path).
var vaultIndexes = struct {
	sync.Mutex
	m map[string]*vaultIndex
}{m: map[string]*vaultIndex{}}

// MaxVaultIndexes bounds the repositories indexed at once (tests open many).
const MaxVaultIndexes = 16

// named returns the notes (in force or withheld) anywhere in the vault at
// hv's commit whose title or subject normalises to k: those with that title
// first, then those with that subject, each in path order.
func (hv *HeadView) named(k string) ([]namedNote, error) {
	if hv.root == nil || k == "" {
		return nil, nil
	}
	vaultIndexes.Lock()
	defer vaultIndexes.Unlock()
	idx, err := hv.vaultIndexLocked()
	if err != nil {
		return nil, err
	}
	t := slices.Clone(idx.titles[k])
	s := slices.Clone(idx.subjects[k])
	slices.Sort(t)
	slices.Sort(s)
	var out []namedNote
	seen := map[string]bool{}
	for _, p := range t {
		seen[p] = true
		out = append(out, namedNote{Path: p, Withheld: idx.notes[p].withheld})
	}
	for _, p := range s {
		seen[p] = true
		out = append(out, namedNote{Path: p, Withheld: idx.notes[p].withheld, BySubject: true})
	}
	v := slices.Clone(idx.keys[nameKeyOf(k)])
	slices.Sort(v)
	for _, p := range slices.Compact(v) {
		if !seen[p] {
			out = append(out, namedNote{Path: p, Withheld: idx.notes[p].withheld, Variant: true})
		}
	}
	return out, nil
}

// vaultIndexLocked returns the index at hv's root tree, moving it there
// (vaultIndexes is locked by the caller).
func (hv *HeadView) vaultIndexLocked() (*vaultIndex, error) {
	key := hv.r.GitDir()
	idx := vaultIndexes.m[key]
	if idx == nil || idx.root != hv.rootHash {
		if idx == nil {
			idx = newVaultIndex()
		}
		if err := hv.moveVaultIndex(idx); err != nil {
			delete(vaultIndexes.m, key) // half moved
			return nil, err
		}
		if _, ok := vaultIndexes.m[key]; !ok && len(vaultIndexes.m) >= MaxVaultIndexes {
			vaultIndexes.m = map[string]*vaultIndex{}
		}
		vaultIndexes.m[key] = idx
	}
	return idx, nil
}

// nameWordNotes returns the notes in force (path → blob) one of whose
// names holds one of the word keys ws (at most max notes, in path order).
func (hv *HeadView) nameWordNotes(ws []string, max int) (map[string]repo.Hash, error) {
	if hv.root == nil || len(ws) == 0 {
		return nil, nil
	}
	vaultIndexes.Lock()
	defer vaultIndexes.Unlock()
	idx, err := hv.vaultIndexLocked()
	if err != nil {
		return nil, err
	}
	var ps []string
	for _, w := range ws {
		ps = append(ps, idx.words[w]...)
	}
	slices.Sort(ps)
	out := map[string]repo.Hash{}
	for _, p := range slices.Compact(ps) {
		if len(out) == max {
			break
		}
		out[p] = idx.notes[p].blob
	}
	return out, nil
}

// nameKeyOf is the subject key of a normalised name (NormTitle): its
// words with look-alike letters folded, without articles, "of" and "and",
// sorted and without repeats — "Suite of CI tests", "Test suite, CI" and
// "CI test suite" have one key. A name with a number keeps its order
// ("Alpha 1 0" is not "Alpha 0 1"); other prepositions are kept ("From
// another uid" is not "Another uid"). "" when no word is left.
func nameKeyOf(k string) string {
	var ws []string
	numbered := false
	for _, w := range strings.Fields(k) {
		w = shape.FoldConfusables(w)
		if keyDropped[w] {
			continue
		}
		numbered = numbered || strings.ContainsAny(w, "0123456789")
		ws = append(ws, w)
	}
	if !numbered {
		slices.Sort(ws)
		ws = slices.Compact(ws)
	}
	return strings.Join(ws, " ")
}

// keyDropped: the words a name's key leaves out (they join its words, they
// name nothing).
var keyDropped = shape.WordSet("a an the of and")

func (idx *vaultIndex) addKey(name, p string) {
	if k := nameKeyOf(name); k != "" && !endsWith(idx.keys[k], p) {
		idx.keys[k] = append(idx.keys[k], p)
	}
}

// endsWith says whether paths ends with p: a note's names are put in one
// after another (addEntry drops a note before it puts it in again), so a
// path already in a list is its last (slices.Contains made indexing the
// 100k-note vault quadratic: "bench" in every title, 2 min 20 s).
func endsWith(paths []string, p string) bool {
	return len(paths) > 0 && paths[len(paths)-1] == p
}

func (idx *vaultIndex) dropKey(name, p string) {
	k := nameKeyOf(name)
	if idx.keys[k] = dropPath(idx.keys[k], p); len(idx.keys[k]) == 0 {
		delete(idx.keys, k)
	}
}

func newVaultIndex() *vaultIndex {
	return &vaultIndex{raws: map[string][]byte{}, unsorted: map[string]bool{}, notes: map[string]indexedName{}, titles: map[string][]string{}, subjects: map[string][]string{}, keys: map[string][]string{}, words: map[string][]string{}, view: map[string]viewNote{}, shown: map[string]ShownFile{}}
}

// moveVaultIndex moves idx to hv's root tree.
func (hv *HeadView) moveVaultIndex(idx *vaultIndex) error {
	raw, err := hv.r.RawTree(hv.rootHash)
	if err != nil {
		return fmt.Errorf("conflict index: read root tree: %w", err)
	}
	if err := hv.diffDir(idx, "", raw); err != nil {
		return err
	}
	idx.root = hv.rootHash
	return nil
}

// indexedDir reports whether the folder at p (vault-relative) holds notes
// the index covers: not hidden, not the inbox, not the archive.
func indexedDir(p string) bool {
	top, _, _ := strings.Cut(p, "/")
	if top == vault.InboxDir || top == "99-archive" {
		return false
	}
	return !strings.HasPrefix(path.Base(p), ".")
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// diffDir moves the index of folder dir (its old content in idx.raws) to
// the tree content raw, recursing into the sub-folders whose tree changed.
func (hv *HeadView) diffDir(idx *vaultIndex, dir string, raw []byte) error {
	old, had := idx.raws[dir]
	if had && bytes.Equal(old, raw) {
		return nil
	}
	sorted := repo.SortedTree(raw)
	if had && (idx.unsorted[dir] || !sorted) {
		// Not in Git's order (a tree Git itself would refuse): no walk in
		// step; drop the folder and index it anew.
		if err := hv.dropDir(idx, dir); err != nil {
			return err
		}
		old, had = nil, false
	}
	o, n := &repo.TreeCursor{Raw: old}, &repo.TreeCursor{Raw: raw}
	bad := func() error { return fmt.Errorf("conflict index: folder %q: tree is malformed", dir) }
	if !o.Next() || !n.Next() {
		return bad()
	}
	for o.OK || n.OK {
		c := 0
		switch {
		case !o.OK:
			c = 1
		case !n.OK:
			c = -1
		case !had:
			c = 1
		default:
			c = repo.CompareKeys(o.Name, o.Dir, n.Name, n.Dir)
		}
		same := c == 0 && bytes.Equal(o.All, n.All)
		// A sub-folder whose tree changed is walked against its old
		// content (addEntry → diffDir, the old side still in idx.raws),
		// not dropped and indexed anew: a promotion into a folder of 20k
		// notes read all of them again, 50 ms of each review show and
		// approval on the 100k-note vault (TestConflictIndexMovesByDifference).
		walk := c == 0 && !same && o.Dir && n.Dir && string(o.Mode) == "40000" && string(n.Mode) == "40000" && indexedDir(joinPath(dir, string(n.Name)))
		if (c < 0 || c == 0 && !same && !walk) && o.OK {
			p := joinPath(dir, string(o.Name))
			if o.Dir {
				if err := hv.dropDir(idx, p); err != nil {
					return err
				}
			} else {
				idx.dropNote(p)
			}
		}
		if (c > 0 || c == 0 && !same) && n.OK {
			if err := hv.addEntry(idx, dir, n); err != nil {
				return err
			}
		}
		if c <= 0 && o.OK && !o.Next() || c >= 0 && n.OK && !n.Next() {
			return bad()
		}
	}
	idx.raws[dir] = raw
	if sorted {
		delete(idx.unsorted, dir)
	} else {
		idx.unsorted[dir] = true
	}
	return nil
}

// addEntry indexes the entry at c (in folder dir): a sub-folder is walked,
// a note in force or withheld with a title or subject is put in.
func (hv *HeadView) addEntry(idx *vaultIndex, dir string, c *repo.TreeCursor) error {
	name := string(c.Name)
	p := joinPath(dir, name)
	var id repo.Hash
	copy(id[:], c.All[len(c.All)-20:])
	if strings.HasPrefix(name, ".") {
		if view.Judged(p) {
			idx.view[p] = viewNote{why: view.DotWhy} // hidden whole by the sandbox's view
		}
		return nil
	}
	if c.Dir {
		if !indexedDir(p) || string(c.Mode) != "40000" {
			return nil
		}
		raw, err := hv.r.RawTree(id)
		if err != nil {
			return fmt.Errorf("conflict index: read folder %s: %w", p, err)
		}
		return hv.diffDir(idx, p, raw)
	}
	if string(c.Mode) == "160000" {
		if view.Judged(p) {
			idx.view[p] = viewNote{why: view.SubmoduleWhy} // its files are no note of this vault's
		}
		return nil
	}
	mdNote := strings.HasSuffix(name, ".md") && name != "index.md" && name != "log.md" && !view.IsArchivePage(p)
	judged := view.Judged(p) // the sandbox's view judges every file, not only notes
	if !mdNote && !judged {
		return nil
	}
	m, err := repo.ParseMode(string(c.Mode))
	if err != nil || !m.IsFile() || m == repo.ModeSymlink {
		return nil
	}
	f, err := hv.Facts(id)
	if err != nil {
		return err
	}
	idx.dropNote(p) // never in twice (endsWith)
	if judged && (f.Hidden != "" || !f.StaleAfter.IsZero()) {
		idx.view[p] = viewNote{f.Hidden, f.StaleAfter}
	}
	if judged && f.Hidden == "" && (string(c.Mode) == "100644" || string(c.Mode) == "100755") {
		idx.shown[p] = ShownFile{id, m}
	}
	if !mdNote || dir == "" {
		return nil // the root's notes hold no name (the contract, the README)
	}
	if !(f.InForce || f.Withheld) {
		return nil
	}
	idx.added++
	// A note without a title is named by its file name (what the vault
	// shows, what the source rule reads): "deploy-freeze.md" holds the
	// name "Deploy freeze".
	title := f.Title
	if title == "" {
		title = NormTitle(strings.TrimSuffix(name, ".md"))
	}
	in := indexedName{title, f.Subject, f.Withheld && !f.InForce, nil, id}
	for _, a := range f.Aliases {
		if a != title && !slices.Contains(in.aliases, a) {
			in.aliases = append(in.aliases, a)
		}
	}
	idx.notes[p] = in
	if in.title != "" {
		idx.titles[in.title] = append(idx.titles[in.title], p)
	}
	for _, a := range in.aliases {
		idx.titles[a] = append(idx.titles[a], p)
	}
	if in.subject != "" {
		idx.subjects[in.subject] = append(idx.subjects[in.subject], p)
	}
	for _, n := range append([]string{in.title, in.subject}, in.aliases...) {
		idx.addKey(n, p)
	}
	if !in.withheld {
		for _, w := range in.nameWordKeys() {
			if !endsWith(idx.words[w], p) {
				idx.words[w] = append(idx.words[w], p)
			}
		}
	}
	return nil
}

// nameWordKeys are the words of a note's names the words index holds.
func (in indexedName) nameWordKeys() []string {
	var out []string
	for _, n := range append([]string{in.title, in.subject}, in.aliases...) {
		for _, w := range nameWords(n) {
			if k := shape.NameKey(w); !shape.FunctionWords[k] && strings.Trim(k, "0123456789") != "" && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

func (idx *vaultIndex) dropNote(p string) {
	delete(idx.view, p)
	delete(idx.shown, p)
	in, ok := idx.notes[p]
	if !ok {
		return
	}
	delete(idx.notes, p)
	for _, w := range in.nameWordKeys() {
		if idx.words[w] = dropPath(idx.words[w], p); len(idx.words[w]) == 0 {
			delete(idx.words, w)
		}
	}
	for _, n := range append([]string{in.title, in.subject}, in.aliases...) {
		idx.dropKey(n, p)
	}
	for _, t := range append([]string{in.title}, in.aliases...) {
		if idx.titles[t] = dropPath(idx.titles[t], p); len(idx.titles[t]) == 0 {
			delete(idx.titles, t)
		}
	}
	if idx.subjects[in.subject] = dropPath(idx.subjects[in.subject], p); len(idx.subjects[in.subject]) == 0 {
		delete(idx.subjects, in.subject)
	}
}

// dropDir takes folder dir and everything under it out of the index.
func (hv *HeadView) dropDir(idx *vaultIndex, dir string) error {
	// Only a dot folder's own entry (hidden whole) goes: a file of the
	// same name may have just been put in (Git's order puts "n.md" before
	// the folder "n.md/"), and deleting its entry lost that file's
	// judgement — a withheld note that replaced a folder of its name was
	// in force in the manifest (TestViewTreeFollowsCommits, seed
	// 1796419316272898810).
	if v, ok := idx.view[dir]; ok && v.why == view.DotWhy {
		delete(idx.view, dir)
	}
	raw, ok := idx.raws[dir]
	if !ok {
		return nil // never indexed (skipped folder)
	}
	c := &repo.TreeCursor{Raw: raw}
	for {
		if !c.Next() {
			return fmt.Errorf("conflict index: folder %q: indexed tree is malformed", dir)
		}
		if !c.OK {
			break
		}
		p := joinPath(dir, string(c.Name))
		if c.Dir {
			if err := hv.dropDir(idx, p); err != nil {
				return err
			}
		} else {
			idx.dropNote(p)
		}
	}
	delete(idx.raws, dir)
	delete(idx.unsorted, dir)
	return nil
}
