// Package gitindex edits Git's index file (.git/index) as bytes, so that
// recording one changed path costs the same in a vault of 1k or 100k notes.
//
// It keeps the index split (Git's "split index", gitformat-index(5)): the
// bulk of the entries live in a shared file, .git/sharedindex.<hash>, that
// is written once and then only read by Git; .git/index holds the entries
// changed since, and a "link" extension naming the shared file. Recording a
// change rewrites only that small file. When it has grown past
// Options.MaxDelta entries, the two are merged into a new shared file (one
// full write every MaxDelta changes: amortised, the cost per change stays
// flat).
//
// Git reads and writes a split index by itself: with core.splitIndex unset
// it keeps the index split, and re-splits on its own when the changed part
// passes splitIndex.maxPercentChange. With core.splitIndex=false callers
// pass Options.Split=false and get a plain index back.
//
// Nothing here takes a lock: the caller holds .git/index.lock (Git's
// lock-file protocol), writes a returned shared file with WriteShared, and
// only then renames its lock over .git/index.
package gitindex

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fedmem/fedmem/vault/atomicfile"
)

// ErrUnsupported is returned for an index this package does not edit (an
// unknown mandatory extension such as the sparse index's "sdir", a hash
// other than SHA-1); callers may fall back to a full rewrite of their own.
var ErrUnsupported = errors.New("index format not supported")

// Entry is one path's merged (stage 0) entry, as a caller records it.
type Entry struct {
	Name         string
	Hash         [20]byte
	Mode         uint32 // 0 means a regular file (0o100644)
	Size         uint32
	Mtime, Ctime time.Time
	Dev, Ino     uint32
	UID, GID     uint32
}

// Options say how the index is written.
type Options struct {
	// Split keeps (or makes) the index split; false writes a plain index.
	Split bool
	// MaxDelta is how many entries .git/index may hold beside the shared
	// file before the two are merged into a new shared file (default
	// DefaultMaxDelta).
	MaxDelta int
}

// DefaultMaxDelta bounds the split part: small enough that rewriting it is
// cheap, large enough that the full rewrite it saves is rare.
const DefaultMaxDelta = 2048

// Update is the result of Apply: the new .git/index and, when the entries
// were merged into a new shared file, that file's content and name.
type Update struct {
	Index      []byte
	Shared     []byte // nil: no new shared file
	SharedName string // "sharedindex.<hex>", set with Shared
	// Full reports that Apply read and rewrote every entry (a first split,
	// a merge past MaxDelta, a removal, or a plain index).
	Full bool
	// Replaced is the shared file the old index named ("" if none):
	// WriteShared keeps it for readers that still hold the old index.
	Replaced string
}

// entry is one parsed index entry: the 62 bytes of stat data, object id and
// flags, the extended flags (version 3), and the path.
type entry struct {
	fixed  [62]byte
	ext    uint16
	hasExt bool
	name   []byte
}

func (e *entry) stage() int { return int(binary.BigEndian.Uint16(e.fixed[60:62])>>12) & 3 }

// file is a parsed index.
type file struct {
	version uint32
	entries []entry
	link    []byte // the "link" extension's data; nil for a plain index
}

const sigLink = "link"

// emptyEWAH is an empty bitmap as ewah_serialize writes it.
var emptyEWAH = []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}

