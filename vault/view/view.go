// Package view says which of a vault's notes are in force, for the
// sandbox's `vault.view: in-force` (issue 21 item 3): a note withheld,
// deprecated, superseded, still a draft or past its `stale_after` does not
// exist inside the sandbox (its path is absent, not empty), the folder
// pages (index.md, log.md and their archives) list only what is shown, and
// the vault's history (.git) and its archive (99-archive/) are absent.
//
// The gate, which reads every note's frontmatter anyway, writes the set of
// notes not in force after each of its passes into the vault's .git as a
// Manifest naming the commit it was made for; the launcher reads it (no
// scan of the vault at start-up) when it names the vault's HEAD, and scans
// the work tree itself when it does not (Scan: slower, same answer). The
// judgement of one note is Judge, used by both: they cannot disagree on
// what is in force.
//
// The package links no Git library (the launcher uses it) and no
// sandbox code (the gate does).
package view

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/note"
	"go.yaml.in/yaml/v3"
)

// Modes of a profile's vault.view.
const (
	// All shows the whole vault (read-only), .git included.
	All = "all"
	// InForce shows only the notes in force.
	InForce = "in-force"
)

// ManifestName is the manifest's file name in the vault's .git.
const ManifestName = "fedmem-view"

// ArchiveDir is the vault's archive of retired notes: never in force.
const ArchiveDir = "99-archive"

// Entry is one path the view hides and why.
type Entry struct {
	Path string `json:"path"` // vault-relative, slash-separated
	Why  string `json:"why"`
}

// Stale is a note in force until After.
type Stale struct {
	Path  string    `json:"path"`
	After time.Time `json:"after"`
}

// Manifest is the notes not in force at one commit.
type Manifest struct {
	Version int    `json:"version"`
	Commit  string `json:"commit"`
	// Hidden are the notes not in force, in path order.
	Hidden []Entry `json:"hidden"`
	// Stale are the notes in force that go stale at a time (hidden from
	// sessions that start after it), in path order.
	Stale []Stale `json:"stale,omitempty"`
	// Tree is the commit the gate's view tree (TreeDir) holds the notes
	// of, "" when it holds none the launcher may use: the tree, not the
	// vault's work tree, is what a session under the view is shown.
	Tree string `json:"tree,omitempty"`
}

// TreeName is the gate's view tree's folder in the vault's .git.
const TreeName = "fedmem-view-tree"

// TreeVersion is the layout of the view tree (TreeDir) this package
// writes: a tree of another version is rebuilt, never used. 2: the
// folder pages in the tree list no note hidden at its commit (a session
// then hides only what the tree still holds).
const TreeVersion = 2

// TreeDir is where vaultDir's view tree lives: a copy, written by the
// gate from the commit's objects, of every file of the vault that was in
// force when the gate judged it (the sandbox's view is an overlay over
// it, not over the work tree: a file the work tree holds but no commit
// the gate judged — untracked, edited in place, arrived since — is not
// in it).
func TreeDir(vaultDir string) string { return filepath.Join(vaultDir, ".git", TreeName) }

// Version is the manifest format this package writes and reads.
const Version = 2

// maxJudgeBytes is how much of a note Judge needs: its frontmatter.
const maxJudgeBytes = note.MaxFrontmatterBytes + 1024

// MaxManifestBytes bounds what Read accepts.
const MaxManifestBytes = 64 << 20

// Withheld is the frontmatter key the gate and reviewers set on a
// withheld note (gate/decide.WithheldKey).
const Withheld = "withheld"

// Judge says whether the note with content b is in force: why is "" when
// it is (possibly until stale, not zero); otherwise it says why not.
func Judge(b []byte) (why string, stale time.Time) {
	n, findings := note.Parse(b)
	return JudgeParsed(b, n, findings)
}

// JudgeParsed is Judge of note.Parse's result. A file that opens a
// frontmatter (its first line is `---`) the parser cannot read — too
// large, never closed, not YAML, past the depth limit — is not in force:
// a judge that cannot read a `withheld:` must not show the note (the view
// fails closed). A file with no frontmatter has no status: in force, as
// OKF has it.
func JudgeParsed(b []byte, n *note.Note, findings []note.Finding) (why string, stale time.Time) {
	if n == nil {
		for _, f := range findings {
			if f.Rule == "frontmatter-open" && !looksOpened(b) {
				return "", time.Time{} // no frontmatter at all
			}
		}
		rule := "unreadable"
		if len(findings) > 0 {
			rule = findings[0].Rule
		}
		return "its frontmatter cannot be read (" + rule + "): what it says of itself is unknown", time.Time{}
	}
	return JudgeNote(n)
}

