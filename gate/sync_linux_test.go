package gate

import (
	"fmt"
	"net"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Remote sync against real servers on loopback: a bare repository over
// file://, git daemon (git://) and git http-backend behind net/http/cgi.

type remoteSrv struct {
	bare string // the bare repository
	url  string
	stop func()
}

func gitExecPath(t *testing.T) string {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// freePort asks the kernel for a free loopback port.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startDaemon runs git daemon for root on port and waits until it accepts
// connections (polling the port; the process exiting fails the test).
func startDaemon(t *testing.T, root string, port int) func() {
	t.Helper()
	// git-daemon itself, not the `git daemon` wrapper: killing the wrapper
	// would leave the server listening.
	cmd := exec.Command(filepath.Join(gitExecPath(t), "git-daemon"), "--reuseaddr", "--export-all", "--enable=receive-pack", "--base-path="+root,
		"--listen=127.0.0.1", fmt.Sprintf("--port=%d", port), root)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	if err := cmd.Start(); err != nil {
		t.Fatalf("git daemon: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("git daemon exited before listening on %d", port)
		case <-time.After(20 * time.Millisecond): // poll interval, not a wait for an outcome
		}
		if i > 500 {
			t.Fatalf("git daemon not listening on %d after 10s", port)
		}
	}
	stop := func() {
		cmd.Process.Kill()
		<-exited
	}
	t.Cleanup(stop)
	return stop
}

// newRemote makes a bare clone of v served by kind.
func newRemote(t *testing.T, v, kind string) *remoteSrv {
	t.Helper()
	root := t.TempDir()
	bare := filepath.Join(root, "vault.git")
	gitCLI(t, root, "clone", "-q", "--bare", v, bare)
	s := &remoteSrv{bare: bare, stop: func() {}}
	switch kind {
	case "file":
		s.url = "file://" + bare
	case "git":
		port := freePort(t)
		s.stop = startDaemon(t, root, port)
		s.url = fmt.Sprintf("git://127.0.0.1:%d/vault.git", port)
	case "http":
		gitCLI(t, bare, "config", "http.receivepack", "true")
		h := &cgi.Handler{Path: filepath.Join(gitExecPath(t), "git-http-backend"),
			Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1"}}
		srv := httptest.NewUnstartedServer(h)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv.Listener = l
		srv.Start()
		t.Cleanup(srv.Close)
		s.url = srv.URL + "/vault.git"
	}
	return s
}

func remotePolicy(url string) string {
	return trustPolicy() + "remote:\n  url: " + url + "\n"
}

// twoVaults: vault A with a trust policy naming the remote, the remote made
// from it, and vault B cloned from the remote.
func twoVaults(t *testing.T, kind string) (a, b string, r *remoteSrv) {
	t.Helper()
	a = trustVault(t)
	// The URL is only known once the server runs; the policy names it, so
	// the remote is made first and the policy commit pushed to it.
	r = newRemote(t, a, kind)
	setPolicy(t, a, remotePolicy(r.url))
	gitCLI(t, a, "push", "-q", r.bare, "HEAD:"+strings.TrimSpace(gitCLI(t, a, "symbolic-ref", "--short", "HEAD")))
	b = filepath.Join(t.TempDir(), "vault")
	gitCLI(t, filepath.Dir(b), "clone", "-q", r.bare, b)
	return a, b, r
}

func factDraft(title string) string {
	return fmt.Sprintf("---\ntype: Fact\ntitle: %s\nsources: [10-projects/src.md]\n---\nThe source describes %s.\n", title, title)
}

// remoteLog returns every commit of the remote branch: hash, parents, and
// its Fedmem-Draft id.
type remoteCommit struct {
	hash, draft string
	parents     int
}

func remoteLog(t *testing.T, bare string) []remoteCommit {
	out := gitCLI(t, bare, "log", "--format=%H %P%x1f%(trailers:key=Fedmem-Draft,valueonly,separator=%x2c)%x1e", "HEAD")
	var cs []remoteCommit
	for _, rec := range strings.Split(out, "\x1e") {
		rec = strings.TrimSpace(rec)
		if rec == "" {
			continue
		}
		head, draft, _ := strings.Cut(rec, "\x1f")
		f := strings.Fields(head)
		cs = append(cs, remoteCommit{hash: f[0], parents: len(f) - 1, draft: strings.TrimSpace(draft)})
	}
	return cs
}

func fsckStrict(t *testing.T, dir string) {
	t.Helper()
	gitCLI(t, dir, "fsck", "--strict", "--no-progress")
}

func statusClean(t *testing.T, v string) {
	t.Helper()
	if out := gitCLI(t, v, "status", "--porcelain"); strings.TrimSpace(out) != "" {
		t.Errorf("%s: git status not clean:\n%s", v, out)
	}
}

// checkConverged asserts the two-gate invariants: both vaults at the remote
// tip, every promotion on the remote exactly once (by Fedmem-Draft), every
// promoted decision pointing at the commit that holds it, history linear,
// fsck --strict clean on all three, work trees clean.
func checkConverged(t *testing.T, r *remoteSrv, gates map[string]*Gate) {
	t.Helper()
	tip := strings.TrimSpace(gitCLI(t, r.bare, "rev-parse", "HEAD"))
	log := remoteLog(t, r.bare)
	byDraft := map[string]string{}
	for _, c := range log {
		if c.parents > 1 {
			t.Errorf("remote commit %s is a merge: history not linear", c.hash)
		}
		if c.draft == "" {
			continue
		}
		if prev, dup := byDraft[c.draft]; dup {
			t.Errorf("draft %s promoted twice on the remote: %s and %s", c.draft, prev, c.hash)
		}
		byDraft[c.draft] = c.hash
	}
	promoted := 0
	for v, g := range gates {
		if h := strings.TrimSpace(gitCLI(t, v, "rev-parse", "HEAD")); h != tip {
			t.Errorf("%s at %s, remote at %s", v, h, tip)
		}
		ds, err := g.Decisions()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.State != StatePromoted || d.DuplicateOf != "" {
				continue
			}
			promoted++
			if byDraft[d.ID] == "" {
				t.Errorf("promotion %s (%s) is not on the remote", d.ID, d.Path)
			} else if byDraft[d.ID] != d.Commit {
				t.Errorf("decision %s names commit %s; the remote holds it in %s", d.ID, d.Commit, byDraft[d.ID])
			}
			if _, err := os.Stat(filepath.Join(v, d.Path)); err != nil {
				t.Errorf("promoted note %s missing from %s's work tree: %v", d.Path, v, err)
			}
		}
		st, err := ReadSyncStatus(v, "")
		if err != nil {
			t.Fatal(err)
		}
		if st.Ahead != 0 || st.Behind != 0 || st.LastError != "" {
			t.Errorf("%s sync status %+v", v, st)
		}
		statusClean(t, v)
		fsckStrict(t, v)
	}
	if promoted != len(byDraft) {
		t.Errorf("%d promotions decided, %d on the remote", promoted, len(byDraft))
	}
	fsckStrict(t, r.bare)
}

// settle runs passes on every gate until all agree with the remote.
func settle(t *testing.T, r *remoteSrv, gs ...*Gate) {
	t.Helper()
	for i := 0; i < 6; i++ {
		for _, g := range gs {
			once(t, g)
		}
		tip := strings.TrimSpace(gitCLI(t, r.bare, "rev-parse", "HEAD"))
		same := true
		for _, g := range gs {
			if _, h, _ := g.repo.Head(); h.String() != tip {
				same = false
			}
		}
		if same {
			return
		}
	}
	t.Fatalf("gates did not converge on the remote tip")
}

func TestSyncTwoGates(t *testing.T) {
	for _, kind := range []string{"file", "git", "http"} {
		t.Run(kind, func(t *testing.T) {
			a, b, r := twoVaults(t, kind)
			ga, gb := openGate(t, a), openGate(t, b)
			sa, sb := session(t, a, "sess-a"), session(t, b, "sess-b")
			for round := 0; round < 2; round++ {
				for i := 0; i < 3; i++ {
					put(t, sa, fmt.Sprintf("a%d-%d.md", round, i), factDraft(fmt.Sprintf("Alpha %d %d", round, i)))
					put(t, sb, fmt.Sprintf("b%d-%d.md", round, i), factDraft(fmt.Sprintf("Beta %d %d", round, i)))
				}
				// Same title on both sides: both gates allocate the same
				// path; the replay moves the later one.
				put(t, sa, fmt.Sprintf("same%d.md", round), factDraft(fmt.Sprintf("Shared %d", round)))
				put(t, sb, fmt.Sprintf("same%d.md", round), factDraft(fmt.Sprintf("Shared %d", round)+" "))
				done := make(chan *Summary, 2)
				for _, g := range []*Gate{ga, gb} {
					go func(g *Gate) { s, _ := g.Once(); done <- s }(g)
				}
				for i := 0; i < 2; i++ {
					if s := <-done; s == nil || s.Promoted != 4 {
						t.Fatalf("round %d: pass = %+v", round, s)
					}
				}
			}
			settle(t, r, ga, gb)
			checkConverged(t, r, map[string]*Gate{a: ga, b: gb})
			if n := len(remoteLog(t, r.bare)); n < 16 {
				t.Errorf("remote has %d commits, want at least 16 promotions", n)
			}
		})
	}
}

// TestSyncRejectedPushQueued: a pre-receive hook refuses every push
// (protected branch); promotions stay local, the error is recorded, and once
// the hook is gone the next pass pushes them. Then the server goes down
// (git daemon killed) and comes back.
func TestSyncRejectedPushQueued(t *testing.T) {
	a, _, r := twoVaults(t, "git")
	g := openGate(t, a)
	hook := filepath.Join(r.bare, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho protected branch >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := strings.TrimSpace(gitCLI(t, r.bare, "rev-parse", "HEAD"))
	s := session(t, a, "s1")
	put(t, s, "x.md", factDraft("Queued one"))
	if sum := once(t, g); sum.Promoted != 1 {
		t.Fatalf("pass: %+v", sum)
	}
	st, _ := ReadSyncStatus(a, "")
	if st.Ahead != 1 || !strings.Contains(st.LastError, "pre-receive hook declined") {
		t.Fatalf("status after a refused push: %+v", st)
	}
	if now := strings.TrimSpace(gitCLI(t, r.bare, "rev-parse", "HEAD")); now != before {
		t.Fatalf("remote moved despite the hook")
	}
	os.Remove(hook)
	put(t, s, "y.md", factDraft("Queued two"))
	once(t, g)
	st, _ = ReadSyncStatus(a, "")
	if st.Ahead != 0 || st.LastError != "" || st.Pushes != 1 {
		t.Fatalf("status after the hook was removed: %+v", st)
	}
	// Server down: the push fails, the promotion waits.
	port := strings.TrimSuffix(strings.TrimPrefix(r.url, "git://127.0.0.1:"), "/vault.git")
	r.stop()
	put(t, s, "z.md", factDraft("Queued three"))
	once(t, g)
	st, _ = ReadSyncStatus(a, "")
	if st.Ahead != 1 || st.LastError == "" {
		t.Fatalf("status with the server down: %+v", st)
	}
	p := 0
	fmt.Sscanf(port, "%d", &p)
	startDaemon(t, filepath.Dir(r.bare), p)
	once(t, g)
	checkConverged(t, r, map[string]*Gate{a: g})
}

// TestSyncRemotePolicyAndRecheck: a human's reviewed push changes the policy
// (no more auto_promote) and then deletes a source a held draft cites. The
// gate fast-forwards (the deleted file leaves its work tree), the next pass
// judges with the new policy, and the held draft is flagged.
func TestSyncRemotePolicyAndRecheck(t *testing.T) {
	a, _, r := twoVaults(t, "file")
	g := openGate(t, a)
	human := filepath.Join(t.TempDir(), "human")
	gitCLI(t, filepath.Dir(human), "clone", "-q", r.bare, human)
	commit := func(msg string) {
		gitCLI(t, human, "-c", "user.name=h", "-c", "user.email=h@x", "commit", "-q", "-am", msg)
		gitCLI(t, human, "push", "-q", "origin", "HEAD")
	}
	put(t, filepath.Join(human, "00-global"), "policy.yaml", "version: 1\nreviewers: [alice]\nremote:\n  url: "+r.url+"\n")
	commit("policy: every draft waits for review")
	once(t, g) // fast-forwards; the new policy is in the work tree
	s := session(t, a, "s1")
	put(t, s, "x.md", factDraft("Held one"))
	sum := once(t, g)
	if sum.Pending != 1 {
		t.Fatalf("after the remote policy change the draft should wait: %+v", sum)
	}
	gitCLI(t, human, "rm", "-q", "10-projects/src.md")
	commit("remove a source")
	once(t, g)
	if _, err := os.Stat(filepath.Join(a, "10-projects", "src.md")); !os.IsNotExist(err) {
		t.Fatalf("deleted file still in the work tree: %v", err)
	}
	st, _ := ReadSyncStatus(a, "")
	if len(st.Flagged) != 1 || st.Flagged[0].ID != sum.Decisions[0].ID {
		t.Fatalf("held draft not flagged after its source went away: %+v", st)
	}
	t.Logf("flag: %+v", st.Flagged[0])
	checkConverged(t, r, map[string]*Gate{a: g})
}

// TestHelperSyncProcess is not a test: TestSyncKillNine runs the test binary
// with it to get a gate that SIGKILLs itself at a sync fault point.
func TestHelperSyncProcess(t *testing.T) {
	v := os.Getenv("FEDMEM_SYNC_HELPER_VAULT")
	if v == "" {
		t.Skip("helper process for TestSyncKillNine")
	}
	point := os.Getenv("FEDMEM_SYNC_HELPER_FAULT")
	syncFault = func(p string) {
		if p == point {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	g, err := Open(Options{Vault: v, AllowSameUser: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	g.Once()
	os.Exit(0)
}

func killedAt(t *testing.T, v, point string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSyncProcess$")
	cmd.Env = append(os.Environ(), "FEDMEM_SYNC_HELPER_VAULT="+v, "FEDMEM_SYNC_HELPER_FAULT="+point)
	out, err := cmd.CombinedOutput()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if err == nil || !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("helper at %s was not killed there: %v\n%s", point, err, out)
	}
}

// TestSyncKillNine kills a gate process (SIGKILL) at each point of a sync
// that leaves the vault between two states: right before the push, right
// after it (remote updated, nothing recorded), after the replayed branch
// moved (work tree, decisions and push pending), after a fast-forward moved
// the branch (work tree pending). A normal pass then recovers: nothing lost,
// nothing twice.
func TestSyncKillNine(t *testing.T) {
	a, b, r := twoVaults(t, "file")
	gb := openGate(t, b)
	sa, sb := session(t, a, "sa"), session(t, b, "sb")
	for i, point := range []string{"before-push", "after-push", "replayed", "ff-moved"} {
		put(t, sb, fmt.Sprintf("b%d.md", i), factDraft(fmt.Sprintf("From B %d", i)))
		once(t, gb) // the remote moves
		if point != "ff-moved" {
			put(t, sa, fmt.Sprintf("a%d.md", i), factDraft(fmt.Sprintf("From A %d", i)))
		}
		killedAt(t, a, point)
		ga, err := Open(Options{Vault: a, AllowSameUser: true, Now: func() time.Time { return fixedNow }})
		if err != nil {
			t.Fatal(err)
		}
		once(t, ga)
		settle(t, r, ga, gb)
		checkConverged(t, r, map[string]*Gate{a: ga, b: gb})
		ga.Close()
		if t.Failed() {
			t.Fatalf("after a kill at %s", point)
		}
	}
}