// parse reads an index of version 2, 3 or 4. Optional extensions (upper
// case: TREE, REUC, UNTR, FSMN, EOIE, IEOT) are dropped: they are caches
// the change makes stale, and Git rebuilds them. A mandatory one other
// than "link" is ErrUnsupported.
func parse(raw []byte, what string) (*file, error) {
	if len(raw) < 12+20 || string(raw[:4]) != "DIRC" {
		return nil, fmt.Errorf("%s: not a Git index (no DIRC header)", what)
	}
	body := len(raw) - 20
	// An all-zero trailer is index.skipHash (feature.manyFiles).
	if sum := sha1.Sum(raw[:body]); !bytes.Equal(sum[:], raw[body:]) && !bytes.Equal(raw[body:], make([]byte, 20)) {
		return nil, fmt.Errorf("%s: checksum mismatch (a torn or foreign write)", what)
	}
	f := &file{version: binary.BigEndian.Uint32(raw[4:8])}
	if f.version < 2 || f.version > 4 {
		return nil, fmt.Errorf("%s: index version %d: %w", what, f.version, ErrUnsupported)
	}
	count := int(binary.BigEndian.Uint32(raw[8:12]))
	if count > body/62 {
		return nil, fmt.Errorf("%s: %d entries cannot fit in %d bytes", what, count, body)
	}
	f.entries = make([]entry, count)
	off := 12
	var prev []byte
	for i := 0; i < count; i++ {
		e := &f.entries[i]
		if off+62 > body {
			return nil, fmt.Errorf("%s: entry %d runs past the end", what, i)
		}
		copy(e.fixed[:], raw[off:off+62])
		flags := binary.BigEndian.Uint16(e.fixed[60:62])
		fixed := 62
		if flags&0x4000 != 0 {
			if f.version < 3 || off+64 > body {
				return nil, fmt.Errorf("%s: entry %d: extended flags in a version %d index", what, i, f.version)
			}
			e.hasExt, e.ext = true, binary.BigEndian.Uint16(raw[off+62:off+64])
			fixed = 64
		}
		p := off + fixed
		if f.version == 4 {
			// Path compression: strip N bytes from the previous path,
			// then append the NUL-terminated suffix; no padding.
			n, used := varint(raw[p:body])
			if used == 0 || n > uint64(len(prev)) {
				return nil, fmt.Errorf("%s: entry %d: bad path prefix", what, i)
			}
			p += used
			nul := bytes.IndexByte(raw[p:body], 0)
			if nul < 0 {
				return nil, fmt.Errorf("%s: entry %d: unterminated path", what, i)
			}
			name := make([]byte, 0, len(prev)-int(n)+nul)
			name = append(append(name, prev[:len(prev)-int(n)]...), raw[p:p+nul]...)
			e.name, prev = name, name
			off = p + nul + 1
			continue
		}
		nul := bytes.IndexByte(raw[p:body], 0)
		if nul < 0 {
			return nil, fmt.Errorf("%s: entry %d: unterminated path", what, i)
		}
		e.name = raw[p : p+nul]
		off += (fixed + nul + 8) &^ 7
		if off > body {
			return nil, fmt.Errorf("%s: entry %d runs past the end", what, i)
		}
	}
	for off < body {
		if off+8 > body {
			return nil, fmt.Errorf("%s: truncated extension header", what)
		}
		sig := string(raw[off : off+4])
		n := int(binary.BigEndian.Uint32(raw[off+4 : off+8]))
		if n < 0 || off+8+n > body {
			return nil, fmt.Errorf("%s: extension %q runs past the end", what, sig)
		}
		data := raw[off+8 : off+8+n]
		switch {
		case sig == sigLink:
			f.link = data
		case sig[0] >= 'A' && sig[0] <= 'Z':
			// optional cache: dropped
		default:
			return nil, fmt.Errorf("%s: extension %q: %w", what, sig, ErrUnsupported)
		}
		off += 8 + n
	}
	return f, nil
}

// varint is Git's offset encoding (varint.c), used by index version 4.
func varint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v := uint64(c & 127)
	i := 1
	for c&128 != 0 {
		if i >= len(b) || v > 1<<56 {
			return 0, 0
		}
		v++
		c = b[i]
		i++
		v = v<<7 + uint64(c&127)
	}
	return v, i
}

// sharedHash is the shared file's name in a link extension (all zero: none).
func (f *file) sharedHash() ([20]byte, error) {
	var h [20]byte
	if len(f.link) < 20 {
		return h, errors.New("link extension shorter than a hash")
	}
	copy(h[:], f.link[:20])
	return h, nil
}

// bitmaps decodes the link extension's delete and replace bitmaps.
func (f *file) bitmaps() (del, repl []int, err error) {
	rest := f.link[20:]
	if len(rest) == 0 {
		return nil, nil, nil
	}
	del, used, err := ewahBits(rest)
	if err != nil {
		return nil, nil, fmt.Errorf("delete bitmap: %w", err)
	}
	repl, _, err = ewahBits(rest[used:])
	if err != nil {
		return nil, nil, fmt.Errorf("replace bitmap: %w", err)
	}
	return del, repl, nil
}

