package gate

// Issue 24 item 4: a remote cannot stall or rewrite the gate. Real remotes
// on loopback: a TCP listener that accepts and never answers (a git://
// URL), git daemon, file://.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fedmem/fedmem/gate/audit"
	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/review"
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

func auditText(t *testing.T, g *Gate) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(g.StateDir(), audit.File))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSyncRefusesRewrittenHistory: a gate commit rewritten on the remote
// with its trailers kept (a force-push) was adopted — the decision named
// the forged commit. A remote that drops the commit (a reset) is refused
// too. Both: a clear error, an audit entry, nothing adopted; once the
// remote is put right the gate syncs again.
func TestSyncRefusesRewrittenHistory(t *testing.T) {
	for _, kind := range []string{"file", "git"} {
		t.Run(kind, func(t *testing.T) {
			a, _, r := twoVaults(t, kind)
			g := openGate(t, a)
			s := session(t, a, "s1")
			put(t, s, "x.md", factDraft("Published one"))
			d := decisionFor(t, once(t, g), "x.md")
			published := strings.TrimSpace(gitCLI(t, r.bare, "rev-parse", "HEAD"))
			if d.State != StatePromoted || d.Commit != published {
				t.Fatalf("promotion %+v not published (remote at %s)", d, published)
			}
			// Rewrite: same message (trailers kept), other content.
			human := filepath.Join(t.TempDir(), "human")
			gitCLI(t, filepath.Dir(human), "clone", "-q", r.bare, human)
			os.WriteFile(filepath.Join(human, d.Path), []byte("---\ntype: Fact\ntitle: Published one\n---\nForged content.\n"), 0o644)
			gitCLI(t, human, "-c", "user.name=fedmem", "-c", "user.email=gate@x", "commit", "-q", "-a", "--amend", "-C", "HEAD")
			gitCLI(t, human, "push", "-q", "-f", "origin", "HEAD")
			forged := strings.TrimSpace(gitCLI(t, human, "rev-parse", "HEAD"))
			put(t, s, "y.md", factDraft("Local two"))
			once(t, g)
			st, _ := ReadSyncStatus(a, "")
			if !strings.Contains(st.LastError, "rewrote or dropped") || !strings.Contains(st.LastError, published) {
				t.Fatalf("sync status after a rewrite: %+v", st)
			}
			if !strings.Contains(auditText(t, g), `"sync-refused"`) {
				t.Error("no sync-refused audit entry")
			}
			dd, _ := g.ledger.Load(d.ID)
			if dd.Commit != published {
				t.Errorf("the decision now names %s (forged %s), want %s", dd.Commit, forged, published)
			}
			if b, _ := os.ReadFile(filepath.Join(a, d.Path)); strings.Contains(string(b), "Forged") {
				t.Error("the forged content reached the vault")
			}
			if gitCLI(t, a, "log", "--format=%H", "-n", "3", "HEAD") == "" || strings.Contains(gitCLI(t, a, "log", "--format=%H", "HEAD"), forged) {
				t.Error("the forged commit is in the vault's history")
			}
			// Dropped: the remote reset to before the published commit.
			gitCLI(t, human, "reset", "-q", "--hard", "HEAD~1")
			gitCLI(t, human, "push", "-q", "-f", "origin", "HEAD")
			once(t, g)
			st, _ = ReadSyncStatus(a, "")
			if !strings.Contains(st.LastError, "rewrote or dropped") {
				t.Fatalf("sync status after a reset: %+v", st)
			}
			// Put right: the published commit back on the remote.
			gitCLI(t, a, "push", "-q", "-f", r.bare, published+":refs/heads/"+st.Branch)
			once(t, g)
			checkConverged(t, r, map[string]*Gate{a: g})
		})
	}
}

