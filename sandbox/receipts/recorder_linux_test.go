package receipts

import (
	"encoding/binary"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// fanEvent is one FAN_OPEN event as the kernel lays it out with
// FAN_REPORT_DFID_NAME: folder handle h (type 1), name.
func fanEvent(h []byte, name string) []byte {
	ne := binary.NativeEndian
	rec := make([]byte, 4+16+len(h)+len(name)+1)
	rec[0] = unix.FAN_EVENT_INFO_TYPE_DFID_NAME
	for len(rec)%4 != 0 {
		rec = append(rec, 0)
	}
	ne.PutUint16(rec[2:], uint16(len(rec)))
	ne.PutUint32(rec[4+8:], uint32(len(h)))
	ne.PutUint32(rec[4+12:], 1)
	copy(rec[4+16:], h)
	copy(rec[4+16+len(h):], name)
	meta := make([]byte, fanMetaLen)
	ne.PutUint32(meta[0:], uint32(fanMetaLen+len(rec)))
	meta[4] = 3
	ne.PutUint16(meta[6:], fanMetaLen)
	ne.PutUint64(meta[8:], unix.FAN_OPEN)
	ne.PutUint32(meta[16:], uint32(0xffffffff)) // FAN_NOFD
	return append(meta, rec...)
}

// dirKey is readSet's key of handle h (fsid zero, its size and type).
func dirKey(h []byte) string {
	k := make([]byte, 16+len(h))
	binary.NativeEndian.PutUint32(k[8:], uint32(len(h)))
	binary.NativeEndian.PutUint32(k[12:], 1)
	copy(k[16:], h)
	return string(k)
}

// TestReadSetNamesOpens: events are turned into vault-relative paths,
// once per file in the order first seen; .git files are counted apart;
// an event whose folder cannot be resolved is counted, never dropped; an
// overflow marks the receipt lost.
func TestReadSetNamesOpens(t *testing.T) {
	rs := newReadSet("/v", map[string]string{dirKey([]byte("AAAAAAAA")): "10-projects", dirKey([]byte("GGGGGGGG")): ".git/objects", dirKey([]byte("RRRRRRRR")): "."})
	var b []byte
	for _, e := range []struct{ h, n string }{{"AAAAAAAA", "a.md"}, {"RRRRRRRR", "top.md"}, {"AAAAAAAA", "a.md"}, {"GGGGGGGG", "pack"}, {"XXXXXXXX", "lost.md"}, {"AAAAAAAA", "b.md"}} {
		b = append(b, fanEvent([]byte(e.h), e.n)...)
	}
	over := make([]byte, fanMetaLen)
	binary.NativeEndian.PutUint32(over[0:], fanMetaLen)
	binary.NativeEndian.PutUint16(over[6:], fanMetaLen)
	binary.NativeEndian.PutUint64(over[8:], unix.FAN_Q_OVERFLOW)
	binary.NativeEndian.PutUint32(over[16:], uint32(0xffffffff))
	rs.events(append(b, over...))
	vr := rs.finish()
	var got []string
	for _, r := range vr.Reads {
		got = append(got, r.Path)
	}
	if fmt.Sprint(got) != "[10-projects/a.md top.md 10-projects/b.md]" || vr.GitOpens != 1 || vr.Unattributed != 1 || !vr.Lost {
		t.Errorf("reads %v, git %d, unattributed %d, lost %v", got, vr.GitOpens, vr.Unattributed, vr.Lost)
	}
}

// BenchmarkReadSet is the recorder's cost per event: a grep over 100k
// notes in 1000 folders.
func BenchmarkReadSet(b *testing.B) {
	var buf []byte
	dirs := map[string]string{}
	for i := 0; i < 100000; i++ {
		h := []byte(fmt.Sprintf("%08d", i/100))
		dirs[dirKey(h)] = fmt.Sprintf("10-projects/d%04d", i/100)
		buf = append(buf, fanEvent(h, fmt.Sprintf("note-%06d.md", i))...)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rs := newReadSet("/v", dirs)
		rs.events(buf)
		rs.finish()
	}
}
