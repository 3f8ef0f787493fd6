package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeLog(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := l.Append("claim", map[string]any{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	if _, probs, err := Verify(dir); err != nil {
		t.Fatalf("fresh log must verify: %v %v", err, probs)
	}
	return dir
}

func lines(t *testing.T, dir string) [][]byte {
	b, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
}

func put(t *testing.T, dir string, ls [][]byte) {
	var b []byte
	for _, l := range ls {
		b = append(b, bytes.TrimSuffix(l, []byte("\n"))...)
		b = append(b, '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, File), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func expectTamper(t *testing.T, dir, want string) {
	t.Helper()
	_, probs, err := Verify(dir)
	if !errors.Is(err, ErrTampered) {
		t.Fatalf("Verify = %v; want ErrTampered", err)
	}
	for _, p := range probs {
		if strings.Contains(p.Msg, want) {
			return
		}
	}
	t.Fatalf("problems %v; want one mentioning %q", probs, want)
}

func TestVerifyDetectsChange(t *testing.T) {
	dir := writeLog(t, 5)
	ls := lines(t, dir)
	ls[2] = bytes.Replace(ls[2], []byte(`"i":2`), []byte(`"i":9`), 1)
	put(t, dir, ls)
	expectTamper(t, dir, "seq 3 was changed")
}

func TestVerifyDetectsRemoval(t *testing.T) {
	dir := writeLog(t, 5)
	ls := lines(t, dir)
	put(t, dir, append(ls[:1:1], ls[2:]...))
	expectTamper(t, dir, "seq 3 follows seq 1")
}

func TestVerifyDetectsReorder(t *testing.T) {
	dir := writeLog(t, 5)
	ls := lines(t, dir)
	ls[1], ls[2] = ls[2], ls[1]
	put(t, dir, ls)
	expectTamper(t, dir, "follows seq 1")
}

func TestVerifyDetectsTruncation(t *testing.T) {
	dir := writeLog(t, 5)
	put(t, dir, lines(t, dir)[:3])
	expectTamper(t, dir, "head file says seq 5")
}

func TestVerifyDetectsForgedRelink(t *testing.T) {
	// Changing an entry and fixing its own hash still breaks the next link.
	dir := writeLog(t, 3)
	l, _ := Open(dir)
	l.Close()
	ls := lines(t, dir)
	// Re-create entry 2 with other data and a correct self-hash.
	l2dir := t.TempDir()
	l2, _ := Open(l2dir)
	l2.Append("claim", map[string]any{"i": 0})
	l2.Append("claim", map[string]any{"i": "forged"})
	l2.Close()
	forged := lines(t, l2dir)
	ls[1] = forged[1]
	put(t, dir, ls)
	expectTamper(t, dir, "seq 3 does not chain")
}

func TestOpenCutsPartialLine(t *testing.T) {
	dir := writeLog(t, 2)
	f, _ := os.OpenFile(filepath.Join(dir, File), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"seq":3,"ki`)
	f.Close()
	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append("decision", "x"); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if n, probs, err := Verify(dir); err != nil || n != 3 {
		t.Fatalf("after recovery: n=%d %v %v", n, probs, err)
	}
}

// A log cut short used to be "recovered" by Open, which rewrote the head
// from the last remaining line: the cut was then invisible after a restart.
func TestOpenRefusesCutLog(t *testing.T) {
	dir := writeLog(t, 5)
	put(t, dir, lines(t, dir)[:3])
	_, err := Open(dir)
	if !errors.Is(err, ErrCut) || !strings.Contains(err.Error(), "ends at seq 3") || !strings.Contains(err.Error(), "records seq 5") {
		t.Fatalf("Open of a cut log = %v; want ErrCut naming both ends", err)
	}
	// Still refused on the next restart: Open did not rewrite the head.
	if _, err := Open(dir); !errors.Is(err, ErrCut) {
		t.Fatalf("second Open = %v; want ErrCut", err)
	}
	expectTamper(t, dir, "head file says seq 5")
}

func TestOpenRefusesRewrittenHeadEntry(t *testing.T) {
	dir := writeLog(t, 3)
	other := writeLog(t, 3) // same seqs, other times: other hashes
	put(t, dir, lines(t, other))
	if _, err := Open(dir); !errors.Is(err, ErrCut) || !strings.Contains(err.Error(), "seq 3 is not the one") {
		t.Fatalf("Open = %v; want ErrCut (rewritten)", err)
	}
}

func TestOpenRefusesMissingHead(t *testing.T) {
	dir := writeLog(t, 2)
	os.Remove(filepath.Join(dir, HeadFile))
	if _, err := Open(dir); !errors.Is(err, ErrCut) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("Open = %v; want ErrCut (head missing)", err)
	}
}

// A crash after the entry was synced but before the head was replaced
// leaves the log one entry past the head: that is not a cut.
func TestOpenAcceptsLogPastHead(t *testing.T) {
	dir := writeLog(t, 3)
	hb, _ := os.ReadFile(filepath.Join(dir, HeadFile))
	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	l.Append("claim", 4)
	l.Close()
	os.WriteFile(filepath.Join(dir, HeadFile), hb, 0o600) // the old head
	l, err = Open(dir)
	if err != nil {
		t.Fatalf("Open after a crash before the head update: %v", err)
	}
	if got := l.Head(); !strings.HasPrefix(got, "4:") {
		t.Fatalf("head %q; want seq 4", got)
	}
	l.Close()
}

func TestOpenRefusesPlantedLinks(t *testing.T) {
	target := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(target, []byte("keep\n"), 0o600)
	dir := t.TempDir()
	if err := os.Symlink(target, filepath.Join(dir, File)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("Open through a planted log link = %v; want a refusal naming the link", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep\n" {
		t.Fatalf("the link's target was written: %q", b)
	}
	// The directory itself a link.
	real := writeLog(t, 1)
	link := filepath.Join(t.TempDir(), "state")
	os.Symlink(real, link)
	if _, err := Open(link); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Open of a linked dir = %v", err)
	}
	// A directory others may write.
	os.Chmod(real, 0o773)
	if _, err := Open(real); err == nil || !strings.Contains(err.Error(), "group or others may write") {
		t.Fatalf("Open of a group-writable dir = %v", err)
	}
}

func TestVerifyAnchored(t *testing.T) {
	dir := writeLog(t, 5)
	l, _ := Open(dir)
	anchor := Anchor{Head: l.Head(), Source: "commit abc"}
	l.Close()
	if _, probs, err := VerifyAnchored(dir, []Anchor{anchor}); err != nil {
		t.Fatalf("intact log: %v %v", err, probs)
	}
	// Cut the log and rewrite the head to match: only the anchor knows.
	ls := lines(t, dir)
	put(t, dir, ls[:3])
	var e Entry
	json.Unmarshal(ls[2], &e)
	hb, _ := json.Marshal(head{e.Seq, e.Hash})
	os.WriteFile(filepath.Join(dir, HeadFile), hb, 0o600)
	if _, probs, err := Verify(dir); err != nil {
		t.Fatalf("without the anchor the cut is invisible (as expected): %v %v", err, probs)
	}
	_, probs, err := VerifyAnchored(dir, []Anchor{anchor})
	if !errors.Is(err, ErrTampered) || len(probs) != 1 || probs[0].Line != 4 || !strings.Contains(probs[0].Msg, "commit abc records audit head seq 5") {
		t.Fatalf("VerifyAnchored = %v %+v", err, probs)
	}
}