// TestSyncContradictionHeldAfterReplay: two gates each auto-promote
// "Deployment region" (us-east-1 on A, eu-west-1 on B), each against its
// own HEAD; the sync's replay moved B's to -2.md and both stayed in force.
// Now the replay judges B's note on the remote tip: it is not replayed,
// B's decision is held for review naming A's note, and one note of that
// name is in force on the remote and in both vaults. B's reviewer then
// supersedes A's note: one commit, pushed, one note in force.
func TestSyncContradictionHeldAfterReplay(t *testing.T) {
	a, b, r := twoVaults(t, "file")
	ga, gb := openGate(t, a), openGate(t, b)
	region := func(where string) string {
		return "---\ntype: Fact\ntitle: Deployment region\nsources: [10-projects/src.md]\n---\nProduction runs in " + where + ".\n"
	}
	put(t, session(t, a, "sa"), "region.md", region("us-east-1"))
	da := decisionFor(t, once(t, ga), "region.md") // promoted and pushed
	put(t, session(t, b, "sb"), "region.md", region("eu-west-1"))
	sb := once(t, gb) // promoted on B's HEAD, then the sync replays it
	if d := decisionFor(t, sb, "region.md"); d.State != StatePromoted {
		t.Fatalf("B's pass should promote on its own HEAD first: %+v", d)
	}
	settle(t, r, ga, gb)
	if da.State != StatePromoted {
		t.Fatalf("A: %+v", da)
	}
	for _, v := range []string{a, b} {
		if got := inForceNamed(t, v, "Deployment region"); len(got) != 1 || got[0] != da.Path {
			t.Errorf("%s: notes in force named Deployment region: %v, want only A's %s", v, got, da.Path)
		}
	}
	pend, err := gb.Pending()
	if err != nil || len(pend) != 1 {
		t.Fatalf("B's pending: %+v %v", pend, err)
	}
	db := pend[0]
	if !hasRule(db, decide.RuleConflict) || !hasRule(db, RuleSyncHeld) || !strings.Contains(reasonText(db, decide.RuleConflict), da.Path) || db.Commit != "" {
		t.Fatalf("B's decision after the sync: %+v", db)
	}
	if !strings.Contains(auditText(t, gb), `"sync-held"`) {
		t.Error("no sync-held audit entry")
	}
	checkConverged(t, r, map[string]*Gate{a: ga, b: gb})
	// The reviewer decides: supersede A's note.
	if _, err := gb.Approve(db.ID, "alice"); !errors.Is(err, decide.ErrContradiction) {
		t.Fatalf("approval without a choice: %v", err)
	}
	d, err := gb.ApproveWith(db.ID, "alice", review.ApproveOptions{Supersede: true})
	if err != nil || d.State != StatePromoted {
		t.Fatalf("approve --supersede: %+v %v", d, err)
	}
	if nb, _ := os.ReadFile(filepath.Join(b, d.Path)); !strings.Contains(string(nb), "eu-west-1") {
		t.Errorf("the approved note lost its content:\n%s", nb)
	}
	settle(t, r, ga, gb)
	for _, v := range []string{a, b} {
		if got := inForceNamed(t, v, "Deployment region"); len(got) != 1 || got[0] != d.Path {
			t.Errorf("%s after the supersede: %v, want only %s", v, got, d.Path)
		}
	}
	checkConverged(t, r, map[string]*Gate{a: ga, b: gb})
}

// TestSyncNewRemoteStartsAfresh: the published-commit check is per remote
// branch: when the policy names another remote (a migration), the commits
// published to the old one are not asked of the new one.
func TestSyncNewRemoteStartsAfresh(t *testing.T) {
	a, _, r := twoVaults(t, "file")
	root := t.TempDir()
	bare2 := filepath.Join(root, "vault2.git")
	gitCLI(t, root, "clone", "-q", "--bare", r.bare, bare2) // before the promotion
	g := openGate(t, a)
	put(t, session(t, a, "s1"), "x.md", factDraft("Published to the first"))
	once(t, g)
	if st, _ := ReadSyncStatus(a, ""); st.Published == "" || st.LastError != "" {
		t.Fatalf("first remote: %+v", st)
	}
	setPolicy(t, a, remotePolicy("file://"+bare2))
	once(t, g)
	st, _ := ReadSyncStatus(a, "")
	if st.LastError != "" || st.Ahead != 0 {
		t.Fatalf("the new remote was refused or not pushed to: %+v", st)
	}
	if h, l := strings.TrimSpace(gitCLI(t, bare2, "rev-parse", "HEAD")), strings.TrimSpace(gitCLI(t, a, "rev-parse", "HEAD")); h != l {
		t.Fatalf("new remote at %s, vault at %s", h, l)
	}
}
