package sign

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/fedmem/fedmem/vault/repo"
)

// sshKeyFiles writes a fresh ed25519 key pair as OpenSSH files.
func sshKeyFiles(t *testing.T, dir, name string) (priv, pub string) {
	t.Helper()
	pk, sk, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(sk, "gate")
	if err != nil {
		t.Fatal(err)
	}
	spk, err := ssh.NewPublicKey(pk)
	if err != nil {
		t.Fatal(err)
	}
	priv, pub = filepath.Join(dir, name), filepath.Join(dir, name+".pub")
	if err := os.WriteFile(priv, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub, ssh.MarshalAuthorizedKey(spk), 0o644); err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

func testCommit() *repo.Commit {
	sig := repo.Signature{Name: "gate", Email: "gate@fedmem.invalid", When: time.Unix(1700000000, 0).UTC()}
	return &repo.Commit{Author: sig, Committer: sig, Message: "fedmem: promote x\n\nFedmem-Draft: d1\n", TreeHash: repo.BlobHash(nil)}
}

// TestSSHSignVerify: a commit the Signer signed verifies with its public
// key; a changed message, another key and no signature are each an error
// wrapping ErrSignature.
func TestSSHSignVerify(t *testing.T) {
	dir := t.TempDir()
	priv, pub := sshKeyFiles(t, dir, "gate")
	_, otherPub := sshKeyFiles(t, dir, "other")
	s, err := LoadSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind != "ssh" || !strings.HasPrefix(s.Public, "SHA256:") {
		t.Errorf("signer kind %q, public %q", s.Kind, s.Public)
	}
	v, err := LoadVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	other, err := LoadVerifier(otherPub)
	if err != nil {
		t.Fatal(err)
	}
	com := testCommit()
	if err := s.SignCommit(com); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(com.PGPSignature, "BEGIN SSH SIGNATURE") {
		t.Fatalf("signature is not an SSH signature: %q", com.PGPSignature)
	}
	if err := v.VerifyCommit(com); err != nil {
		t.Errorf("own signature refused: %v", err)
	}
	if err := other.VerifyCommit(com); !errors.Is(err, ErrSignature) {
		t.Errorf("another key's verifier: %v, want ErrSignature", err)
	}
	changed := *com
	changed.Message += "Fedmem-Reviewer: mallory\n"
	if err := v.VerifyCommit(&changed); !errors.Is(err, ErrSignature) {
		t.Errorf("changed message: %v, want ErrSignature", err)
	}
	if err := v.VerifyCommit(testCommit()); !errors.Is(err, ErrSignature) {
		t.Errorf("unsigned commit: %v, want ErrSignature", err)
	}
	var none *Signer
	unsigned := testCommit()
	if err := none.SignCommit(unsigned); err != nil || unsigned.PGPSignature != "" {
		t.Errorf("a nil Signer signed: %v %q", err, unsigned.PGPSignature)
	}
}

// TestLoadSignerRefusesPublicKey: a file that is no private key is an
// error naming it, never a signer that signs nothing.
func TestLoadSignerRefusesPublicKey(t *testing.T) {
	_, pub := sshKeyFiles(t, t.TempDir(), "gate")
	if _, err := LoadSigner(pub); err == nil || !strings.Contains(err.Error(), pub) {
		t.Errorf("LoadSigner(public key) = %v, want an error naming %s", err, pub)
	}
}
