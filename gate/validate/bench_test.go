package validate

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkDraft measures validation throughput over the gate's hostile
// corpus (every check, gitleaks included), reported as drafts/s.
func BenchmarkDraft(b *testing.B) {
	files, _ := filepath.Glob("../testdata/corpus/*.md")
	var drafts [][]byte
	for _, f := range files {
		d, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		drafts = append(drafts, d)
	}
	if len(drafts) == 0 {
		b.Fatal("no corpus")
	}
	if _, err := Draft(drafts[0]); err != nil { // build the detector outside the timer
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Draft(drafts[i%len(drafts)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "drafts/s")
}
