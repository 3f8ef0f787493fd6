package gate

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Run reacts to a new draft through inotify (well before the backstop
// interval) and returns once its context is cancelled.
func TestRunWatchesAndDrains(t *testing.T) {
	v := newVault(t)
	sd := session(t, v, "w-1")
	g := openGate(t, v)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	passes := make(chan *Summary, 100)
	go func() {
		done <- g.Run(ctx, time.Hour, func(s *Summary, err error) {
			if err == nil {
				passes <- s
			}
		})
	}()
	<-passes // the start-up pass
	put(t, sd, "late.md", "---\ntype: Fact\ntitle: Late\nconfidence: verified\n---\nx\n")
	deadline := time.After(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(sd, ".receipts", "late.md.json")); err == nil {
			break
		}
		select {
		case <-deadline:
			t.Fatal("draft not handled within 20s of being written (inotify)")
		case <-passes:
		case <-time.After(50 * time.Millisecond):
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	checkRepo(t, v)
}
