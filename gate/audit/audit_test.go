package audit

import (
	"bytes"
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
