package gate

import (
	"fmt"
	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault/repo"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestHelperGroupProcess is not a test: TestGroupCommitKillNine runs the
// test binary with it to get a gate that SIGKILLs itself at a point of a
// group commit (groupFault).
func TestHelperGroupProcess(t *testing.T) {
	v := os.Getenv("FEDMEM_GROUP_HELPER_VAULT")
	if v == "" {
		t.Skip("helper process for TestGroupCommitKillNine")
	}
	point := os.Getenv("FEDMEM_GROUP_HELPER_FAULT")
	if point == "index-shared" {
		repo.IndexMaxDelta = 1 // every index write makes a new shared file
	}
	// Kill at the hit-th time the point is reached (1 by default), in
	// groups of size drafts (default: the gate's own).
	hit, _ := strconv.Atoi(os.Getenv("FEDMEM_GROUP_HELPER_HIT"))
	if size, _ := strconv.Atoi(os.Getenv("FEDMEM_GROUP_HELPER_SIZE")); size > 0 {
		groupMaxDrafts = size
	}
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
	// Spare files (TestGroupKillNineSpares): the pass writes into them.
	spares, _ := strconv.Atoi(os.Getenv("FEDMEM_GROUP_HELPER_SPARES"))
	g, err := Open(Options{Vault: v, AllowSameUser: true, Spares: spares})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	if spares > 0 {
		g.spares.Fill(spares, func() bool { return false })
	}
	if id := os.Getenv("FEDMEM_GROUP_HELPER_APPROVE"); id != "" {
		// A review's approval instead of a pass (TestReviewKillNineIndex).
		if _, err := g.Approve(id, "alice"); err != nil {
			fmt.Fprintln(os.Stderr, "helper: approve:", err)
			os.Exit(4)
		}
		os.Exit(0)
	}
	g.Once()
	os.Exit(0)
}

// TestGroupCommitKillNine kills the gate (SIGKILL, its own process) at each
// point of a group commit — markers and claims synced, pack written, branch
// moved, index about to be written (split part, or a new shared file),
// decisions recorded — then lets a fresh gate finish: every draft is
// decided exactly once, every promoted draft has exactly one commit, the
// repository passes `git fsck --strict` and is clean, the audit log
// verifies, and the inbox holds only receipts.
func TestGroupCommitKillNine(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	// index: the branch moved and the work tree is written, the index not
	// yet; index-shared: a new sharedindex file is durable, the index that
	// would name it not yet renamed in.
	// pack-idx: the group's .idx is in place, its .pack not yet.
	for _, point := range []string{"intents", "pack-idx", "packed", "published", "index", "index-shared", "recorded"} {
		t.Run(point, func(t *testing.T) {
			v := trustVault(t)
			want := map[string]bool{}
			for _, sess := range []string{"g-1", "g-2"} {
				sd := session(t, v, sess)
				for i := 0; i < 6; i++ {
					var body string
					switch i % 3 {
					case 0, 1:
						body = fmt.Sprintf("---\ntype: Fact\ntitle: Fact %s %d\nsources: [10-projects/src.md]\n---\nfact %d\n", sess, i, i)
					case 2:
						body = fmt.Sprintf("---\ntype: Fact\ntitle: Guess %s %d\n---\nguess\n", sess, i)
					}
					name := fmt.Sprintf("d%02d.md", i)
					put(t, sd, name, body)
					want[sess+"/"+name] = true
				}
			}
			out, killed, err := runGroupHelper(t, v, point, 0, 0)
			if !killed {
				t.Fatalf("helper was not killed at %s: %v\n%s", point, err, out)
			}
			finishAfterKill(t, v)
			checkExactlyOnce(t, v, want)
		})
	}
}

// TestGroupPipelineKillNine kills the gate inside its pipelined group
// commit: small groups (3 drafts), so that the end of one group (second
// barrier, receipts, removal of claims and of the group marker) runs in the
// background while the next group is decided, and a SIGKILL at the n-th
// time each point is reached, n and the order drawn from a logged seed
// (FEDMEM_TEST_SEED replays one). A fresh gate then finishes: every draft
// decided exactly once, one commit per promoted draft, no claim or marker
// left, audit log verified.
func TestGroupPipelineKillNine(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	rng := testutil.Seed(t)
	points := []string{"marked", "intents", "pack-idx", "packed", "published", "index", "index-shared", "recorded", "synced", "cleaned"}
	rng.Shuffle(len(points), func(i, j int) { points[i], points[j] = points[j], points[i] })
	for round, point := range points {
		hit := 1 + rng.Intn(5)
		t.Run(fmt.Sprintf("%d-%s-%d", round, point, hit), func(t *testing.T) {
			v := trustVault(t)
			want := map[string]bool{}
			for _, sess := range []string{"p-1", "p-2", "p-3"} {
				sd := session(t, v, sess)
				for i := 0; i < 6; i++ {
					body := fmt.Sprintf("---\ntype: Fact\ntitle: Fact %s %d\nsources: [10-projects/src.md]\n---\nfact %d\n", sess, i, i)
					if i%3 == 2 {
						body = fmt.Sprintf("---\ntype: Fact\ntitle: Guess %s %d\n---\nguess\n", sess, i)
					}
					name := fmt.Sprintf("d%02d.md", i)
					put(t, sd, name, body)
					want[sess+"/"+name] = true
				}
			}
			out, killed, err := runGroupHelper(t, v, point, hit, 3)
			if err != nil && !killed {
				t.Fatalf("helper failed: %v\n%s", err, out)
			}
			t.Logf("killed at %s #%d: %v", point, hit, killed)
			finishAfterKill(t, v)
			checkExactlyOnce(t, v, want)
		})
	}
}

// TestExternalRepack: `git gc` (which `git commit` may start in the
// background) moves every object into a new pack and deletes the old packs
// and loose objects while the gate is open. go-git lists the packs once;
// without a reload on a miss, every later lookup (the draft's source at
// HEAD, the branch's commit) failed with "object not found".
func TestExternalRepack(t *testing.T) {
	v := trustVault(t)
	g, err := Open(Options{Vault: v, AllowSameUser: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	promote := func(name string) {
		t.Helper()
		put(t, session(t, v, "r-1"), name, "---\ntype: Fact\ntitle: Repack "+name+"\nsources: [10-projects/src.md]\n---\nfact\n")
		s, err := g.Once()
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Errors) > 0 || s.Promoted != 1 {
			t.Fatalf("%s: promoted %d, errors %v", name, s.Promoted, s.Errors)
		}
	}
	promote("a.md")
	gitCLI(t, v, "repack", "-a", "-d", "-q")
	gitCLI(t, v, "prune-packed")
	if loose := gitCLI(t, v, "count-objects"); !strings.HasPrefix(loose, "0 objects") {
		t.Fatalf("objects still loose after the repack: %s", loose)
	}
	promote("b.md")
	checkRepo(t, v)
}

// checkPacks runs `git verify-pack -v` on every pack of the vault and
// fails on a leftover of writePack (a temporary file, an .idx without its
// pack); it returns how many objects are stored as deltas.
func checkPacks(t *testing.T, v string) int {
	t.Helper()
	dir := filepath.Join(v, ".git", "objects", "pack")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	deltas := 0
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, repo.PackTmpPrefix) {
			t.Errorf("temporary pack file left: %s", n)
		}
		if !strings.HasSuffix(n, ".idx") {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, strings.TrimSuffix(n, ".idx")+".pack")); err != nil {
			t.Errorf("%s has no pack: %v", n, err)
			continue
		}
		out := gitCLI(t, v, "verify-pack", "-v", filepath.Join(dir, n))
		for _, l := range strings.Split(out, "\n") {
			// "<id> <type> <size> <size in pack> <offset> <depth> <base>"
			if f := strings.Fields(l); len(f) == 7 && len(f[0]) == 40 {
				deltas++
			}
		}
	}
	return deltas
}