// ewahBits lists the set bits of a serialized EWAH bitmap (ewah/ewah_io.c:
// bit count, word count, 64-bit words, position of the last run word), and
// how many bytes it took.
func ewahBits(b []byte) ([]int, int, error) {
	if len(b) < 8 {
		return nil, 0, errors.New("truncated")
	}
	bitSize := int(binary.BigEndian.Uint32(b[0:4]))
	words := int(binary.BigEndian.Uint32(b[4:8]))
	if words < 0 || 8+words*8+4 > len(b) {
		return nil, 0, errors.New("truncated")
	}
	w := func(i int) uint64 { return binary.BigEndian.Uint64(b[8+i*8:]) }
	var bits []int
	pos := 0
	for i := 0; i < words; {
		rlw := w(i)
		run := int((rlw >> 1) & 0xFFFFFFFF)
		lits := int(rlw >> 33)
		if rlw&1 != 0 {
			for k := 0; k < run*64; k++ {
				bits = append(bits, pos+k)
			}
		}
		pos += run * 64
		if i+1+lits > words {
			return nil, 0, errors.New("literal words past the end")
		}
		for k := 1; k <= lits; k++ {
			lw := w(i + k)
			for bit := 0; bit < 64; bit++ {
				if lw&(1<<bit) != 0 {
					bits = append(bits, pos+bit)
				}
			}
			pos += 64
		}
		i += 1 + lits
	}
	for len(bits) > 0 && bits[len(bits)-1] >= bitSize {
		bits = bits[:len(bits)-1]
	}
	return bits, 8 + words*8 + 4, nil
}

// SharedPath is where the shared file named in a link extension lives.
func SharedPath(gitDir string, h [20]byte) string {
	return filepath.Join(gitDir, "sharedindex."+hex.EncodeToString(h[:]))
}

// merged returns every entry of f, resolving a split index against its
// shared file (Git's merge_base_index), in index order.
func merged(gitDir string, f *file) ([]entry, error) {
	if f.link == nil {
		return f.entries, nil
	}
	h, err := f.sharedHash()
	if err != nil {
		return nil, err
	}
	del, repl, err := f.bitmaps()
	if err != nil {
		return nil, err
	}
	var base []entry
	if h != ([20]byte{}) {
		p := SharedPath(gitDir, h)
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read shared index: %w", err)
		}
		if len(raw) < 20 || !bytes.Equal(raw[len(raw)-20:], h[:]) {
			return nil, fmt.Errorf("%s: does not end in its name's hash", p)
		}
		sf, err := parse(raw, p)
		if err != nil {
			return nil, err
		}
		if sf.link != nil {
			return nil, fmt.Errorf("%s: a shared index that is itself split", p)
		}
		base = sf.entries
	}
	if len(repl) > len(f.entries) {
		return nil, fmt.Errorf("split index replaces %d entries but holds %d", len(repl), len(f.entries))
	}
	gone := make([]bool, len(base))
	for k, pos := range repl {
		if pos >= len(base) {
			return nil, fmt.Errorf("split index replaces entry %d of %d", pos, len(base))
		}
		e := f.entries[k]
		e.name = base[pos].name
		base[pos] = e
	}
	for _, pos := range del {
		if pos >= len(base) {
			return nil, fmt.Errorf("split index deletes entry %d of %d", pos, len(base))
		}
		gone[pos] = true
	}
	kept := base[:0]
	for i, e := range base {
		if !gone[i] {
			kept = append(kept, e)
		}
	}
	return addAll(kept, f.entries[len(repl):]), nil
}

// less is Git's index order: path bytes, then stage.
func less(a, b *entry) bool {
	if c := bytes.Compare(a.name, b.name); c != 0 {
		return c < 0
	}
	return a.stage() < b.stage()
}

// addAll merges add into sorted base the way Git adds an entry: the same
// path and stage is replaced; a stage-0 entry replaces every stage of its
// path. Both lists are sorted; so is the result.
func addAll(base, add []entry) []entry {
	add = append([]entry(nil), add...)
	sort.SliceStable(add, func(i, j int) bool { return less(&add[i], &add[j]) })
	out := make([]entry, 0, len(base)+len(add))
	i := 0
	for j := range add {
		a := &add[j]
		if j+1 < len(add) && bytes.Equal(add[j+1].name, a.name) && add[j+1].stage() == a.stage() {
			continue // a later duplicate wins
		}
		for i < len(base) && less(&base[i], a) {
			out = append(out, base[i])
			i++
		}
		for i < len(base) && bytes.Equal(base[i].name, a.name) && (a.stage() == 0 || base[i].stage() == a.stage()) {
			i++
		}
		out = append(out, *a)
	}
	return append(out, base[i:]...)
}

