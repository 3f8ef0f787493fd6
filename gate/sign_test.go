package gate

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/fedmem/fedmem/gate/audit"
	"github.com/fedmem/fedmem/gate/sign"
)

// gateCommit writes one commit through the gate's own commit path, with the
// audit head trailer a promotion carries.
func gateCommit(t *testing.T, g *Gate, p, content string) string {
	t.Helper()
	if _, err := g.audit.Append("claim", map[string]string{"path": p}); err != nil {
		t.Fatal(err)
	}
	branch, head, err := g.repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	msg := "fedmem: test commit " + p + "\n\nFedmem-Decision: promoted\n" + sign.AuditHeadTrailer + ": " + g.audit.Head() + "\n"
	sig := object.Signature{Name: "fedmem gate", Email: "gate@fedmem.invalid", When: time.Now().UTC().Truncate(time.Second)}
	h, err := g.repo.CommitChanges(branch, head, []change{{Path: p, Content: []byte(content)}}, sig, msg)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.repo.Checkout([]change{{Path: p, Content: []byte(content)}}); err != nil {
		t.Fatal(err)
	}
	return h.String()
}

func sshKey(t *testing.T, dir, name string) (priv, pub string) {
	t.Helper()
	priv = filepath.Join(dir, name)
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gate", "-f", priv).CombinedOutput(); err != nil {
		t.Skipf("ssh-keygen: %v %s", err, out) // ssh-keygen is part of the test image; see the Makefile's deps
	}
	return priv, priv + ".pub"
}

// Gate commits are signed in Git's SSH signature format: `git verify-commit`
// (real git, not our verifier) accepts them, and sign.ReadHistory checks them
// against the public key; another key and unsigned commits are reported.
func TestSignedGateCommitsSSH(t *testing.T) {
	v := newVault(t)
	keys := t.TempDir()
	priv, pub := sshKey(t, keys, "gate")
	_, otherPub := sshKey(t, keys, "other")
	g, err := Open(Options{Vault: v, AllowSameUser: true, SignKey: priv})
	if err != nil {
		t.Fatal(err)
	}
	h := gateCommit(t, g, "10-projects/signed.md", "---\ntype: Fact\n---\nsigned\n")
	g.Close()

	pubLine, _ := os.ReadFile(pub)
	allowed := filepath.Join(keys, "allowed")
	os.WriteFile(allowed, []byte("gate@fedmem.invalid "+string(pubLine)), 0o644)
	out := gitCLI(t, v, "-c", "gpg.format=ssh", "-c", "gpg.ssh.allowedSignersFile="+allowed, "verify-commit", "-v", h)
	t.Logf("git verify-commit: %s", out)

	ver, err := sign.LoadVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := sign.ReadHistory(v, ver)
	if err != nil {
		t.Fatal(err)
	}
	if hist.GateCommits != 1 || hist.Signed != 1 || len(hist.Bad) != 0 || len(hist.Anchors) != 1 {
		t.Fatalf("history %+v", hist)
	}
	other, _ := sign.LoadVerifier(otherPub)
	if hist, _ := sign.ReadHistory(v, other); len(hist.Bad) != 1 || !strings.Contains(hist.Bad[0], "signed by another key") {
		t.Fatalf("another key: %+v", hist)
	}

	// An unsigned gate (no key): the commit is unsigned, verify says so.
	g, err = Open(Options{Vault: v, AllowSameUser: true})
	if err != nil {
		t.Fatal(err)
	}
	gateCommit(t, g, "10-projects/unsigned.md", "---\ntype: Fact\n---\nunsigned\n")
	g.Close()
	hist, _ = sign.ReadHistory(v, ver)
	if hist.Unsigned != 1 || len(hist.Bad) != 1 || !strings.Contains(hist.Bad[0], "unsigned") || !errors.Is(ver.VerifyCommit(mustCommit(t, v, "HEAD")), sign.ErrSignature) {
		t.Fatalf("unsigned commit: %+v", hist)
	}
	checkRepo(t, v)
}

