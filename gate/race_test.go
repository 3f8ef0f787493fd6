package gate

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// An agent keeps writing to its draft through an open descriptor while the
// gate claims and reads it. The gate must either defer the draft (it saw it
// change) or decide on bytes that the file really held at one instant —
// never on a torn mix.
func TestDraftRewrittenWhileRead(t *testing.T) {
	v := newVault(t)
	sd := session(t, v, "race")
	name := filepath.Join(sd, "growing.md")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	head := "---\ntype: Fact\ntitle: Growing\n---\n"
	f.WriteString(head)
	var mu sync.Mutex
	states := map[string]bool{}
	content := []byte(head)
	record := func() {
		s := sha256.Sum256(content)
		states[fmt.Sprintf("%x", s)] = true
	}
	record()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			line := fmt.Sprintf("line %d\n", i)
			mu.Lock()
			f.WriteString(line) // through the fd the agent kept open
			content = append(content, line...)
			record()
			mu.Unlock()
			time.Sleep(200 * time.Microsecond)
		}
	}()
	g := openGate(t, v)
	s := once(t, g)
	close(stop)
	<-done
	f.Close()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("deferred=%d decisions=%d", s.Deferred, len(s.Decisions))
	if s.Deferred == 1 {
		// The gate saw the change; a later pass decides on the final bytes.
		s2 := once(t, g)
		d := decisionFor(t, s2, "growing.md")
		if final := fmt.Sprintf("%x", sha256.Sum256(content)); d.SHA256 != final {
			t.Fatalf("after the writer stopped the gate decided on %s, not the final content %s", d.SHA256, final)
		}
		return
	}
	d := decisionFor(t, s, "growing.md")
	if !states[d.SHA256] {
		t.Fatalf("the gate decided on bytes the file never held (torn read): %s", d.SHA256)
	}
}