func toEntry(e Entry) entry {
	var r entry
	be := binary.BigEndian
	be.PutUint32(r.fixed[0:], uint32(e.Ctime.Unix()))
	be.PutUint32(r.fixed[4:], uint32(e.Ctime.Nanosecond()))
	be.PutUint32(r.fixed[8:], uint32(e.Mtime.Unix()))
	be.PutUint32(r.fixed[12:], uint32(e.Mtime.Nanosecond()))
	be.PutUint32(r.fixed[16:], e.Dev)
	be.PutUint32(r.fixed[20:], e.Ino)
	mode := e.Mode
	if mode == 0 {
		mode = 0o100644
	}
	be.PutUint32(r.fixed[24:], mode)
	be.PutUint32(r.fixed[28:], e.UID)
	be.PutUint32(r.fixed[32:], e.GID)
	be.PutUint32(r.fixed[36:], e.Size)
	copy(r.fixed[40:60], e.Hash[:])
	r.name = []byte(e.Name)
	return r
}

// encode writes entries (and a link extension when link is non-nil) as a
// version 2 index, or 3 when an entry has extended flags.
func encode(entries []entry, link []byte) []byte {
	version := uint32(2)
	size := 12 + 20
	for i := range entries {
		if entries[i].hasExt {
			version = 3
		}
		size += 72 + len(entries[i].name)
	}
	if link != nil {
		size += 8 + len(link)
	}
	out := make([]byte, 12, size)
	copy(out, "DIRC")
	binary.BigEndian.PutUint32(out[4:8], version)
	binary.BigEndian.PutUint32(out[8:12], uint32(len(entries)))
	var pad [8]byte
	for i := range entries {
		e := &entries[i]
		fixed := e.fixed
		flags := binary.BigEndian.Uint16(fixed[60:62]) &^ 0x0FFF &^ 0x4000
		flags |= uint16(min(len(e.name), 0xFFF))
		n := 62
		if e.hasExt {
			flags |= 0x4000
			n = 64
		}
		binary.BigEndian.PutUint16(fixed[60:62], flags)
		out = append(out, fixed[:]...)
		if e.hasExt {
			out = binary.BigEndian.AppendUint16(out, e.ext)
		}
		out = append(out, e.name...)
		out = append(out, pad[:((n+len(e.name)+8)&^7)-n-len(e.name)]...)
	}
	if link != nil {
		out = append(out, sigLink...)
		out = binary.BigEndian.AppendUint32(out, uint32(len(link)))
		out = append(out, link...)
	}
	sum := sha1.Sum(out)
	return append(out, sum[:]...)
}

// Apply records puts (stage-0 entries, replacing every stage of their
// path) and removes dels in the index whose current bytes are raw (nil:
// no index yet). With a split index and no removals it reads and writes
// only the split part, unless that passes MaxDelta.
func Apply(gitDir string, raw []byte, puts []Entry, dels []string, opt Options) (*Update, error) {
	if opt.MaxDelta <= 0 {
		opt.MaxDelta = DefaultMaxDelta
	}
	what := filepath.Join(gitDir, "index")
	f := &file{version: 2}
	if raw != nil {
		var err error
		if f, err = parse(raw, what); err != nil {
			return nil, err
		}
	}
	replaced := ""
	if f.link != nil {
		if h, err := f.sharedHash(); err == nil && h != ([20]byte{}) {
			replaced = "sharedindex." + hex.EncodeToString(h[:])
		}
	}
	add := make([]entry, len(puts))
	for i, p := range puts {
		if p.Name == "" || strings.HasPrefix(p.Name, "/") || strings.Contains(p.Name, "\x00") {
			return nil, fmt.Errorf("index entry %q: not a relative path", p.Name)
		}
		add[i] = toEntry(p)
	}
	if opt.Split && f.link != nil && len(dels) == 0 {
		// Fast path: the shared file stays; the split part takes the
		// entries. Replaced entries (nameless, matched by position to
		// the replace bitmap) are kept first, as they are.
		h, err := f.sharedHash()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		_, repl, err := f.bitmaps()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if len(repl) > len(f.entries) {
			return nil, fmt.Errorf("%s: replaces %d entries but holds %d", what, len(repl), len(f.entries))
		}
		if h != ([20]byte{}) {
			if _, err := os.Stat(SharedPath(gitDir, h)); err != nil {
				return nil, fmt.Errorf("%s: shared index: %w", what, err)
			}
		}
		added := addAll(f.entries[len(repl):], add)
		if len(repl)+len(added) <= opt.MaxDelta {
			all := append(append(make([]entry, 0, len(repl)+len(added)), f.entries[:len(repl)]...), added...)
			return &Update{Index: encode(all, f.link), Replaced: replaced}, nil
		}
	}
	all, err := merged(gitDir, f)
	if err != nil {
		return nil, err
	}
	all = addAll(all, add)
	if len(dels) > 0 {
		gone := map[string]bool{}
		for _, d := range dels {
			gone[d] = true
		}
		kept := all[:0]
		for _, e := range all {
			if !gone[string(e.name)] {
				kept = append(kept, e)
			}
		}
		all = kept
	}
	if !opt.Split {
		return &Update{Index: encode(all, nil), Full: true, Replaced: replaced}, nil
	}
	shared := encode(all, nil)
	var h [20]byte
	copy(h[:], shared[len(shared)-20:])
	// Git dereferences both bitmaps whenever the link names a shared file:
	// an empty one each (bit count 0, one run word of 0, run word at 0).
	link := append(h[:], emptyEWAH...)
	link = append(link, emptyEWAH...)
	return &Update{
		Index:      encode(nil, link),
		Shared:     shared,
		SharedName: "sharedindex." + hex.EncodeToString(h[:]),
		Full:       true,
		Replaced:   replaced,
	}, nil
}

