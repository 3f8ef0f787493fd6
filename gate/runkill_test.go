package gate

import (
	"bufio"
	"fmt"
	"github.com/fedmem/fedmem/test/testutil"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fedmemBin is bin/fedmem: from $FEDMEM_BIN, else built for the test.
func fedmemBin(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("FEDMEM_BIN"); d != "" {
		return filepath.Join(d, "fedmem")
	}
	out := filepath.Join(t.TempDir(), "fedmem")
	cmd := exec.Command("go", "build", "-o", out, "../cmd/fedmem")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/fedmem: %v\n%s", err, b)
	}
	return out
}

// TestGateRunKillNineBurst: a real `fedmem gate run` process handles a burst
// from many concurrent writers (each its own session, drafts renamed into
// place) and is killed with SIGKILL mid-burst, several times — at a random
// claim, sometimes a random instant later (inside a decision or a group
// commit) — and restarted each time while the writers go on. Once every
// draft has a receipt: each draft has exactly one decision, each promoted
// content exactly one commit, the repository passes fsck and is clean, the
// audit log verifies and the inbox holds only receipts.
func TestGateRunKillNineBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	bin := fedmemBin(t)
	rng := testutil.Seed(t)
	v := trustVault(t)
	const writers, per = 8, 20
	want := map[string]bool{}
	dirs := make([]string, writers)
	for w := range dirs {
		sess := fmt.Sprintf("b-%d", w)
		dirs[w] = session(t, v, sess)
		for i := 0; i < per; i++ {
			want[fmt.Sprintf("%s/d%02d.md", sess, i)] = true
		}
	}
	body := func(sess string, i int) string {
		switch i % 4 {
		case 0, 1: // promoted
			return fmt.Sprintf("---\ntype: Fact\ntitle: Fact %s %d\nsources: [10-projects/src.md]\n---\nfact %d\n", sess, i, i)
		case 2: // held
			return fmt.Sprintf("---\ntype: Fact\ntitle: Guess %s %d\n---\nguess\n", sess, i)
		default: // rejected, the same bytes in every session
			return "---\ntype: Fact\ntype: Fact\n---\ndup key\n"
		}
	}

	var gmu sync.Mutex
	var proc *exec.Cmd
	var gateOut strings.Builder
	claimed := make(chan struct{}, 1024)
	var ready chan struct{} // closed once this gate process has its signal handler ("gate running")
	start := func() {
		up := make(chan struct{})
		ready = up
		var once sync.Once
		cmd := exec.Command(bin, "gate", "run", "--vault", v, "--allow-same-user", "--interval", "200ms")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				l := sc.Text()
				gmu.Lock()
				gateOut.WriteString(l + "\n")
				gmu.Unlock()
				if strings.Contains(l, `"msg":"gate running"`) {
					once.Do(func() { close(up) })
				}
				if strings.Contains(l, `"msg":"claimed"`) {
					select {
					case claimed <- struct{}{}:
					default:
					}
				}
			}
		}()
		proc = cmd
	}

	// The writers: each session writes its drafts under a temporary name
	// the gate ignores and renames them into place, a chunk per round,
	// all sessions at once while a fresh gate starts.
	write := func(from, to int) {
		var wg sync.WaitGroup
		for w := range dirs {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				sess := fmt.Sprintf("b-%d", w)
				for i := from; i < to; i++ {
					name := fmt.Sprintf("d%02d.md", i)
					tmp := filepath.Join(dirs[w], name+".tmp")
					if err := os.WriteFile(tmp, []byte(body(sess, i)), 0o644); err != nil {
						t.Error(err)
						return
					}
					if err := os.Rename(tmp, filepath.Join(dirs[w], name)); err != nil {
						t.Error(err)
						return
					}
				}
			}(w)
		}
		wg.Wait()
	}

	// Kill rounds: kill at the k-th claim this gate process makes (k at
	// most the drafts written in the round), half the time a random
	// instant after it.
	const rounds = 5
	var writing sync.WaitGroup
	for round := 0; round < rounds; round++ {
		for len(claimed) > 0 {
			<-claimed
		}
		start()
		writing.Add(1)
		go func(from, to int) {
			defer writing.Done()
			write(from, to)
		}(round*per/rounds, (round+1)*per/rounds)
		k := 1 + rng.Intn(writers*per/rounds)
		extra := time.Duration(0)
		if rng.Intn(2) == 0 {
			extra = time.Duration(rng.Intn(300)) * time.Millisecond
		}
		deadline := time.After(2 * time.Minute)
		for n := 0; n < k; n++ {
			select {
			case <-claimed:
			case <-deadline:
				proc.Process.Kill()
				t.Fatalf("round %d: gate made %d of %d claims in 2 minutes\n%s", round, n, k, gateOut.String())
			}
		}
		time.Sleep(extra) // a random kill instant, not a wait for a result
		proc.Process.Signal(syscall.SIGKILL)
		proc.Wait()
		t.Logf("round %d: killed at claim %d + %v", round, k, extra)
	}
	writing.Wait()

	// A last gate finishes everything; wait for every receipt.
	start()
	receipts := func() int {
		n := 0
		for w := range dirs {
			ents, _ := os.ReadDir(filepath.Join(dirs[w], ".receipts"))
			n += len(ents)
		}
		return n
	}
	deadline := time.Now().Add(3 * time.Minute)
	for receipts() < len(want) {
		if time.Now().After(deadline) {
			proc.Process.Kill()
			t.Fatalf("%d of %d receipts after 3 minutes\n%s", receipts(), len(want), gateOut.String())
		}
		select {
		case <-claimed:
		case <-time.After(100 * time.Millisecond):
		}
	}
	// SIGTERM once the last gate handles it: every receipt may have been
	// written by the killed gates already, before this one is up.
	select {
	case <-ready:
	case <-time.After(time.Minute):
		proc.Process.Kill()
		t.Fatalf("the last gate never said it was running\n%s", gateOut.String())
	}
	proc.Process.Signal(syscall.SIGTERM)
	if err := proc.Wait(); err != nil {
		t.Fatalf("gate run after SIGTERM: %v\n%s", err, gateOut.String())
	}

	if n := checkDecidedOnce(t, v, want); n != writers*per/2 {
		t.Errorf("%d drafts promoted; %d were promotable", n, writers*per/2)
	}
	checkInboxOnlyReceipts(t, v, want)
}