// looksOpened says whether b's first line is `---` give or take what other
// Markdown tools forgive (trailing blanks, CR line ends, a BOM): such a
// file has a frontmatter for them, which fedmem's grammar refuses — not
// a file without one.
func looksOpened(b []byte) bool {
	if bytes.HasPrefix(b, []byte("\xff\xfe")) || bytes.HasPrefix(b, []byte("\xfe\xff")) {
		return true // UTF-16 (or UTF-32) text: other tools may read a frontmatter in it
	}
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	first, _, _ := bytes.Cut(b, []byte("\n"))
	return string(bytes.TrimRight(first, " \t\r")) == note.Delimiter
}

// JudgeNote is Judge of a parsed note. Keys are compared folded
// (note.FoldKey: `Status:` and `ｓｔａｔｕｓ:` are `status:`), every
// occurrence counts, and a frontmatter that merges or aliases YAML nodes
// (`<<:`, `*anchor`) is not judged in force: what it says is not what
// its keys show.
func JudgeNote(n *note.Note) (why string, stale time.Time) {
	if n == nil || n.Front == nil {
		return "", time.Time{}
	}
	c := n.Front.Content
	for i := 0; i+1 < len(c); i += 2 {
		k, v := c[i], c[i+1]
		if k.Value == "<<" || k.Kind == yaml.AliasNode || v.Kind == yaml.AliasNode {
			return "its frontmatter merges or aliases YAML nodes: what it says of itself is not judged", time.Time{}
		}
		switch note.FoldKey(k.Value) {
		case Withheld:
			return "withheld", time.Time{}
		case "status":
			if v.Kind != yaml.ScalarNode || v.Value != note.StatusStable {
				return "status " + quote(v.Value) + " (only stable notes are in force)", time.Time{}
			}
		case "superseded_by":
			return "superseded by " + quote(v.Value), time.Time{}
		case "stale_after":
			t, ok := time.Time{}, false
			if v.Kind == yaml.ScalarNode {
				if norm, nok := note.NormalizeTime(v.Value); nok {
					t, ok = parseTime(norm)
				}
			}
			if !ok {
				return "stale_after " + quote(v.Value) + " cannot be read as a time: when it goes stale is unknown", time.Time{}
			}
			if stale.IsZero() || t.Before(stale) {
				stale = t
			}
		}
	}
	return "", stale
}

