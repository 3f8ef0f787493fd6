package gate

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedmem/fedmem/gate/review"
	vaultrepo "github.com/fedmem/fedmem/vault/repo"
)

func serve(t *testing.T, g *Gate) string {
	t.Helper()
	sock := filepath.Join(g.StateDir(), review.SocketName)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.ServeReview(ctx, sock) }()
	t.Cleanup(func() { cancel(); <-done })
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(sock); err == nil {
			return sock
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("socket never appeared")
	return ""
}

func TestReviewSocket(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vault")
	if _, err := vaultrepo.Init(dir, vaultrepo.InitOptions{Reviewers: []string{strconv.Itoa(os.Geteuid())}}); err != nil {
		t.Fatal(err)
	}
	put(t, session(t, dir, "s-1"), "h.md", "---\ntype: Fact\ntitle: Held\n---\nheld\n")
	g := openGate(t, dir)
	pend := decisionFor(t, once(t, g), "h.md")
	sock := serve(t, g)

	r, err := review.Ask(sock, review.Request{Op: "list"})
	if err != nil || len(r.Decisions) != 1 || r.Decisions[0].ID != pend.ID {
		t.Fatalf("list: %+v %v", r, err)
	}
	r, err = review.Ask(sock, review.Request{Op: "show", ID: pend.ID})
	if err != nil || !strings.Contains(r.Draft, "held") {
		t.Fatalf("show: %+v %v", r, err)
	}
	// A unique prefix of the id's random tail names it; the answer carries
	// the full id (the JSON is the same as for the full id).
	tail := pend.ID[strings.LastIndexByte(pend.ID, '-')+1:][:MinIDPrefix]
	r, err = review.Ask(sock, review.Request{Op: "show", ID: tail})
	if err != nil || r.Decision == nil || r.Decision.ID != pend.ID {
		t.Fatalf("show by prefix %q: %+v %v", tail, r, err)
	}
	if _, err := review.Ask(sock, review.Request{Op: "approve", ID: "../../etc"}); err == nil {
		t.Fatal("approve of a bogus id succeeded")
	}
	r, err = review.Ask(sock, review.Request{Op: "approve", ID: pend.ID})
	if err != nil || r.Decision.State != StatePromoted || r.Decision.Commit == "" {
		t.Fatalf("approve: %+v %v", r, err)
	}
	checkRepo(t, dir)

	// Drop ourselves from the reviewers: the same request is refused.
	pol := filepath.Join(dir, "00-global", "policy.yaml")
	b, _ := os.ReadFile(pol)
	os.WriteFile(pol, []byte(strings.Replace(string(b), strconv.Quote(strconv.Itoa(os.Geteuid())), `"someone-else"`, 1)), 0o644)
	if _, err := review.Ask(sock, review.Request{Op: "list"}); err == nil || !strings.Contains(err.Error(), "not a reviewer") {
		t.Fatalf("non-reviewer: %v", err)
	}
	os.WriteFile(pol, b, 0o644)

	// A client in another user namespace (as inside a sandbox) is refused
	// even though its uid maps back to a reviewer.
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperReviewClient$")
	cmd.Env = append(os.Environ(), "FEDMEM_REVIEW_HELPER_SOCKET="+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
	}
	out, err := cmd.CombinedOutput()
	if err != nil && !strings.Contains(string(out), "refused") {
		t.Skipf("cannot start a process in a new user namespace here: %v %s", err, out)
	}
	if !strings.Contains(string(out), "another user or mount namespace") {
		t.Fatalf("client in a user namespace was not refused: %s", out)
	}
}

// TestHelperReviewClient is not a test: TestReviewSocket runs it inside a new
// user namespace.
func TestHelperReviewClient(t *testing.T) {
	sock := os.Getenv("FEDMEM_REVIEW_HELPER_SOCKET")
	if sock == "" {
		t.Skip("helper process for TestReviewSocket")
	}
	_, err := review.Ask(sock, review.Request{Op: "list"})
	fmt.Println("helper result:", err)
	os.Exit(0)
}
