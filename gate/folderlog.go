package gate

import (
	"fmt"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/fedmem/fedmem/gate/validate"
)

// changeSet collects the files one commit writes, reading the current
// content of a path from earlier changes first, then from HEAD.
type changeSet struct {
	g     *Gate
	head  plumbing.Hash
	order []string
	files map[string][]byte
}

func (g *Gate) newChangeSet(head plumbing.Hash) *changeSet {
	return &changeSet{g: g, head: head, files: map[string][]byte{}}
}

func (cs *changeSet) get(p string) ([]byte, error) {
	if b, ok := cs.files[p]; ok {
		return b, nil
	}
	return cs.g.repo.fileAt(cs.head, p)
}

func (cs *changeSet) set(p string, b []byte) {
	if _, ok := cs.files[p]; !ok {
		cs.order = append(cs.order, p)
	}
	cs.files[p] = b
}

func (cs *changeSet) list() []change {
	out := make([]change, 0, len(cs.order))
	for _, p := range cs.order {
		out = append(out, change{p, cs.files[p]})
	}
	return out
}

// label makes display text safe inside a Markdown link in index/log files:
// one line, no link or emphasis syntax, at most 100 bytes.
func label(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return ' '
		case strings.ContainsRune("[]()<>`*_|\\!#", r):
			return ' '
		}
		if _, bad := validate.Invisible(r); bad {
			return -1
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 100 {
		s = s[:100]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}

const (
	logHeader   = "# Log\n\nChanges to this folder, oldest first. Written by the fedmem gate.\n\n"
	indexHeader = "# Index\n\nNotes in this folder. Written by the fedmem gate.\n\n"
)

// notePromoted adds the folder's log.md line and index.md entry for a note
// promoted at dest, in the same commit.
func (cs *changeSet) notePromoted(dest, title string, d *Decision, when time.Time) error {
	dir, base := path.Dir(dest), path.Base(dest)
	text := label(title)
	if text == "" {
		text = strings.TrimSuffix(base, ".md")
	}
	who := "the gate"
	if d.Reviewer != "" {
		who = "reviewer " + d.Reviewer
	}
	if err := cs.appendLine(dir+"/log.md", logHeader, fmt.Sprintf("- %s promoted [%s](%s) from session %s by %s (draft sha256 %.12s)\n",
		when.UTC().Format(time.RFC3339), text, base, d.Session, who, d.SHA256)); err != nil {
		return err
	}
	idx, err := cs.get(dir + "/index.md")
	if err != nil {
		return err
	}
	if strings.Contains(string(idx), "]("+base+")") {
		return nil
	}
	return cs.appendLine(dir+"/index.md", indexHeader, fmt.Sprintf("- [%s](%s)\n", text, base))
}

// noteSuperseded logs a note deprecated by a newer one.
func (cs *changeSet) noteSuperseded(old, by string, when time.Time) error {
	return cs.appendLine(path.Dir(old)+"/log.md", logHeader, fmt.Sprintf("- %s deprecated [%s](%s), superseded by /%s\n",
		when.UTC().Format(time.RFC3339), path.Base(old), path.Base(old), by))
}

func (cs *changeSet) appendLine(p, header, line string) error {
	b, err := cs.get(p)
	if err != nil {
		return err
	}
	if b == nil {
		b = []byte(header)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	cs.set(p, append(append([]byte{}, b...), line...))
	return nil
}
