package gate

// Issue 24 item 4: a remote cannot stall or rewrite the gate. Real remotes
// on loopback: a TCP listener that accepts and never answers (a git://
// URL), git daemon, file://.

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// silentRemote listens on loopback, accepts every connection and never
// answers; accepted receives one value per connection.
func silentRemote(t *testing.T) (url string, accepted chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = make(chan struct{}, 64)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			select {
			case accepted <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return fmt.Sprintf("git://%s/vault.git", l.Addr()), accepted
}

// TestSyncSilentRemoteHasDeadline: with a git:// remote that accepts and
// never answers, `gate once` never returned. Now the fetch is cut off at
// remote.timeout: the pass ends, the promotion stays local (queued), and
// the sync status names the deadline.
func TestSyncSilentRemoteHasDeadline(t *testing.T) {
	v := trustVault(t)
	url, accepted := silentRemote(t)
	setPolicy(t, v, remotePolicy(url)+"  timeout: 2s\n")
	g := openGate(t, v)
	put(t, session(t, v, "s1"), "x.md", factDraft("Silent remote one"))
	s := once(t, g) // fails the test after 60s if the pass hangs
	if s.Promoted != 1 {
		t.Fatalf("pass: %+v", s)
	}
	select {
	case <-accepted:
	default:
		t.Fatal("the gate never connected to the remote")
	}
	st, err := ReadSyncStatus(v, "")
	if err != nil {
		t.Fatal(err)
	}
	if st.Ahead < 1 || !strings.Contains(st.LastError, "cut off") || !strings.Contains(st.LastError, "2s") {
		t.Fatalf("sync status after a silent remote: %+v", st)
	}
	if _, err := g.Sync(); !strings.Contains(fmt.Sprint(err), "remote.timeout") {
		t.Fatalf("Sync with a silent remote: %v", err)
	}
}

// TestRunStopsWhileRemoteSilent: `gate run` with a silent remote ignored
// SIGTERM (Run waits for the pass, the pass for the remote). Now the stop
// (Run's context, which SIGTERM cancels in `fedmem gate run`) cuts the
// fetch off: Run returns although remote.timeout is 30 minutes.
func TestRunStopsWhileRemoteSilent(t *testing.T) {
	v := trustVault(t)
	url, accepted := silentRemote(t)
	setPolicy(t, v, remotePolicy(url)+"  timeout: 30m\n")
	g := openGate(t, v)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx, time.Hour, func(*Summary, error) {}) }()
	select {
	case <-accepted: // the first pass is in its fetch
	case err := <-done:
		t.Fatalf("Run returned before it synced: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the gate never connected to the remote")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context was cancelled, with the remote silent")
	}
	st, _ := ReadSyncStatus(v, "")
	if !strings.Contains(st.LastError, "stopping") {
		t.Errorf("sync status should say the fetch was cut off by the stop: %+v", st)
	}
}
