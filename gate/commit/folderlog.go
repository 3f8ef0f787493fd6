package commit

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/record"
	"github.com/fedmem/fedmem/vault/repo"
)

// ChangeSet collects the files one commit writes, reading the current
// content of a path from earlier changes first, then from HEAD.
type ChangeSet struct {
	repo  *repo.Repo
	head  repo.Hash
	order []string
	files map[string][]byte
	// base: what get read of a path at head (nil: absent), so the scan
	// of what the commit adds does not read it again.
	base map[string][]byte
}

// NewChangeSet starts the files of one commit on head of r.
func NewChangeSet(r *repo.Repo, head repo.Hash) *ChangeSet {
	return &ChangeSet{repo: r, head: head, files: map[string][]byte{}, base: map[string][]byte{}}
}

// Get returns the whole file (never a prefix: a cut read written back
// loses lines), or nil when it is absent.
func (cs *ChangeSet) Get(p string) ([]byte, error) {
	if b, ok := cs.files[p]; ok {
		return b, nil
	}
	return cs.AtHead(p)
}

// AtHead returns path p's content at head (nil: absent).
func (cs *ChangeSet) AtHead(p string) ([]byte, error) {
	if b, ok := cs.base[p]; ok {
		return b, nil
	}
	b, err := cs.repo.WholeFileAt(cs.head, p)
	if err == nil {
		cs.base[p] = b
	}
	return b, err
}

// Set writes p as b in the commit.
func (cs *ChangeSet) Set(p string, b []byte) {
	if _, ok := cs.files[p]; !ok {
		cs.order = append(cs.order, p)
	}
	cs.files[p] = b
}

// List returns the commit's files in the order they were first set.
func (cs *ChangeSet) List() []repo.Change {
	out := make([]repo.Change, 0, len(cs.order))
	for _, p := range cs.order {
		out = append(out, repo.Change{Path: p, Content: cs.files[p]})
	}
	return out
}

// The headers of a folder's log.md and index.md.
const (
	LogHeader   = "# Log\n\nChanges to this folder, oldest first. Written by the fedmem gate.\n\n"
	IndexHeader = "# Index\n\nNotes in this folder. Written by the fedmem gate.\n\n"
)

// NotePromoted adds the folder's log.md line and index.md entry for a note
// promoted at dest, in the same commit.
func (cs *ChangeSet) NotePromoted(dest, title string, d *record.Decision, when time.Time) error {
	dir, base := path.Dir(dest), path.Base(dest)
	text := decide.Label(title)
	if text == "" {
		text = strings.TrimSuffix(base, ".md")
	}
	who := "the gate"
	if d.Reviewer != "" {
		who = "reviewer " + d.Reviewer
	}
	if err := cs.AppendLine(dir+"/log.md", LogHeader, fmt.Sprintf("- %s promoted [%s](%s) from session %s by %s (draft sha256 %.12s)\n",
		when.UTC().Format(time.RFC3339), text, base, d.Session, who, d.SHA256)); err != nil {
		return err
	}
	idx, err := cs.Get(dir + "/index.md")
	if err != nil {
		return err
	}
	if bytes.Contains(idx, []byte("]("+base+")")) {
		return nil
	}
	return cs.AppendLine(dir+"/index.md", IndexHeader, fmt.Sprintf("- [%s](%s)\n", text, base))
}

// NoteSuperseded logs a note deprecated by a newer one.
func (cs *ChangeSet) NoteSuperseded(old, by string, when time.Time) error {
	return cs.AppendLine(path.Dir(old)+"/log.md", LogHeader, fmt.Sprintf("- %s deprecated [%s](%s), superseded by /%s\n",
		when.UTC().Format(time.RFC3339), path.Base(old), path.Base(old), by))
}

// PageCap bounds a folder's log.md and index.md. Past it, the page's
// content moves whole to the next archive page (log/000001.md, …) and the
// page starts again with a link to it: every line is kept, and a promotion
// reads and writes at most one page, whatever the folder's history.
const PageCap = 256 << 10

// OlderPrefix starts the line that links a page to its previous archive.
const OlderPrefix = "Older entries: "

