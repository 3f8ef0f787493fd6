package boundary

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxPackageLines is the most non-test lines one product package may hold
// (issue 20's acceptance: a package is a part with one job a reader can
// hold; a larger one is split into parts behind narrow interfaces).
const maxPackageLines = 4000

// oversized are the packages that held more than maxPackageLines when the
// limit was set, each with its size then as a ceiling: it may only shrink.
// A package that is split below the limit leaves this list (the test says
// so); lower a ceiling when a package shrinks. Raised once, by the merge
// of read receipts (issue 21) into the split: gate 5483→5493 (the sweep's
// hooks; the store and the readers went to gate/readers, the access hint
// to gate/intake) and sandbox 5836→5999 (the init's hand-over and the
// backends' hooks; the recorder went to sandbox/receipts). sandbox left
// the list at 3612 when the init's code went to sandbox/pid1 (2415);
// gate/decide at 3407 when its shape rules went to gate/decide/shape; gate
// at 3906: the group commit, promotion commits, checkout journal, async
// records and folder pages went to gate/commit, the decision records,
// review ids, draft versions and duplicate index to gate/ledger. None is
// left; the map stays for the next package that outgrows the limit.
var oversized = map[string]int{}

// packageLines counts the lines of the non-test .go files of every
// directory under root (testdata, vendor, hidden and _ directories
// skipped), as `cat *.go | wc -l` over a package's non-test files does,
// whatever their build tags. Keys are slash paths relative to root ("." for
// root itself).
func packageLines(root string) (map[string]int, error) {
	lines := map[string]int{}
	err := walkGoSources(root, nil, func(path string) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		lines[filepath.ToSlash(rel)] += bytes.Count(b, []byte("\n"))
		return nil
	})
	return lines, err
}

// productPackage: test/ holds the suites and their helpers, not product.
func productPackage(dir string) bool {
	return dir != "test" && !strings.HasPrefix(dir, "test/")
}

// TestPackageSize: no product package holds more than maxPackageLines
// non-test lines, but the oversized ones, each at most its ceiling.
func TestPackageSize(t *testing.T) {
	root := moduleRoot(t)
	lines, err := packageLines(root)
	if err != nil {
		t.Fatal(err)
	}
	// Positive control: the walk measured the gate, and found it non-empty.
	if lines["gate"] < 1000 || lines["gate/validate"] < 500 {
		t.Fatalf("gate %d lines, gate/validate %d: the walk did not see the module under %s", lines["gate"], lines["gate/validate"], root)
	}
	dirs := make([]string, 0, len(lines))
	for d := range lines {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		n := lines[d]
		if !productPackage(d) {
			continue
		}
		ceiling, known := oversized[d]
		switch {
		case !known && n > maxPackageLines:
			t.Errorf("%s: %d non-test lines (limit %d): split it into parts, each a package with its own job", d, n, maxPackageLines)
		case known && n > ceiling:
			t.Errorf("%s: %d non-test lines, over its ceiling %d (it is over the limit %d: it may only shrink)", d, n, ceiling, maxPackageLines)
		case known && n <= maxPackageLines:
			t.Errorf("%s: %d non-test lines, within the limit %d: remove it from oversized", d, n, maxPackageLines)
		case known && n < ceiling:
			t.Logf("%s: %d non-test lines; lower its ceiling from %d", d, n, ceiling)
		}
	}
	for d := range oversized {
		if _, ok := lines[d]; !ok {
			t.Errorf("oversized names %s, which holds no Go file: remove it", d)
		}
	}
}

// TestPackageLinesCounts: the measure counts a package's non-test files
// and leaves out its tests, testdata and other packages (so TestPackageSize
// can fail).
func TestPackageLinesCounts(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	big := "package p\n" + strings.Repeat("var _ = 1\n", maxPackageLines)
	write("p/p.go", big)
	write("p/q_linux.go", "package p\n\nvar _ = 2\n")
	write("p/p_test.go", big)
	write("p/testdata/x.go", big)
	write("p/sub/s.go", "package sub\n")
	lines, err := packageLines(dir)
	if err != nil {
		t.Fatal(err)
	}
	if lines["p"] != maxPackageLines+4 || lines["p/sub"] != 1 || len(lines) != 2 {
		t.Fatalf("packageLines = %v; want p: %d, p/sub: 1", lines, maxPackageLines+4)
	}
	if productPackage("test/bench") || productPackage("test") || !productPackage("gate") || !productPackage("testutil") {
		t.Fatal("productPackage: test/ is not product, everything else is")
	}
}