func mustCommit(t *testing.T, v, rev string) *object.Commit {
	t.Helper()
	g, err := openRepo(v, filepath.Join(t.TempDir(), "intent"))
	if err != nil {
		t.Fatal(err)
	}
	h := strings.TrimSpace(gitCLI(t, v, "rev-parse", rev))
	c, err := g.Commit(plumbingHash(h))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSignedGateCommitsOpenPGP(t *testing.T) {
	v := newVault(t)
	keys := t.TempDir()
	ent, err := openpgp.NewEntity("fedmem gate", "", "gate@fedmem.invalid", nil)
	if err != nil {
		t.Fatal(err)
	}
	writeArmored := func(p, typ string, ser func(w interface{ Write([]byte) (int, error) }) error) {
		f, _ := os.Create(p)
		w, _ := armor.Encode(f, typ, nil)
		if err := ser(w); err != nil {
			t.Fatal(err)
		}
		w.Close()
		f.Close()
	}
	priv, pub := filepath.Join(keys, "gate.asc"), filepath.Join(keys, "gate.pub.asc")
	writeArmored(priv, openpgp.PrivateKeyType, func(w interface{ Write([]byte) (int, error) }) error { return ent.SerializePrivate(w, nil) })
	writeArmored(pub, openpgp.PublicKeyType, func(w interface{ Write([]byte) (int, error) }) error { return ent.Serialize(w) })
	g, err := Open(Options{Vault: v, AllowSameUser: true, SignKey: priv})
	if err != nil {
		t.Fatal(err)
	}
	gateCommit(t, g, "10-projects/pgp.md", "---\ntype: Fact\n---\npgp\n")
	g.Close()
	ver, err := sign.LoadVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := sign.ReadHistory(v, ver)
	if err != nil || hist.Signed != 1 || len(hist.Bad) != 0 {
		t.Fatalf("history %+v %v", hist, err)
	}
	// go-git's own OpenPGP check agrees.
	b, _ := os.ReadFile(pub)
	if _, err := mustCommit(t, v, "HEAD").Verify(string(b)); err != nil {
		t.Fatalf("go-git Verify: %v", err)
	}
	checkRepo(t, v)
}

// Issue 7: an audit log cut short was detected only until the gate
// restarted (Open rewrote audit.head from the last line). Now Open refuses
// the cut log; and when the head file is rewritten to match the cut too, the
// Fedmem-Audit-Head trailers in the gate's commits still expose it.
func TestCutAuditLogStaysDetected(t *testing.T) {
	v := newVault(t)
	g := openGate(t, v)
	for _, p := range []string{"a", "b", "c"} {
		gateCommit(t, g, "10-projects/"+p+".md", "---\ntype: Fact\n---\n"+p+"\n")
	}
	g.Close()
	state := DefaultStateDir(v)
	logPath := filepath.Join(state, audit.File)
	b, _ := os.ReadFile(logPath)
	lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) < 3 {
		t.Fatalf("log has %d lines", len(lines))
	}
	cut := strings.Join(lines[:len(lines)-2], "")
	if !strings.HasSuffix(cut, "\n") {
		cut += "\n"
	}
	os.WriteFile(logPath, []byte(cut), 0o600)

	// Restart: refused, twice (nothing was rewritten by the first try).
	for i := 0; i < 2; i++ {
		_, err := Open(Options{Vault: v, AllowSameUser: true})
		if !errors.Is(err, audit.ErrCut) || !strings.Contains(err.Error(), logPath) {
			t.Fatalf("restart %d after the cut: %v; want audit.ErrCut naming %s", i, err, logPath)
		}
	}

	// The cutter also rewrites the head to the new end: Open and the chain
	// alone cannot tell; the commit trailers can.
	var last audit.Entry
	cl := strings.Split(strings.TrimSuffix(cut, "\n"), "\n")
	jsonUnmarshal(t, cl[len(cl)-1], &last)
	os.WriteFile(filepath.Join(state, audit.HeadFile), []byte(`{"seq":`+itoa(last.Seq)+`,"hash":"`+last.Hash+`"}`+"\n"), 0o600)
	if _, probs, err := audit.Verify(state); err != nil {
		t.Fatalf("chain alone: %v %v", err, probs)
	}
	hist, err := sign.ReadHistory(v, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, probs, err := audit.VerifyAnchored(state, hist.Anchors)
	if !errors.Is(err, audit.ErrTampered) || len(probs) == 0 {
		t.Fatalf("VerifyAnchored = %v %v; want tampering reported", err, probs)
	}
	t.Logf("reported: %+v", probs)
	if probs[0].Line != len(cl)+1 || !strings.Contains(probs[0].Msg, "records audit head seq") || !strings.Contains(probs[0].Msg, "removed from its end") {
		t.Fatalf("problem %+v; want the line after the cut and the anchoring commit", probs[0])
	}
}

func jsonUnmarshal(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func plumbingHash(s string) plumbing.Hash { return plumbing.NewHash(s) }
