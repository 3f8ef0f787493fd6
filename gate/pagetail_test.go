package gate

import (
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/fedmem/fedmem/gate/commit"
)

// Pages a dropped group grew in place are not changed by the promotions
// after it: each blob still has the content its id names, and HEAD's
// log.md holds the base and the later line only.
func TestPageTailsAfterAbortBatch(t *testing.T) {
	v := newVault(t)
	// A log with room for a group's lines after it (a buffer grows to
	// twice the page).
	humanCommit(t, v, map[string]string{"20-domains/log.md": commit.LogHeader + strings.Repeat("- an older line of the log, long enough\n", 60)})
	g := openGate(t, v)
	publish := func() {
		t.Helper()
		if _, err := g.repo.PublishBatch(func() error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	// First is published by a group: its log.md version stays in memory
	// (the recent objects), the buffer the next group grows in place.
	g.repo.BeginBatch()
	if !g.repo.Batching() {
		t.Fatal("no group started")
	}
	promoteLines(t, g, "20-domains/first.md", "First")
	publish() // and starts the next group
	var dropped []change
	var prev []byte
	inPlace := 0
	for _, n := range []string{"a", "b", "c"} {
		for _, c := range promoteLines(t, g, "20-domains/"+n+".md", "Dropped "+n) {
			dropped = append(dropped, change{Path: c.Path, Content: c.Content})
			if c.Path == "20-domains/log.md" {
				if prev != nil && &prev[0] == &c.Content[0] {
					inPlace++
				}
				prev = c.Content
			}
		}
	}
	if inPlace == 0 {
		t.Fatal("log.md never grew in place: the test does not exercise pageTails")
	}
	want := map[plumbing.Hash]string{}
	for _, c := range dropped {
		want[plumbing.ComputeHash(plumbing.BlobObject, c.Content)] = string(c.Content)
	}
	g.repo.AbortBatch()
	g.repo.BeginBatch()
	promoteLines(t, g, "20-domains/second.md", "Second")
	publish()
	promoteLines(t, g, "20-domains/third.md", "Third")
	promoteLines(t, g, "20-domains/fourth.md", "Fourth")
	g.repo.AbortBatch()
	for _, c := range dropped {
		if h := plumbing.ComputeHash(plumbing.BlobObject, c.Content); want[h] != string(c.Content) {
			t.Errorf("%s of the dropped group changed after it was handed out", c.Path)
		}
	}
	_, head, err := g.repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	log, err := g.repo.WholeFileAt(head, "20-domains/log.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(log)
	if !strings.Contains(s, "[First](first.md)") || !strings.Contains(s, "[Second](second.md)") || strings.Contains(s, "Dropped") || strings.Contains(s, "Third") {
		t.Errorf("log.md at HEAD:\n%s", s)
	}
	checkRepo(t, v)
}