// TestGroupPackGitCLI: the packs a group commit writes (with their own
// index and deltas against the previous version of a tree or page) are
// read back the same by git and by a fresh go-git: `git fsck --full
// --strict` and `git verify-pack -v` accept them, and every file at HEAD
// reads the same through `git cat-file` and the gate's own reader.
func TestGroupPackGitCLI(t *testing.T) {
	v := trustVault(t)
	for _, sess := range []string{"k-1", "k-2"} {
		sd := session(t, v, sess)
		for i := 0; i < 12; i++ {
			put(t, sd, fmt.Sprintf("d%02d.md", i), fmt.Sprintf("---\ntype: Fact\ntitle: Pack %s %d\nsources: [10-projects/src.md]\n---\nfact %d of %s\n", sess, i, i, sess))
		}
	}
	g, err := Open(Options{Vault: v, AllowSameUser: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := g.Once()
	g.Close()
	if err != nil || len(s.Errors) > 0 || s.Promoted != 24 {
		t.Fatalf("pass: %v %v, promoted %d of 24", err, s, s.Promoted)
	}
	checkRepo(t, v)
	gitCLI(t, v, "fsck", "--full", "--strict", "--no-dangling", "--no-progress")
	if n := checkPacks(t, v); n == 0 {
		t.Errorf("no object of the group's pack is a delta: the delta encoding was not exercised")
	}
	if n := strings.Count(gitCLI(t, v, "log", "--format=%H"), "\n"); n < 24 {
		t.Errorf("git log shows %d commits, want at least 24", n)
	}
	r, err := openRepo(v, filepath.Join(t.TempDir(), "intent"))
	if err != nil {
		t.Fatal(err)
	}
	_, head, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	files := strings.Fields(gitCLI(t, v, "ls-tree", "-r", "--name-only", "HEAD"))
	for _, p := range files {
		want := gitCLI(t, v, "cat-file", "blob", "HEAD:"+p)
		got, err := r.WholeFileAt(head, p)
		if err != nil || string(got) != want {
			t.Errorf("%s: gate reads %q (%v), git %q", p, got, err, want)
		}
	}
	for _, p := range []string{"20-domains", "no/such.md", "20-domains/nope.md"} {
		if got, err := r.WholeFileAt(head, p); err != nil || got != nil {
			t.Errorf("%s: gate reads %q (%v), want nothing", p, got, err)
		}
	}
}