// WriteShared writes u's shared file (if any) into gitDir durably: a
// temporary file, fsynced, renamed into place, the folder fsynced. prep,
// when set, is called on the open temporary file (e.g. to chown it). It
// then removes shared files no index can still need: every other one but
// u.Replaced (the file the old index named) older than PruneAge.
func WriteShared(gitDir string, u *Update, prep func(*os.File) error) error {
	if u == nil || u.Shared == nil {
		return nil
	}
	final := filepath.Join(gitDir, u.SharedName)
	if _, err := os.Stat(final); err != nil {
		tmp, err := os.CreateTemp(gitDir, "sharedindex_")
		if err != nil {
			return err
		}
		err = func() error {
			if prep != nil {
				if err := prep(tmp); err != nil {
					return err
				}
			}
			if err := tmp.Chmod(0o644); err != nil {
				return err
			}
			if _, err := tmp.Write(u.Shared); err != nil {
				return err
			}
			return tmp.Sync()
		}()
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), final)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("write %s: %w", final, err)
		}
		if err := syncDir(gitDir); err != nil {
			return err
		}
	}
	prune(gitDir, u.SharedName, u.Replaced)
	return nil
}

// PruneAge is how old an unused shared file must be before WriteShared
// removes it. Git itself keeps them two weeks (splitIndex.sharedIndexExpire)
// for temporary index files that may still name one; a Git command that
// writes an index naming a shared file refreshes its time, and the file
// the replaced index named is always kept.
const PruneAge = 10 * time.Minute

func prune(gitDir, cur, keep string) {
	ents, err := os.ReadDir(gitDir)
	if err != nil {
		return
	}
	for _, de := range ents {
		n := de.Name()
		if !strings.HasPrefix(n, "sharedindex.") || n == cur || n == keep {
			continue
		}
		if fi, err := de.Info(); err == nil && time.Since(fi.ModTime()) > PruneAge {
			os.Remove(filepath.Join(gitDir, n))
		}
	}
}

// SharedName returns the name of the shared file the index raw links to
// ("" for a plain index or one that cannot be read).
func SharedName(raw []byte) string {
	f, err := parse(raw, "index")
	if err != nil || f.link == nil {
		return ""
	}
	h, err := f.sharedHash()
	if err != nil || h == ([20]byte{}) {
		return ""
	}
	return "sharedindex." + hex.EncodeToString(h[:])
}

func syncDir(dir string) error { return atomicfile.SyncDir(dir) }

// WantSplit reads core.splitIndex as Git does for this package's purpose:
// unset or true keeps the index split; a false value writes it plain.
func WantSplit(coreSplitIndex string) bool {
	switch strings.ToLower(strings.TrimSpace(coreSplitIndex)) {
	case "false", "no", "off", "0":
		return false
	}
	return true
}
