package gate

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	vaultrepo "github.com/fedmem/fedmem/vault/repo"
)

// BenchmarkDecidePass is the gate side of `make bench -only latency`
// (test/bench/latency.go) without the sandboxes: a 1000-note vault laid
// out as the bench's, a policy trusting the sessions' profile for Facts
// with the built-in shapes, and passes of drafts written as the bench's
// sessions write them (a title numbering session and draft, half claiming
// `verified`, one source). It reports the pass's time per draft; run it
// with -cpuprofile to see where deciding goes.
func BenchmarkDecidePass(b *testing.B) {
	const notes, sessions, per = 1000, 10, 20
	dir := filepath.Join(b.TempDir(), "vault")
	if _, err := vaultrepo.Init(dir, vaultrepo.InitOptions{Reviewers: []string{"alice"}}); err != nil {
		b.Fatal(err)
	}
	folders := []string{"10-projects", "20-domains", "30-clients", "40-workflows", "70-decisions"}
	for i := 0; i < notes; i++ {
		sub := filepath.Join(dir, folders[i%len(folders)], fmt.Sprintf("d%04d", i/100/len(folders)))
		os.MkdirAll(sub, 0o755)
		body := fmt.Sprintf("---\ntype: note\ntitle: Bench note %d\nstatus: stable\ncreated: 2026-01-01T00:00:00+00:00\n---\n# Bench note %d\n\nA small note used by `make bench` to give the vault its size.\nSee [[note-%d]].\n", i, i, (i+1)%notes)
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("note-%06d.md", i)), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	lg := ""
	if os.Geteuid() != 0 {
		lg = fmt.Sprintf("  launcher_group: \"%d\"\n", os.Getegid())
	}
	pol := "version: 1\nreviewers: [alice]\nauto_promote:\n  profiles: [\"" + testProfile + "@" + testProfileHash + "\"]\n  types: [Fact]\n  max_per_session: 100000\n  max_per_day: 1000000\n" + lg
	os.WriteFile(filepath.Join(dir, "00-global", "policy.yaml"), []byte(pol), 0o644)
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "bench notes"}} {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=b", "-c", "user.email=b@b", "-c", "gc.auto=0"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	sd := filepath.Join(dir, "90-inbox", ".sessions")
	os.MkdirAll(sd, 0o770)
	for s := 0; s < sessions; s++ {
		sess := fmt.Sprintf("bench-%02d", s)
		os.MkdirAll(filepath.Join(dir, "90-inbox", sess), 0o700)
		rec := SessionRecord{Session: sess, Profile: testProfile, ProfileHash: testProfileHash, UID: os.Geteuid(), Command: []string{"/usr/bin/claude"}, Started: "2026-11-29T20:00:00Z"}
		j, _ := json.Marshal(rec)
		os.WriteFile(filepath.Join(sd, sess+".json"), j, 0o644)
	}
	g, err := Open(Options{Vault: dir, AllowSameUser: true, StateDir: filepath.Join(b.TempDir(), "state"), Now: func() time.Time { return fixedNow }})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	if _, err := g.Once(); err != nil { // state open, indexes warm
		b.Fatal(err)
	}
	decided, promoted := 0, 0
	var spent time.Duration
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		b.StopTimer()
		for s := 0; s < sessions; s++ {
			for i := 0; i < per; i++ {
				c := "verified"
				if i%2 == 1 {
					c = "hypothesis"
				}
				d := fmt.Sprintf("---\ntype: Fact\ntitle: Bench note %d %d\nconfidence: %s\nrisk: low\nsources:\n  - resource: 10-projects/d0000/note-000000.md\n---\n\nDraft %d of a bench session.\n", s, n*per+i, c, n*per+i)
				os.WriteFile(filepath.Join(dir, "90-inbox", fmt.Sprintf("bench-%02d", s), fmt.Sprintf("d%d-%d.md", n, i)), []byte(d), 0o644)
			}
		}
		b.StartTimer()
		t0 := time.Now()
		sum, err := g.Once()
		spent += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		decided += len(sum.Decisions)
		promoted += sum.Promoted
	}
	b.StopTimer()
	if decided > 0 {
		b.ReportMetric(float64(spent.Microseconds())/1000/float64(decided), "ms/draft")
		b.ReportMetric(float64(promoted)/float64(decided), "promoted/draft")
	}
}
