package repo

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// A group's pack (issue 9) is written by the gate itself, with its index:
// every object's offset and CRC32 are known while it is encoded, so the
// .idx is built from them (go-git's idxfile encoder) instead of parsing
// and inflating the pack again, as go-git's PackWriter does. Objects that
// are a new version of an object of the same pack (the next version of a
// folder's tree, of a log or index page) are stored as OFS_DELTA against
// it: most of a group's bytes were those versions, each deflated whole.
//
// Visibility: both files are written under temporary names and synced;
// the .idx is renamed into place first, then the .pack. Git lists packs by
// their .idx and ignores one whose .pack is missing; go-git lists them by
// their .pack and needs its .idx. Either way a pack is seen whole or not
// at all, whenever the gate is killed. A killed gate's leftovers (a
// temporary file, an .idx without its pack) are removed when it opens the
// repository again (cleanPackLeftovers).

// PackTmpPrefix names the gate's temporary pack files in objects/pack.
const PackTmpPrefix = "tmp_fedmem_"

// maxDeltaDepth bounds a delta chain (git's pack.depth default is 50).
const maxDeltaDepth = 50

// packEntry is one object as written: its offset and CRC32 (for the .idx).
type packEntry struct {
	hash   plumbing.Hash
	offset uint64
	crc    uint32
}

// countingWriter feeds the pack's checksum and the current entry's CRC32
// and counts the bytes written.
type countingWriter struct {
	w   io.Writer
	sum hash.Hash
	crc hash.Hash32
	n   uint64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.sum.Write(p[:n])
	c.crc.Write(p[:n])
	c.n += uint64(n)
	return n, err
}

// rawObject returns an object's content.
func rawObject(b *commitBatch, h plumbing.Hash) ([]byte, error) {
	obj := b.objs[h]
	return readObject(obj)
}

// rawObj is an object the gate made from content it holds: its bytes are
// kept as given and read back without a copy (readObject), so a group
// reading a page or a tree it just wrote, and encodePack, cost no copy of
// it. Immutable once made: neither the maker nor a reader may Change b.
type rawObj struct {
	t plumbing.ObjectType
	h plumbing.Hash
	b []byte
}

// newRawObj makes the object of type t with content b (b is kept, not
// copied: the caller must not Change it afterwards).
func newRawObj(t plumbing.ObjectType, b []byte) *rawObj {
	return &rawObj{t: t, h: plumbing.ComputeHash(t, b), b: b[:len(b):len(b)]}
}

func (o *rawObj) Hash() plumbing.Hash         { return o.h }
func (o *rawObj) Type() plumbing.ObjectType   { return o.t }
func (o *rawObj) SetType(plumbing.ObjectType) {}
func (o *rawObj) Size() int64                 { return int64(len(o.b)) }
func (o *rawObj) SetSize(int64)               {}
func (o *rawObj) Reader() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(o.b)), nil
}
func (o *rawObj) Writer() (io.WriteCloser, error) {
	return nil, fmt.Errorf("object %s is immutable", o.h)
}

