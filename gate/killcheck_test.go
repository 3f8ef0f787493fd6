package gate

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/fedmem/fedmem/gate/audit"
)

// The end state every kill -9 test checks once a fresh gate has finished
// (TestKillNineLoop, TestGateRunKillNineBurst, TestGroupCommitKillNine,
// TestGroupPipelineKillNine, TestClaimJournalKillNine).

// checkDecidedOnce: no claim is left, every draft of want (session/name)
// has exactly one decision and nothing else was decided, every promoted
// content has exactly one commit and every promotion commit a promoted
// decision, the repository passes fsck and is clean, and the audit log
// verifies. It returns how many distinct contents were promoted.
func checkDecidedOnce(t *testing.T, v string, want map[string]bool) int {
	t.Helper()
	state := DefaultStateDir(v)
	if left, _ := os.ReadDir(filepath.Join(state, claimsDir)); len(left) != 0 {
		t.Errorf("claims left after a clean run: %v", left)
	}
	decs, err := (&Gate{state: state}).Decisions()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	promoted := map[string]bool{}
	for _, d := range decs {
		seen[d.Session+"/"+d.Draft]++
		if d.State == StatePromoted && d.DuplicateOf == "" {
			promoted[d.SHA256] = true
		}
	}
	for k := range want {
		if seen[k] != 1 {
			t.Errorf("%s has %d decisions; want exactly 1", k, seen[k])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d decided drafts, %d submitted", len(seen), len(want))
	}
	log := gitCLI(t, v, "log", "--format=%(trailers:key=Fedmem-Draft-Sha256,valueonly)")
	commits := map[string]int{}
	for _, l := range strings.Fields(log) {
		commits[l]++
	}
	for sum, n := range commits {
		if n != 1 {
			t.Errorf("draft %s committed %d times", sum[:12], n)
		}
		if !promoted[sum] {
			t.Errorf("commit for %s has no promoted decision", sum[:12])
		}
	}
	if len(commits) != len(promoted) {
		t.Errorf("%d promotion commits for %d promoted drafts", len(commits), len(promoted))
	}
	checkRepo(t, v)
	if _, probs, err := audit.Verify(state); err != nil {
		t.Errorf("audit after the kill: %v %v", err, probs)
	}
	return len(promoted)
}

// checkInboxOnlyReceipts: the session folder of every draft of want holds
// nothing but its .receipts.
func checkInboxOnlyReceipts(t *testing.T, v string, want map[string]bool) {
	t.Helper()
	sessions := map[string]bool{}
	for k := range want {
		sess, _, _ := strings.Cut(k, "/")
		sessions[sess] = true
	}
	for s := range sessions {
		ents, _ := os.ReadDir(filepath.Join(v, "90-inbox", s))
		for _, e := range ents {
			if e.Name() != ".receipts" {
				t.Errorf("%s/%s left in the inbox", s, e.Name())
			}
		}
	}
}

// checkExactlyOnce is what the group-commit kill tests want:
// checkDecidedOnce, and no committing marker left, something promoted (the
// group commit was exercised), every pack whole, and each draft of want
// gone from the inbox with its receipt written.
func checkExactlyOnce(t *testing.T, v string, want map[string]bool) {
	t.Helper()
	if left, _ := os.ReadDir(filepath.Join(DefaultStateDir(v), committingDir)); len(left) != 0 {
		t.Errorf("committing markers left after a clean run: %v", left)
	}
	if checkDecidedOnce(t, v, want) == 0 {
		t.Errorf("nothing was promoted: the group commit was not exercised")
	}
	checkPacks(t, v)
	for k := range want {
		sess, name, _ := strings.Cut(k, "/")
		if _, err := os.Stat(filepath.Join(v, "90-inbox", sess, name)); err == nil {
			t.Errorf("%s left in the inbox", k)
		}
		if _, err := os.Stat(filepath.Join(v, "90-inbox", sess, ".receipts", name+".json")); err != nil {
			t.Errorf("%s has no receipt: %v", k, err)
		}
	}
}

// runGroupHelper runs TestHelperGroupProcess on v, set to SIGKILL itself
// at the hit-th time it reaches point (hit 0: the first) in groups of size
// drafts (size 0: the gate's own), and says whether SIGKILL ended it.
func runGroupHelper(t *testing.T, v, point string, hit, size int) (out []byte, killed bool, err error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperGroupProcess$")
	cmd.Env = append(os.Environ(), "FEDMEM_GROUP_HELPER_VAULT="+v, "FEDMEM_GROUP_HELPER_FAULT="+point)
	if hit > 0 {
		cmd.Env = append(cmd.Env, "FEDMEM_GROUP_HELPER_HIT="+strconv.Itoa(hit))
	}
	if size > 0 {
		cmd.Env = append(cmd.Env, "FEDMEM_GROUP_HELPER_SIZE="+strconv.Itoa(size))
	}
	out, err = cmd.CombinedOutput()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	killed = err != nil && ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
	return out, killed, err
}

// finishAfterKill runs two fresh gate passes over v; each must end
// without an error.
func finishAfterKill(t *testing.T, v string) {
	t.Helper()
	for i := 0; i < 2; i++ {
		g, err := Open(Options{Vault: v, AllowSameUser: true})
		if err != nil {
			t.Fatal(err)
		}
		s, err := g.Once()
		g.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Errors) > 0 {
			t.Fatalf("pass %d after the kill: %v", i, s.Errors)
		}
	}
}
