package gate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/gate/audit"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/vault"
)

// TestEditReviewersIsAGateCommit: a reviewer change is one gate commit of
// policy.yaml with trailers, an audit entry, the work tree checked out, the
// rest of the file (comments) kept; the last reviewer cannot go.
func TestEditReviewersIsAGateCommit(t *testing.T) {
	v := newVault(t)
	g := openGate(t, v)
	before, _ := os.ReadFile(filepath.Join(v, vault.PolicyFile))
	commit, now, err := g.EditReviewers("add", "bob", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(now, ",") != "alice,bob" {
		t.Errorf("reviewers now %v", now)
	}
	if h := strings.TrimSpace(gitCLI(t, v, "rev-parse", "HEAD")); h != commit {
		t.Errorf("HEAD %s, commit %s", h, commit)
	}
	msg := gitCLI(t, v, "log", "-1", "--format=%an%n%B")
	for _, want := range []string{"fedmem-gate", "Fedmem-Policy: reviewers add bob", "Fedmem-Reviewer: alice"} {
		if !strings.Contains(msg, want) {
			t.Errorf("commit lacks %q:\n%s", want, msg)
		}
	}
	if files := strings.Fields(gitCLI(t, v, "show", "--name-only", "--format=", "HEAD")); len(files) != 1 || files[0] != vault.PolicyFile {
		t.Errorf("commit touches %v", files)
	}
	checkRepo(t, v)
	after, _ := os.ReadFile(filepath.Join(v, vault.PolicyFile))
	pol, err := policy.Parse(vault.PolicyFile, after)
	if err != nil || strings.Join(pol.Reviewers, ",") != "alice,bob" {
		t.Fatalf("work tree policy: %v %v", pol, err)
	}
	// Comments written by fedmem init survive the edit.
	for _, l := range strings.Split(string(before), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") && !strings.Contains(string(after), strings.TrimSpace(l)) {
			t.Errorf("comment lost: %q", l)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(g.StateDir(), audit.File)); !strings.Contains(string(b), "reviewers add") {
		t.Errorf("no audit entry for the change")
	}
	if _, _, err := g.EditReviewers("add", "bob", "alice"); err == nil || !strings.Contains(err.Error(), "already a reviewer") {
		t.Errorf("adding twice: %v", err)
	}
	if _, _, err := g.EditReviewers("remove", "carol", "alice"); err == nil || !strings.Contains(err.Error(), "not a reviewer") {
		t.Errorf("removing a stranger: %v", err)
	}
	if _, _, err := g.EditReviewers("add", "bad name:x", "alice"); err == nil {
		t.Error("an unusable name was accepted")
	}
	if _, now, err := g.EditReviewers("remove", "alice", "bob"); err != nil || strings.Join(now, ",") != "bob" {
		t.Fatalf("remove alice: %v %v", now, err)
	}
	if _, _, err := g.EditReviewers("remove", "bob", "bob"); !errors.Is(err, ErrLastReviewer) {
		t.Errorf("removing the last reviewer: %v", err)
	}
	if _, _, err := g.EditReviewers("add", "1001", "bob"); err != nil {
		t.Errorf("a numeric uid: %v", err)
	}
}
