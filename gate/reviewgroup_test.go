package gate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fedmem/fedmem/gate/audit"
	"github.com/fedmem/fedmem/gate/review"
	"github.com/fedmem/fedmem/test/testutil"
)

// reviewGroupVault makes a vault with n held drafts of one session (each
// cites no source: held as no-evidence) and returns it with their ids.
func reviewGroupVault(t *testing.T, n int) (string, []string, map[string]bool) {
	t.Helper()
	v := trustVault(t)
	sd := session(t, v, "rg-1")
	want := map[string]bool{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("d%02d.md", i)
		put(t, sd, name, fmt.Sprintf("---\ntype: Fact\ntitle: Held guess %d\n---\nguess number %d\n", i, i))
		want["rg-1/"+name] = true
	}
	g, err := Open(Options{Vault: v, AllowSameUser: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s, err := g.Once()
	if err != nil || s.Pending != n {
		t.Fatalf("pass: %v; %d held of %d: %v", err, s.Pending, n, s.Errors)
	}
	var ids []string
	for _, d := range s.Decisions {
		ids = append(ids, d.ID)
	}
	return v, ids, want
}

// TestHelperReviewGroupProcess is not a test: TestReviewGroupKillNine runs
// the test binary with it to get a gate that approves every held draft in
// one batch and SIGKILLs itself at a point of the batch's group commit.
func TestHelperReviewGroupProcess(t *testing.T) {
	v := os.Getenv("FEDMEM_REVIEWGROUP_VAULT")
	if v == "" {
		t.Skip("helper process for TestReviewGroupKillNine")
	}
	point := os.Getenv("FEDMEM_REVIEWGROUP_FAULT")
	hit, _ := strconv.Atoi(os.Getenv("FEDMEM_REVIEWGROUP_HIT"))
	var mu sync.Mutex
	hits := 0
	groupFault = func(p string) {
		if p != point {
			return
		}
		mu.Lock()
		hits++
		n := hits
		mu.Unlock()
		if n >= max(hit, 1) {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	g, err := Open(Options{Vault: v, AllowSameUser: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	held, err := g.Pending()
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	items := g.ApproveAll(review.IDs(held), "alice", review.ApproveOptions{})
	fmt.Fprintf(os.Stderr, "helper: batch of %d ended, %d failed\n", len(items), review.BatchFailed(items))
	os.Exit(0)
}

// TestReviewGroupKillNine: a gate approving a batch of 50 held drafts is
// killed (SIGKILL, its own process) at each point of the batch's group
// commit — halfway through the approvals, markers written, markers and
// audit synced, pack written, branch moved, index about to be written,
// decisions recorded, decisions synced, cleanups done. A fresh gate (its
// Open recovers) must show all 50 approved (branch moved) or all 50 still
// held (it did not), with HEAD, index and work tree agreeing; the 50 are
// then approved again, and in the end every draft has exactly one decision,
// every promoted draft exactly one commit naming its reviewer, no marker is
// left and the audit log verifies. On the old code a batch was 50 single
// approvals and never reached these points (the helper was not killed).
func TestReviewGroupKillNine(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	const n = 50
	points := []struct {
		name  string
		hit   int
		moved bool // the branch moved before the kill
	}{
		{"review-staged", 25, false}, {"marked", 1, false}, {"intents", 1, false},
		{"packed", 1, false}, {"published", 1, true}, {"index", 1, true},
		{"recorded", 1, true}, {"synced", 1, true}, {"cleaned", 1, true},
	}
	for _, pt := range points {
		t.Run(pt.name, func(t *testing.T) {
			v, held, want := reviewGroupVault(t, n)
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperReviewGroupProcess$")
			cmd.Env = append(os.Environ(), "FEDMEM_REVIEWGROUP_VAULT="+v, "FEDMEM_REVIEWGROUP_FAULT="+pt.name, "FEDMEM_REVIEWGROUP_HIT="+strconv.Itoa(pt.hit))
			out, err := cmd.CombinedOutput()
			ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !(err != nil && ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL) {
				t.Fatalf("helper was not killed at %s: %v\n%s", pt.name, err, out)
			}
			g, err := Open(Options{Vault: v, AllowSameUser: true})
			if err != nil {
				t.Fatal(err)
			}
			// HEAD, index and work tree agree right after the restart.
			checkRepo(t, v)
			pending, err := g.Pending()
			if err != nil {
				t.Fatal(err)
			}
			commits := reviewedCommits(t, v)
			if pt.moved {
				if len(pending) != 0 || len(commits) != n {
					t.Errorf("killed after the branch moved: %d still held, %d approval commits; want 0 and %d", len(pending), len(commits), n)
				}
			} else if len(pending) != n || len(commits) != 0 {
				t.Errorf("killed before the branch moved: %d held, %d approval commits; want %d and 0", len(pending), len(commits), n)
			}
			// The reviewer approves what is still held again.
			if len(pending) > 0 {
				items := g.ApproveAll(review.IDs(pending), "bob", review.ApproveOptions{})
				if f := review.BatchFailed(items); f != 0 {
					t.Fatalf("second batch: %d of %d failed: %+v", f, len(items), items)
				}
			}
			// Approving the first batch's ids again decides nothing twice.
			for _, it := range g.ApproveAll(held, "carol", review.ApproveOptions{}) {
				if it.Error == "" {
					t.Errorf("%s approved a second time", it.ID)
				}
			}
			g.Close()
			finishAfterKill(t, v)
			checkExactlyOnce(t, v, want)
			who := "alice"
			if !pt.moved {
				who = "bob"
			}
			commits = reviewedCommits(t, v)
			if len(commits) != n {
				t.Errorf("%d approval commits, want %d", len(commits), n)
			}
			decs, err := (&Gate{state: DefaultStateDir(v)}).Decisions()
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range decs {
				if d.State != StatePromoted || d.Reviewer != who || commits[d.ID] != who {
					t.Errorf("%s: %s by %q, commit trailer names %q; want promoted by %s", d.ID, d.State, d.Reviewer, commits[d.ID], who)
				}
			}
			if got := auditReviews(t, v); got != n {
				t.Errorf("%d review audit entries for promotions, want %d", got, n)
			}
		})
	}
}

// reviewedCommits maps each draft id with an approval commit on the branch
// to the reviewer its Fedmem-Reviewer trailer names (a draft committed
// twice is an error).
func reviewedCommits(t *testing.T, v string) map[string]string {
	t.Helper()
	out := map[string]string{}
	log := gitCLI(t, v, "log", "--format=%(trailers:key=Fedmem-Draft,valueonly,separator=)|%(trailers:key=Fedmem-Reviewer,valueonly,separator=)")
	for _, l := range strings.Split(log, "\n") {
		id, who, _ := strings.Cut(strings.TrimSpace(l), "|")
		if id == "" || who == "" {
			continue
		}
		if _, dup := out[id]; dup {
			t.Errorf("draft %s has two approval commits", id)
		}
		out[id] = strings.TrimSpace(who)
	}
	return out
}

// auditReviews counts the audit log's review entries that promoted a
// draft.
func auditReviews(t *testing.T, v string) int {
	t.Helper()
	f, err := os.Open(filepath.Join(DefaultStateDir(v), audit.File))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ids := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e struct {
			Kind string            `json:"kind"`
			Data map[string]string `json:"data"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Kind == "review" && e.Data["state"] == StatePromoted {
			ids[e.Data["id"]] = true
		}
	}
	return len(ids)
}

// TestBatchApprovalOnePack: a batch of 30 approvals is one group commit —
// one new pack and no loose object, 30 commits each naming its draft and
// reviewer — where it was 30 commits of loose objects, each with its own
// ref update and index write.
func TestBatchApprovalOnePack(t *testing.T) {
	v, held, _ := reviewGroupVault(t, 30)
	packs := func() int {
		m, _ := filepath.Glob(filepath.Join(v, ".git", "objects", "pack", "*.pack"))
		return len(m)
	}
	gitCLI(t, v, "repack", "-a", "-d", "-q")
	before := packs()
	g, err := Open(Options{Vault: v, AllowSameUser: true})
	if err != nil {
		t.Fatal(err)
	}
	items := g.ApproveAll(held, "alice", review.ApproveOptions{})
	g.Close()
	if f := review.BatchFailed(items); f != 0 {
		t.Fatalf("%d of %d failed: %+v", f, len(items), items)
	}
	if got := packs(); got != before+1 {
		t.Errorf("%d new packs for one batch, want 1", got-before)
	}
	if loose := gitCLI(t, v, "count-objects"); !strings.HasPrefix(loose, "0 objects") {
		t.Errorf("the batch wrote loose objects: %s", loose)
	}
	commits := reviewedCommits(t, v)
	for _, id := range held {
		if commits[id] != "alice" {
			t.Errorf("%s: approval commit names %q, want alice", id, commits[id])
		}
	}
	checkRepo(t, v)
	if left, _ := os.ReadDir(filepath.Join(DefaultStateDir(v), committingDir)); len(left) != 0 {
		t.Errorf("committing markers left: %v", left)
	}
}

// TestGateRunKillNineBatchApproval: a real `fedmem gate run` serving a
// real `fedmem review approve --all --yes` of 50 held drafts is killed
// with SIGKILL at (or just after) the k-th approval commit of the batch (k
// drawn from a logged seed; the last one reaches into the group's
// publication); a fresh `gate run` starts
// (its Open recovers the batch), the reviewer runs the same command again
// for whatever is still held, and in the end every draft has exactly one
// decision and one commit naming the reviewer, the repository is clean,
// no marker is left and the audit log verifies.
func TestGateRunKillNineBatchApproval(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	bin := fedmemBin(t)
	rng := testutil.Seed(t)
	const n = 50
	v, _, want := reviewGroupVault(t, n)
	me := strconv.Itoa(os.Geteuid())
	setPolicy(t, v, strings.Replace(trustPolicy(), "reviewers: [alice]", "reviewers: [\""+me+"\"]", 1))
	var mu sync.Mutex
	var gateOut strings.Builder
	start := func(killAt string, k int) (*exec.Cmd, chan struct{}, chan struct{}) {
		cmd := exec.Command(bin, "gate", "run", "--vault", v, "--allow-same-user", "--interval", "200ms")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		up, hit := make(chan struct{}), make(chan struct{})
		go func() {
			var upOnce, hitOnce sync.Once
			seen := 0
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				l := sc.Text()
				mu.Lock()
				gateOut.WriteString(l + "\n")
				mu.Unlock()
				if strings.Contains(l, `"msg":"gate running"`) {
					upOnce.Do(func() { close(up) })
				}
				if killAt != "" && strings.Contains(l, killAt) {
					if seen++; seen >= k {
						hitOnce.Do(func() {
							cmd.Process.Signal(syscall.SIGKILL) // at the event, not after a wait
							close(hit)
						})
					}
				}
			}
		}()
		return cmd, up, hit
	}
	wait := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(2 * time.Minute):
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("%s: not within 2 minutes\n%s", what, gateOut.String())
		}
	}
	approveAll := func() (int, string) {
		out, err := exec.Command(bin, "review", "--vault", v, "approve", "--all", "--yes").CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(out)
	}
	// The k-th in-memory commit of the batch; the kill lands at or after
	// it (the log is read through a pipe): during the approvals, or in
	// the group's publication when k is the last.
	killAt, k := `"msg":"committed"`, 1+rng.Intn(n)
	if rng.Intn(3) == 0 {
		k = n
	}
	t.Logf("kill at %s #%d", killAt, k)
	g1, up, hit := start(killAt, k)
	wait(up, "first gate up")
	go exec.Command(bin, "review", "--vault", v, "approve", "--all", "--yes").Run() // its connection dies with the gate
	wait(hit, "kill point")
	g1.Wait()

	g2, up, _ := start("", 0)
	wait(up, "second gate up")
	code, out := approveAll()
	// What the first gate published is recovered by the second's Open;
	// the rest is still held and approved now (or nothing is left).
	if code != 0 && !strings.Contains(out, "no held draft matches") {
		t.Fatalf("second batch: exit %d\n%s", code, out)
	}
	g2.Process.Signal(syscall.SIGTERM)
	if err := g2.Wait(); err != nil {
		t.Fatalf("gate run after SIGTERM: %v\n%s", err, gateOut.String())
	}
	checkExactlyOnce(t, v, want)
	commits := reviewedCommits(t, v)
	if len(commits) != n {
		t.Errorf("%d approval commits, want %d", len(commits), n)
	}
	for id, who := range commits {
		if who != me && who != "root" && !strings.HasPrefix(who, "uid-") {
			t.Errorf("%s approved by %q", id, who)
		}
	}
	if got := auditReviews(t, v); got != n {
		t.Errorf("%d review audit entries for promotions, want %d", got, n)
	}
}