// AppendLine adds line to the page p (a folder's log.md or index.md),
// rolling the page into its archive folder first when it would pass
// PageCap. Other paths are appended to as they are.
func (cs *ChangeSet) AppendLine(p, header, line string) error {
	b, err := cs.Get(p)
	if err != nil {
		return err
	}
	if b == nil {
		b = []byte(header)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b[:len(b):len(b)], '\n')
	}
	kind := strings.TrimSuffix(path.Base(p), ".md")
	if (kind == "log" || kind == "index") && len(b)+len(line) > PageCap && len(b) > len(header) {
		n, err := cs.nextArchive(path.Dir(p), kind, b)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%s/%06d.md", kind, n)
		cs.Set(path.Dir(p)+"/"+name, relink(b, kind))
		b = []byte(header + OlderPrefix + "[" + name + "](" + name + ")\n\n")
	}
	cs.Set(p, pageTails.extend(p, b, line))
	return nil
}

// pageTails lets a page grow in place: appending a line to the newest
// version of a page the gate made writes it into spare room after that
// version (no copy of the page, no new page-sized buffer per promotion).
//
// Safe because every version handed out is a prefix buf[:n:n] of one
// buffer, n only grows, and bytes are written only at or after the
// furthest n handed out (hi): no version anyone holds (a blob of the
// group, HEAD's content, a dropped group's) ever changes. Appending to an
// older version (after a dropped group, or from another branch) finds
// hi beyond it and copies, as appending to any other content does.
var pageTails = &pageBufs{m: map[string]*pageBuf{}}

// pageBufs holds the newest buffer of each page path.
type pageBufs struct {
	sync.Mutex
	m map[string]*pageBuf
}

// pageBuf is one page's buffer and how far it is handed out.
type pageBuf struct {
	buf []byte
	hi  int
}

// extend returns b followed by line without changing b (or anything else
// handed out before): in place when b is the newest version of p's buffer
// and there is room, else in a new buffer with room to grow.
func (t *pageBufs) extend(p string, b []byte, line string) []byte {
	t.Lock()
	defer t.Unlock()
	pb := t.m[p]
	if pb != nil && len(b) > 0 && len(b) == pb.hi && &b[0] == &pb.buf[0] && pb.hi+len(line) <= cap(pb.buf) {
		n := pb.hi + len(line)
		pb.buf = pb.buf[:n]
		copy(pb.buf[pb.hi:], line)
		pb.hi = n
		return pb.buf[:n:n]
	}
	n := len(b) + len(line)
	room := max(n, min(2*n, PageCap+(64<<10)))
	buf := make([]byte, n, room)
	copy(buf, b)
	copy(buf[len(b):], line)
	if len(t.m) >= 1024 {
		t.m = map[string]*pageBuf{}
	}
	t.m[p] = &pageBuf{buf: buf, hi: n}
	return buf[:n:n]
}

// nextArchive is the number after the archive the page links to (1 for a
// page that links to none), skipping numbers already taken.
func (cs *ChangeSet) nextArchive(dir, kind string, page []byte) (int, error) {
	n := 1
	head := page
	if len(head) > 4096 {
		head = head[:4096]
	}
	for _, l := range strings.Split(string(head), "\n") {
		var k int
		if rest, ok := strings.CutPrefix(l, OlderPrefix+"["+kind+"/"); ok {
			if _, err := fmt.Sscanf(rest, "%06d.md]", &k); err == nil && k >= n {
				n = k + 1
			}
		}
	}
	for ; n < 1<<30; n++ {
		b, err := cs.Get(fmt.Sprintf("%s/%s/%06d.md", dir, kind, n))
		if err != nil {
			return 0, err
		}
		if b == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("%s/%s: no free archive number", dir, kind)
}

// mdLink matches a Markdown link target the gate wrote: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^()\s]*)\)`)

// relink rewrites a page's relative links for its new place one folder
// down: a note "x.md" becomes "../x.md", an archive "log/000002.md" becomes
// "000002.md"; absolute paths and URLs are kept.
func relink(b []byte, kind string) []byte {
	return mdLink.ReplaceAllFunc(b, func(m []byte) []byte {
		target := string(m[2 : len(m)-1])
		switch {
		case strings.HasPrefix(target, kind+"/"):
			target = strings.TrimPrefix(target, kind+"/")
		case target == "" || strings.Contains(target, ":") || strings.HasPrefix(target, "/") || strings.HasPrefix(target, "#"):
			return m
		default:
			target = "../" + target
		}
		return []byte("](" + target + ")")
	})
}
