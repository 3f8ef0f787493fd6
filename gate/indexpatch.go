package gate

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"os"
	"sort"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// errIndexFallback means the index uses a feature patchIndex does not edit
// in place (version 4 path compression, split index, sparse index, a
// conflict on a changed path); the caller then rewrites it with go-git.
var errIndexFallback = errors.New("index needs a full rewrite")

// indexEntry is what patchIndex writes for one changed path.
type indexEntry struct {
	Name     string
	Hash     plumbing.Hash
	Size     uint32
	Mtime    time.Time
	Ctime    time.Time
	Dev, Ino uint32
	UID, GID uint32
}

// patchIndex splices entries into a version 2/3 index held in raw, copying
// the other entries byte for byte (no decode of the whole index), drops the
// optional extensions (caches such as TREE, which the change would make
// stale; Git rebuilds them) and recomputes the checksum. Cost: one pass
// over the index bytes, no per-entry allocation.
func patchIndex(raw []byte, changes []indexEntry) ([]byte, error) {
	if len(raw) < 12+20 || string(raw[:4]) != "DIRC" {
		return nil, errIndexFallback
	}
	version := binary.BigEndian.Uint32(raw[4:8])
	if version != 2 && version != 3 {
		return nil, errIndexFallback
	}
	count := int(binary.BigEndian.Uint32(raw[8:12]))
	type span struct {
		name       []byte
		stage      int
		start, end int
	}
	spans := make([]span, 0, count)
	off := 12
	body := len(raw) - 20
	for i := 0; i < count; i++ {
		if off+62 > body {
			return nil, errIndexFallback
		}
		flags := binary.BigEndian.Uint16(raw[off+60 : off+62])
		fixed := 62
		if flags&0x4000 != 0 {
			if version < 3 {
				return nil, errIndexFallback
			}
			fixed += 2
		}
		nameStart := off + fixed
		nul := bytes.IndexByte(raw[nameStart:body], 0)
		if nul < 0 {
			return nil, errIndexFallback
		}
		entLen := (fixed + nul + 8) &^ 7
		if off+entLen > body {
			return nil, errIndexFallback
		}
		spans = append(spans, span{raw[nameStart : nameStart+nul], int(flags>>12) & 3, off, off + entLen})
		off += entLen
	}
	// Extensions: a lower-case signature must be understood (split index
	// "link", sparse "sdir"): fall back. Upper-case ones are optional caches.
	for e := off; e < body; {
		if e+8 > body {
			return nil, errIndexFallback
		}
		sig := raw[e : e+4]
		if sig[0] >= 'a' && sig[0] <= 'z' {
			return nil, errIndexFallback
		}
		e += 8 + int(binary.BigEndian.Uint32(raw[e+4:e+8]))
	}
	sorted := append([]indexEntry(nil), changes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var out bytes.Buffer
	out.Grow(len(raw) + len(changes)*128)
	out.Write(raw[:12])
	n := 0
	ci := 0
	for _, s := range spans {
		for ci < len(sorted) && sorted[ci].Name < string(s.name) {
			writeIndexEntry(&out, sorted[ci])
			ci++
			n++
		}
		if ci < len(sorted) && sorted[ci].Name == string(s.name) {
			if s.stage != 0 {
				return nil, errIndexFallback // a conflict on this path
			}
			writeIndexEntry(&out, sorted[ci])
			ci++
			n++
			continue
		}
		out.Write(raw[s.start:s.end])
		n++
	}
	for ; ci < len(sorted); ci++ {
		writeIndexEntry(&out, sorted[ci])
		n++
	}
	b := out.Bytes()
	binary.BigEndian.PutUint32(b[8:12], uint32(n))
	sum := sha1.Sum(b)
	return append(b, sum[:]...), nil
}

func writeIndexEntry(w *bytes.Buffer, e indexEntry) {
	var fixed [62]byte
	be := binary.BigEndian
	be.PutUint32(fixed[0:], uint32(e.Ctime.Unix()))
	be.PutUint32(fixed[4:], uint32(e.Ctime.Nanosecond()))
	be.PutUint32(fixed[8:], uint32(e.Mtime.Unix()))
	be.PutUint32(fixed[12:], uint32(e.Mtime.Nanosecond()))
	be.PutUint32(fixed[16:], e.Dev)
	be.PutUint32(fixed[20:], e.Ino)
	be.PutUint32(fixed[24:], 0o100644)
	be.PutUint32(fixed[28:], e.UID)
	be.PutUint32(fixed[32:], e.GID)
	be.PutUint32(fixed[36:], e.Size)
	copy(fixed[40:60], e.Hash[:])
	nl := len(e.Name)
	if nl > 0xFFF {
		nl = 0xFFF
	}
	be.PutUint16(fixed[60:], uint16(nl))
	w.Write(fixed[:])
	w.WriteString(e.Name)
	pad := ((62 + len(e.Name) + 8) &^ 7) - 62 - len(e.Name)
	w.Write(make([]byte, pad))
}

// readIndexRaw returns the index bytes, or nil when there is no index yet.
func readIndexRaw(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errIndexFallback
	}
	return b, err
}
