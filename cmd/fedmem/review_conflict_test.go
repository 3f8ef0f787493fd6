package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault/repo"
)

func humanCommit(t *testing.T, v string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(v, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := testutil.Git(v, "add", "--", p); err != nil {
			t.Fatalf("git add: %v\n%s", err, out)
		}
	}
	if out, err := testutil.Git(v, "-c", "user.name=h", "-c", "user.email=h@x", "commit", "-q", "-m", "human"); err != nil {
		t.Fatalf("git commit: %v\n%s", err, out)
	}
}

// TestReviewApproveContradictionCommand (issue 19 item 3): `fedmem review
// approve` of a held draft that contradicts a note in force created a -2.md
// beside it. Now it exits 1 naming the note and the choices; --supersede
// and --title together are refused; --supersede promotes and deprecates the
// note in force in one commit.
func TestReviewApproveContradictionCommand(t *testing.T) {
	dir := filepath.Join(testutil.TempDir(t), "vault")
	if _, err := repo.Init(dir, repo.InitOptions{Reviewers: []string{strconv.Itoa(os.Geteuid())}}); err != nil {
		t.Fatal(err)
	}
	humanCommit(t, dir, map[string]string{"20-domains/infra/deployment-region.md": "---\ntype: Fact\ntitle: Deployment region\n---\nus-east-1\n"})
	sd := filepath.Join(dir, "90-inbox", "rv-1")
	os.MkdirAll(sd, 0o700)
	os.WriteFile(filepath.Join(sd, "eu.md"), []byte("---\ntype: Fact\ntitle: Deployment region\n---\nProduction runs in eu-west-1.\n"), 0o644)
	_, s, _ := reviewGate(t, dir, 1)
	id := s.Decisions[0].ID
	code, _, errOut := runFedmem("review", "approve", id, "--vault", dir)
	if code != 1 || !strings.Contains(errOut, "20-domains/infra/deployment-region.md") || !strings.Contains(errOut, "--supersede") {
		t.Fatalf("approve of a contradicting draft: %d %s", code, errOut)
	}
	if code, _, errOut := runFedmem("review", "approve", id, "--supersede", "--title", "X y", "--vault", dir); code != 1 || !strings.Contains(errOut, "choose one") {
		t.Fatalf("--supersede with --title: %d %s", code, errOut)
	}
	code, out, errOut := runFedmem("review", "approve", id, "--supersede", "--vault", dir)
	if code != 0 || !strings.Contains(out, id) {
		t.Fatalf("approve --supersede: %d %s %s", code, out, errOut)
	}
	old, _ := os.ReadFile(filepath.Join(dir, "20-domains/infra/deployment-region.md"))
	if !strings.Contains(string(old), "status: deprecated") || !strings.Contains(string(old), "superseded_by: 20-domains/deployment-region.md") {
		t.Fatalf("the note in force was not superseded:\n%s", old)
	}
	if _, err := os.Stat(filepath.Join(dir, "20-domains/deployment-region-2.md")); err == nil {
		t.Fatal("a -2.md was made")
	}
}

// TestGateRunSIGTERMWithSilentRemote (issue 24 item 4): `fedmem gate run`
// whose remote accepts and never answers ignored SIGTERM for ever. Now it
// exits 0: the stop cuts the fetch off.
func TestGateRunSIGTERMWithSilentRemote(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	v := gateVault(t)
	// (the default remote.timeout, 60s, is longer than the wait below: only
	// the stop can end the fetch in time)
	pol := fmt.Sprintf("version: 1\nremote:\n  url: git://%s/vault.git\n", l.Addr())
	humanCommit(t, v, map[string]string{"00-global/policy.yaml": pol})
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFedmemMain$")
	cmd.Env = append(os.Environ(), "FEDMEM_HELPER_ARGS="+strings.Join([]string{"gate", "run", "--vault", v, "--allow-same-user", "--interval", "1h"}, "\x1f"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	select {
	case c := <-accepted: // the start-up pass is in its fetch
		defer c.Close()
	case <-time.After(60 * time.Second):
		t.Fatalf("gate run never connected to its remote\n%s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("gate run after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("gate run did not stop on SIGTERM with a silent remote\n%s", stderr.String())
	}
}