func parseTime(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// Judged reports whether the view judges the file at the vault-relative
// path p by its frontmatter: any regular file outside the inbox and the
// archive, folder pages too (the gate's have none; a note a human named
// index.md may say withheld), (a note is a `.md`
// file, but a `.markdown`, `.MD` or `.txt` file with a `withheld:` is
// hidden all the same). Paths with a dot entry are hidden whole (DotWhy).
func Judged(p string) bool {
	top, _, _ := strings.Cut(p, "/")
	return top != vault.InboxDir && top != ArchiveDir
}

// IsNote reports whether p is a note: a judged `.md` file with no dot
// entry on its path.
func IsNote(p string) bool {
	if !strings.HasSuffix(p, ".md") || !Judged(p) || IsPage(p) {
		return false
	}
	for _, part := range strings.Split(p, "/") {
		if strings.HasPrefix(part, ".") {
			return false
		}
	}
	return true
}

// KeptWhy is why the gate's view tree still holds a path HEAD does not
// show (a note once in force, hidden since: its text in force stays for
// the sessions running; the next ones do not see it).
const KeptWhy = "kept in the gate's view tree for the sessions that saw it: not shown at this commit"

// DotWhy is why a dot entry (a file or folder whose name starts with a
// dot, at any depth) is hidden: no note lives there (an editor's or a
// tool's state, the vault's .gitignore), and the gate does not read it.
const DotWhy = "a dot entry is not a note"

// SubmoduleWhy is why a submodule (a folder that is another repository)
// is hidden whole: its files are not this vault's, and no gate judged
// them.
const SubmoduleWhy = "a submodule: its files are not this vault's notes"

// IsPage reports whether p is a folder page the gate writes: a folder's
// index.md or log.md, or one of their archive pages.
func IsPage(p string) bool {
	name := path.Base(p)
	return name == "index.md" || name == "log.md" || IsArchivePage(p)
}

// IsArchivePage reports whether p is an archive page the gate wrote when a
// folder's log.md or index.md filled up (<folder>/log/000001.md,
// <folder>/index/000002.md; gate/commit's AppendLine): gate pages, not
// notes.
func IsArchivePage(p string) bool {
	dir, name := path.Split(p)
	kind := path.Base(strings.TrimSuffix(dir, "/"))
	if (kind != "log" && kind != "index") || strings.Count(dir, "/") < 1 {
		return false
	}
	num, ok := strings.CutSuffix(name, ".md")
	if !ok || len(num) != 6 {
		return false
	}
	for _, c := range num {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// At returns what a session starting at now does not see: the manifest's
// hidden notes, those gone stale by now, and the vault's history and
// archive (when fixed says they exist), in path order.
func (m *Manifest) At(now time.Time, fixed []Entry) []Entry {
	out := append([]Entry{}, fixed...)
	out = append(out, m.Hidden...)
	for _, s := range m.Stale {
		if !now.Before(s.After) {
			out = append(out, Entry{Path: s.Path, Why: "stale since " + s.After.UTC().Format(time.RFC3339)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	// One entry a path (the first: a fixed one's reason), and none below
	// a hidden folder (its whiteout hides them).
	kept := out[:0]
	for _, e := range out {
		if n := len(kept); n > 0 && (kept[n-1].Path == e.Path || strings.HasPrefix(e.Path, kept[n-1].Path+"/")) {
			continue
		}
		kept = append(kept, e)
	}
	return kept
}

// Fixed are the paths of vaultDir a view always hides, those that exist:
// .git (the history holds every version of every note, withheld ones too)
// and the archive.
func Fixed(vaultDir string) []Entry {
	var out []Entry
	if _, err := os.Lstat(filepath.Join(vaultDir, ".git")); err == nil {
		out = append(out, Entry{Path: ".git", Why: "the vault's history holds every version of every note, those not in force too"})
	}
	if fi, err := os.Lstat(filepath.Join(vaultDir, ArchiveDir)); err == nil && fi.IsDir() {
		out = append(out, Entry{Path: ArchiveDir, Why: "retired notes are not in force"})
	}
	return out
}

// Path is where vaultDir's manifest lives.
func Path(vaultDir string) string { return filepath.Join(vaultDir, ".git", ManifestName) }

// ErrStale says the manifest is missing or made for another commit.
var ErrStale = errors.New("the gate's view manifest is missing or not at the vault's HEAD")

// Read returns vaultDir's manifest when it was made for commit head;
// ErrStale (wrapped) when it is missing or for another commit, another
// error when it cannot be read or parsed.
func Read(vaultDir, head string) (*Manifest, error) {
	m, err := Load(vaultDir)
	if err != nil {
		return nil, err
	}
	if m.Commit != head || head == "" {
		return nil, fmt.Errorf("%w (%s: made at %.12s, HEAD is %.12s)", ErrStale, Path(vaultDir), m.Commit, head)
	}
	return m, nil
}

// Load returns vaultDir's manifest whatever commit it was made at
// (ErrStale, wrapped, when there is none).
func Load(vaultDir string) (*Manifest, error) {
	f, err := os.Open(Path(vaultDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w (%s)", ErrStale, Path(vaultDir))
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Path(vaultDir), err)
	}
	if len(b) > MaxManifestBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", Path(vaultDir), MaxManifestBytes)
	}
	m, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Path(vaultDir), err)
	}
	return m, nil
}

// The manifest is text, one entry a line (a JSON decoder took 4.5 ms
// for 1000 hidden notes, a tenth of a session's start-up):
//
//	fedmem-view 1 COMMIT
//	h PATH<TAB>WHY        a hidden note
//	s PATH<TAB>SECONDS    a note in force until then (Unix time: any year)
//	t fedmem-view-tree<TAB>VERSION COMMIT  the view tree holds COMMIT's notes
//
// A PATH holding a tab, a newline, a backslash or starting with a quote
// is written Go-quoted; WHY has its control characters replaced.
const magic = "fedmem-view"

// Encode is the manifest's bytes as Write stores them.
func (m *Manifest) Encode() ([]byte, error) {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%s %d %s\n", magic, Version, m.Commit)
	for _, e := range m.Hidden {
		buf.WriteString("h " + encodePath(e.Path) + "\t" + oneLine(e.Why) + "\n")
	}
	for _, st := range m.Stale {
		buf.WriteString("s " + encodePath(st.Path) + "\t" + strconv.FormatInt(st.After.Unix(), 10) + "\n")
	}
	if m.Tree != "" {
		buf.WriteString("t " + TreeName + "\t" + strconv.Itoa(TreeVersion) + " " + m.Tree + "\n")
	}
	return buf.Bytes(), nil
}

func encodePath(p string) string {
	if strings.ContainsAny(p, "\t\n\r\\") || strings.HasPrefix(p, `"`) || !utf8.ValidString(p) {
		return strconv.Quote(p)
	}
	return p
}

// EncodePath is a vault path as a plan's JSON carries it (Mount.Hide):
// as it is, or Go-quoted when it holds a byte JSON would change (not
// UTF-8), a tab, a newline, a backslash or starts with a quote.
func EncodePath(p string) string { return encodePath(p) }

// DecodePath is EncodePath's inverse.
func DecodePath(p string) (string, error) {
	if strings.HasPrefix(p, `"`) {
		return strconv.Unquote(p)
	}
	return p, nil
}

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// Decode parses a manifest; every path must be a clean vault path.
func Decode(b []byte) (*Manifest, error) {
	first, rest, _ := bytes.Cut(b, []byte("\n"))
	var m Manifest
	var mg string
	if n, err := fmt.Sscanf(string(first), "%s %d %s", &mg, &m.Version, &m.Commit); n != 3 || err != nil || mg != magic {
		return nil, fmt.Errorf("line 1: not a view manifest (%q)", first)
	}
	if m.Version != Version {
		return nil, fmt.Errorf("%w (version %d, want %d)", ErrStale, m.Version, Version)
	}
	m.Hidden = []Entry{}
	for ln := 2; len(rest) > 0; ln++ {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		if len(line) < 3 || line[1] != ' ' {
			return nil, fmt.Errorf("line %d: malformed", ln)
		}
		p, val, ok := strings.Cut(string(line[2:]), "\t")
		if !ok {
			return nil, fmt.Errorf("line %d: no tab", ln)
		}
		if strings.HasPrefix(p, `"`) {
			var err error
			if p, err = strconv.Unquote(p); err != nil {
				return nil, fmt.Errorf("line %d: path: %w", ln, err)
			}
		}
		if !CleanRel(p) {
			return nil, fmt.Errorf("line %d: path %q is not a clean vault path", ln, p)
		}
		switch line[0] {
		case 't':
			ver, commit, _ := strings.Cut(val, " ")
			if p != TreeName || commit == "" {
				return nil, fmt.Errorf("line %d: malformed view tree line", ln)
			}
			if ver == strconv.Itoa(TreeVersion) {
				m.Tree = commit // another version: no tree to use
			}
		case 'h':
			m.Hidden = append(m.Hidden, Entry{Path: p, Why: val})
		case 's':
			sec, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", ln, err)
			}
			m.Stale = append(m.Stale, Stale{Path: p, After: time.Unix(sec, 0)})
		default:
			return nil, fmt.Errorf("line %d: unknown kind %q", ln, line[0])
		}
	}
	return &m, nil
}

// CleanRel: relative, slash-separated, clean, not "." and not up (a vault
// path a manifest, a view layer or the gate's view tree may hold).
func CleanRel(p string) bool {
	return p != "" && p != "." && !strings.HasPrefix(p, "/") && path.Clean(p) == p && p != ".." && !strings.HasPrefix(p, "../")
}

// Scan judges every note of vaultDir's work tree (the launcher's way when
// the gate's manifest is not at HEAD): the manifest it returns names no
// commit. A note that cannot be read is hidden (why says so): the view
// fails closed.
func Scan(vaultDir string) (*Manifest, int, error) {
	m := &Manifest{Version: Version}
	n := 0
	buf := make([]byte, maxJudgeBytes)
	err := filepath.WalkDir(vaultDir, func(p string, d fs.DirEntry, err error) error {
		rel, rerr := filepath.Rel(vaultDir, p)
		if rerr != nil {
			return rerr
		}
		rel = filepath.ToSlash(rel)
		if err != nil {
			if rel == "." {
				return err
			}
			m.Hidden = append(m.Hidden, Entry{Path: rel, Why: "could not be read: " + err.Error()})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		top, _, _ := strings.Cut(rel, "/")
		if rel == "." || top == vault.InboxDir || top == ArchiveDir || rel == ".git" {
			if rel != "." && d.IsDir() {
				return fs.SkipDir // the inbox (mounts), the archive and .git (Fixed)
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			m.Hidden = append(m.Hidden, Entry{Path: rel, Why: DotWhy})
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if _, err := os.Lstat(filepath.Join(p, ".git")); err == nil {
				m.Hidden = append(m.Hidden, Entry{Path: rel, Why: SubmoduleWhy})
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !Judged(rel) {
			return nil
		}
		n++
		why, stale, err := judgeFile(p, buf)
		if err != nil {
			why = "could not be read: " + err.Error()
		}
		switch {
		case why != "":
			m.Hidden = append(m.Hidden, Entry{Path: rel, Why: why})
		case !stale.IsZero():
			m.Stale = append(m.Stale, Stale{Path: rel, After: stale})
		}
		return nil
	})
	return m, n, err
}

func judgeFile(p string, buf []byte) (string, time.Time, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", time.Time{}, err
	}
	defer f.Close()
	k, err := io.ReadFull(f, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return "", time.Time{}, err
	}
	why, stale := Judge(buf[:k])
	return why, stale, nil
}