// readObject reads an object's content into a buffer of its size. The
// content of a rawObj is returned as it is, shared (capped: an append
// copies); callers treat what it returns as read-only.
func readObject(obj plumbing.EncodedObject) ([]byte, error) {
	if ro, ok := obj.(*rawObj); ok {
		return ro.b, nil
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	if n := obj.Size(); n >= 0 && n < 1<<31 {
		buf := make([]byte, n)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	return io.ReadAll(rd)
}

// encodePack writes a version 2 packfile of the group's objects (whole,
// or as a delta against an earlier version in the pack), deflated at
// zlib.BestSpeed, and returns its checksum (the pack's name) and entries.
func encodePack(w io.Writer, b *commitBatch) (plumbing.Hash, []packEntry, error) {
	cw := &countingWriter{w: w, sum: sha1.New(), crc: crc32.NewIEEE()}
	var hdr [12]byte
	copy(hdr[:4], "PACK")
	binary.BigEndian.PutUint32(hdr[4:8], 2)
	binary.BigEndian.PutUint32(hdr[8:12], uint32(len(b.order)))
	if _, err := cw.Write(hdr[:]); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	zw, _ := zlib.NewWriterLevel(cw, zlib.BestSpeed)
	entries := make([]packEntry, 0, len(b.order))
	offset := map[plumbing.Hash]uint64{}
	depth := map[plumbing.Hash]int{}
	raws := map[plumbing.Hash][]byte{}
	for _, oh := range b.order {
		obj := b.objs[oh]
		t := obj.Type()
		if t < plumbing.CommitObject || t > plumbing.TagObject {
			return plumbing.ZeroHash, nil, fmt.Errorf("object %s: type %s cannot be packed whole", oh, t)
		}
		raw, err := rawObject(b, oh)
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		start := cw.n
		cw.crc.Reset()
		body, typ := raw, t
		var ofs []byte
		if base, ok := b.bases[oh]; ok && t != plumbing.CommitObject {
			if bofs, ok := offset[base]; ok && depth[base] < maxDeltaDepth && b.objs[base].Type() == t && len(raws[base]) > 0 && len(raw) > 0 {
				var d []byte
				if t == plumbing.TreeObject {
					d = treeDelta(raws[base], raw)
				} else {
					d = affixDelta(raws[base], raw)
				}
				if d != nil && len(d) < len(raw)/2 {
					body, typ, ofs = d, plumbing.OFSDeltaObject, ofsDeltaOffset(start-bofs)
					depth[oh] = depth[base] + 1
				}
			}
		}
		if _, err := cw.Write(append(objectHeader(typ, int64(len(body))), ofs...)); err != nil {
			return plumbing.ZeroHash, nil, err
		}
		zw.Reset(cw)
		if _, err := zw.Write(body); err != nil {
			return plumbing.ZeroHash, nil, err
		}
		if err := zw.Close(); err != nil {
			return plumbing.ZeroHash, nil, err
		}
		entries = append(entries, packEntry{hash: oh, offset: start, crc: cw.crc.Sum32()})
		offset[oh] = start
		if t != plumbing.CommitObject {
			raws[oh] = raw
		}
	}
	var sum plumbing.Hash
	copy(sum[:], cw.sum.Sum(nil))
	if _, err := w.Write(sum[:]); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	return sum, entries, nil
}

// objectHeader is a pack entry's type and size header.
func objectHeader(t plumbing.ObjectType, size int64) []byte {
	var ent []byte
	c := byte(t)<<4 | byte(size&0x0f)
	size >>= 4
	for size > 0 {
		ent = append(ent, c|0x80)
		c = byte(size & 0x7f)
		size >>= 7
	}
	return append(ent, c)
}

// ofsDeltaOffset encodes the distance back to an OFS_DELTA's base.
func ofsDeltaOffset(n uint64) []byte {
	var buf [16]byte
	pos := len(buf) - 1
	buf[pos] = byte(n & 0x7f)
	for n >>= 7; n > 0; n >>= 7 {
		n--
		pos--
		buf[pos] = 0x80 | byte(n&0x7f)
	}
	return append([]byte(nil), buf[pos:]...)
}

// deltaBuf builds a Git delta (copy and insert instructions).
type deltaBuf struct{ out []byte }

func (d *deltaBuf) varint(n int) {
	for n >= 0x80 {
		d.out = append(d.out, byte(n)|0x80)
		n >>= 7
	}
	d.out = append(d.out, byte(n))
}

func (d *deltaBuf) copyOp(off, n int) {
	for n > 0 {
		m := min(n, 0xffffff)
		op := byte(0x80)
		var args []byte
		for i := 0; i < 4; i++ {
			if v := byte(off >> (8 * i)); v != 0 {
				op |= 1 << i
				args = append(args, v)
			}
		}
		for i := 0; i < 3; i++ {
			if v := byte(m >> (8 * i)); v != 0 {
				op |= 0x10 << i
				args = append(args, v)
			}
		}
		d.out = append(append(d.out, op), args...)
		off += m
		n -= m
	}
}

func (d *deltaBuf) insert(p []byte) {
	for len(p) > 0 {
		m := min(len(p), 0x7f)
		d.out = append(append(d.out, byte(m)), p[:m]...)
		p = p[m:]
	}
}

func newDelta(src, dst []byte) *deltaBuf {
	d := &deltaBuf{out: make([]byte, 0, 64)}
	d.varint(len(src))
	d.varint(len(dst))
	return d
}

// affixDelta encodes dst as src's common prefix and suffix around what
// changed (a line appended to a log page, one inserted in an index page).
func affixDelta(src, dst []byte) []byte {
	p := 0
	for p < len(src) && p < len(dst) && src[p] == dst[p] {
		p++
	}
	s := 0
	for s < len(src)-p && s < len(dst)-p && src[len(src)-1-s] == dst[len(dst)-1-s] {
		s++
	}
	d := newDelta(src, dst)
	d.copyOp(0, p)
	d.insert(dst[p : len(dst)-s])
	d.copyOp(len(src)-s, s)
	return d.out
}

// treeDelta encodes tree dst against tree src entry by entry: runs of
// entries dst keeps are copied, the others inserted (both trees are walked
// once, in Git's order). nil if either tree is malformed.
func treeDelta(src, dst []byte) []byte {
	d := newDelta(src, dst)
	runOff, runLen := 0, 0
	flush := func() {
		if runLen > 0 {
			d.copyOp(runOff, runLen)
			runLen = 0
		}
	}
	var sName []byte
	var sDir bool
	i, sEnd := 0, 0
	sOK := false
	if len(src) > 0 {
		if sName, sDir, sEnd, sOK = NextEntry(src, 0); !sOK {
			return nil
		}
	}
	for j := 0; j < len(dst); {
		name, dir, end, ok := NextEntry(dst, j)
		if !ok {
			return nil
		}
		c := -1
		for sOK {
			if c = CompareKeys(sName, sDir, name, dir); c >= 0 {
				break
			}
			if i = sEnd; i < len(src) {
				if sName, sDir, sEnd, sOK = NextEntry(src, i); !sOK {
					return nil
				}
			} else {
				sOK = false
			}
		}
		if sOK && c == 0 && bytes.Equal(src[i:sEnd], dst[j:end]) {
			if runLen > 0 && runOff+runLen == i {
				runLen += end - j
			} else {
				flush()
				runOff, runLen = i, end-j
			}
		} else {
			flush()
			d.insert(dst[j:end])
		}
		j = end
	}
	flush()
	return d.out
}

// writePack writes the group's objects into one packfile and its index,
// synced, and makes them visible (index first, then pack; see above).
func (g *Repo) writePack(b *commitBatch) error {
	dir := filepath.Join(g.gitDir, "objects", "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pf, err := os.CreateTemp(dir, PackTmpPrefix+"pack_")
	if err != nil {
		return fmt.Errorf("write pack: %w", err)
	}
	xf, err := os.CreateTemp(dir, PackTmpPrefix+"idx_")
	if err != nil {
		pf.Close()
		os.Remove(pf.Name())
		return fmt.Errorf("write pack: %w", err)
	}
	done := false
	defer func() {
		if !done {
			pf.Close()
			xf.Close()
			os.Remove(pf.Name())
			os.Remove(xf.Name())
		}
	}()
	bw := bufio.NewWriterSize(pf, 256<<10)
	sum, entries, err := encodePack(bw, b)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return fmt.Errorf("write pack: %w", err)
	}
	var iw idxfile.Writer
	iw.OnHeader(uint32(len(entries)))
	for _, e := range entries {
		iw.Add(e.hash, e.offset, e.crc)
	}
	if err := iw.OnFooter(sum); err != nil {
		return fmt.Errorf("pack index: %w", err)
	}
	idx, err := iw.Index()
	if err != nil {
		return fmt.Errorf("pack index: %w", err)
	}
	xb := bufio.NewWriter(xf)
	if _, err := idxfile.NewEncoder(xb).Encode(idx); err != nil {
		return fmt.Errorf("pack index: %w", err)
	}
	if err := xb.Flush(); err != nil {
		return fmt.Errorf("pack index: %w", err)
	}
	for _, f := range []*os.File{pf, xf} {
		if err := f.Chmod(0o444); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", f.Name(), err)
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	done = true
	base := filepath.Join(dir, "pack-"+sum.String())
	if err := os.Rename(xf.Name(), base+".idx"); err != nil {
		os.Remove(pf.Name())
		os.Remove(xf.Name())
		return err
	}
	g.fault("pack-idx")
	if err := os.Rename(pf.Name(), base+".pack"); err != nil {
		os.Remove(pf.Name())
		return err
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	// go-git reloads its list of packs on the first lookup that misses
	// (reindexing.refresh); until then the pack's objects are read from
	// memory.
	if ri, ok := g.s.(*reindexing); ok {
		ri.addRecent(b.objs, b.order)
	}
	return nil
}

// cleanPackLeftovers removes what a gate killed inside writePack left in
// objects/pack: its temporary files, and an .idx whose .pack it had not
// yet renamed into place (nobody else leaves an .idx without its pack:
// Git renames the pack first, and removes an .idx with or after it).
func cleanPackLeftovers(gitDir string) {
	dir := filepath.Join(gitDir, "objects", "pack")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		n := e.Name()
		switch {
		case strings.HasPrefix(n, PackTmpPrefix):
			os.Remove(filepath.Join(dir, n))
		case strings.HasPrefix(n, "pack-") && strings.HasSuffix(n, ".idx"):
			if _, err := os.Stat(filepath.Join(dir, strings.TrimSuffix(n, ".idx")+".pack")); errors.Is(err, os.ErrNotExist) {
				os.Remove(filepath.Join(dir, n))
			}
		}
	}
}
