package sign

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"golang.org/x/crypto/ssh"

	"github.com/fedmem/fedmem/vault/repo"
)

// Signer signs the gate's commits with an SSH key (Git's "SSH signature"
// format, namespace "git") or an OpenPGP key. It implements go-git's
// git.Signer interface. A nil *Signer signs nothing.
type Signer struct {
	ssh ssh.Signer
	pgp *openpgp.Entity
	// Kind is "ssh" or "openpgp"; Public names the key (fingerprint).
	Kind, Public string
}

// ErrSignature is wrapped by VerifyCommit's error for a commit that is
// unsigned or whose signature does not verify with the trusted key.
var ErrSignature = errors.New("commit signature does not verify")

// LoadSigner reads a private key file: an OpenSSH private key ("-----BEGIN
// OPENSSH PRIVATE KEY-----", or PEM RSA/EC) or an armored OpenPGP secret key.
// Keys protected by a passphrase are refused: the gate runs unattended.
func LoadSigner(path string) (*Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	if bytes.Contains(b, []byte("-----BEGIN PGP PRIVATE KEY BLOCK-----")) {
		ents, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("signing key %s: OpenPGP: %w", path, err)
		}
		if len(ents) != 1 || ents[0].PrivateKey == nil {
			return nil, fmt.Errorf("signing key %s: want exactly one OpenPGP secret key, found %d keys", path, len(ents))
		}
		if ents[0].PrivateKey.Encrypted {
			return nil, fmt.Errorf("signing key %s: the OpenPGP key is protected by a passphrase; the gate needs a key it can use unattended", path)
		}
		return &Signer{pgp: ents[0], Kind: "openpgp", Public: fmt.Sprintf("%X", ents[0].PrimaryKey.Fingerprint)}, nil
	}
	s, err := ssh.ParsePrivateKey(b)
	var pp *ssh.PassphraseMissingError
	if errors.As(err, &pp) {
		return nil, fmt.Errorf("signing key %s: the SSH key is protected by a passphrase; the gate needs a key it can use unattended", path)
	}
	if err != nil {
		return nil, fmt.Errorf("signing key %s: not an OpenSSH or OpenPGP private key: %w", path, err)
	}
	return &Signer{ssh: s, Kind: "ssh", Public: ssh.FingerprintSHA256(s.PublicKey())}, nil
}

// Sign returns the armored signature of message (go-git's git.Signer).
func (s *Signer) Sign(message io.Reader) ([]byte, error) {
	msg, err := io.ReadAll(message)
	if err != nil {
		return nil, err
	}
	if s.pgp != nil {
		var out bytes.Buffer
		if err := openpgp.ArmoredDetachSign(&out, s.pgp, bytes.NewReader(msg), nil); err != nil {
			return nil, fmt.Errorf("OpenPGP sign: %w", err)
		}
		return out.Bytes(), nil
	}
	return sshSign(s.ssh, msg)
}

// SignCommit sets com's signature (the gpgsig header Git uses for both key
// kinds) over its encoding without one. A nil Signer leaves com unsigned.
// Call it right before the commit object is encoded and stored.
func (s *Signer) SignCommit(com *repo.Commit) error {
	if s == nil {
		return nil
	}
	return repo.SignCommit(s, com)
}

// Verifier checks gate commit signatures against one trusted public key.
type Verifier struct {
	ssh  ssh.PublicKey
	pgp  openpgp.EntityList
	Kind string
}

// LoadVerifier reads a public key: an OpenSSH public key line (as in
// id_ed25519.pub or an allowed-signers file's key part) or an armored
// OpenPGP public key.
func LoadVerifier(path string) (*Verifier, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	if bytes.Contains(b, []byte("-----BEGIN PGP PUBLIC KEY BLOCK-----")) {
		ents, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("public key %s: OpenPGP: %w", path, err)
		}
		return &Verifier{pgp: ents, Kind: "openpgp"}, nil
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		return nil, fmt.Errorf("public key %s: not an OpenSSH or OpenPGP public key: %w", path, err)
	}
	return &Verifier{ssh: pub, Kind: "ssh"}, nil
}

// VerifyCommit checks com's signature; the error wraps ErrSignature when it
// is missing or wrong.
func (v *Verifier) VerifyCommit(com *repo.Commit) error {
	if com.PGPSignature == "" {
		return fmt.Errorf("unsigned: %w", ErrSignature)
	}
	msg, err := repo.SignedPayload(com)
	if err != nil {
		return err
	}
	if v.pgp != nil {
		if !strings.Contains(com.PGPSignature, "BEGIN PGP SIGNATURE") {
			return fmt.Errorf("signed with something other than the trusted OpenPGP key: %w", ErrSignature)
		}
		if _, err := openpgp.CheckArmoredDetachedSignature(v.pgp, bytes.NewReader(msg), strings.NewReader(com.PGPSignature), nil); err != nil {
			return fmt.Errorf("%v: %w", err, ErrSignature)
		}
		return nil
	}
	if err := sshVerify(v.ssh, msg, com.PGPSignature); err != nil {
		return fmt.Errorf("%v: %w", err, ErrSignature)
	}
	return nil
}

// Git's SSH signature format (OpenSSH PROTOCOL.sshsig): the signed data is
// "SSHSIG" ‖ namespace ‖ reserved ‖ hash algorithm ‖ H(message), each a
// length-prefixed string; the armored blob carries the public key, the same
// fields and the signature. Namespace "git" is what `git verify-commit`
// checks.
const (
	sshsigMagic     = "SSHSIG"
	sshsigNamespace = "git"
	sshsigArmorHead = "-----BEGIN SSH SIGNATURE-----"
	sshsigArmorTail = "-----END SSH SIGNATURE-----"
)

func sshString(b *bytes.Buffer, s []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(s)))
	b.Write(n[:])
	b.Write(s)
}

func sshsigSignedData(hashAlg string, msg []byte) []byte {
	var h []byte
	if hashAlg == "sha256" {
		s := sha256.Sum256(msg)
		h = s[:]
	} else {
		s := sha512.Sum512(msg)
		h = s[:]
	}
	var b bytes.Buffer
	b.WriteString(sshsigMagic)
	sshString(&b, []byte(sshsigNamespace))
	sshString(&b, nil)
	sshString(&b, []byte(hashAlg))
	sshString(&b, h)
	return b.Bytes()
}

func sshSign(s ssh.Signer, msg []byte) ([]byte, error) {
	data := sshsigSignedData("sha512", msg)
	var sig *ssh.Signature
	var err error
	if as, ok := s.(ssh.AlgorithmSigner); ok && s.PublicKey().Type() == ssh.KeyAlgoRSA {
		sig, err = as.SignWithAlgorithm(rand.Reader, data, ssh.KeyAlgoRSASHA512) // ssh-rsa (SHA-1) is refused by OpenSSH
	} else {
		sig, err = s.Sign(rand.Reader, data)
	}
	if err != nil {
		return nil, fmt.Errorf("SSH sign: %w", err)
	}
	var b bytes.Buffer
	b.WriteString(sshsigMagic)
	binary.Write(&b, binary.BigEndian, uint32(1))
	sshString(&b, s.PublicKey().Marshal())
	sshString(&b, []byte(sshsigNamespace))
	sshString(&b, nil)
	sshString(&b, []byte("sha512"))
	sshString(&b, ssh.Marshal(sig))
	enc := base64.StdEncoding.EncodeToString(b.Bytes())
	var out strings.Builder
	out.WriteString(sshsigArmorHead + "\n")
	for len(enc) > 70 {
		out.WriteString(enc[:70] + "\n")
		enc = enc[70:]
	}
	out.WriteString(enc + "\n" + sshsigArmorTail + "\n")
	return []byte(out.String()), nil
}

func sshVerify(trusted ssh.PublicKey, msg []byte, armored string) error {
	a := strings.TrimSpace(armored)
	if !strings.HasPrefix(a, sshsigArmorHead) || !strings.HasSuffix(a, sshsigArmorTail) {
		return fmt.Errorf("not an SSH signature")
	}
	raw, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(a[len(sshsigArmorHead):len(a)-len(sshsigArmorTail)]), ""))
	if err != nil {
		return fmt.Errorf("SSH signature: %w", err)
	}
	var blob struct {
		Magic     [6]byte
		Version   uint32
		PublicKey []byte
		Namespace string
		Reserved  string
		HashAlg   string
		Signature []byte
	}
	if err := ssh.Unmarshal(raw, &blob); err != nil {
		return fmt.Errorf("SSH signature: %w", err)
	}
	if string(blob.Magic[:]) != sshsigMagic || blob.Version != 1 || blob.Namespace != sshsigNamespace {
		return fmt.Errorf("SSH signature: wrong magic, version or namespace %q", blob.Namespace)
	}
	if blob.HashAlg != "sha512" && blob.HashAlg != "sha256" {
		return fmt.Errorf("SSH signature: hash %q", blob.HashAlg)
	}
	if !bytes.Equal(blob.PublicKey, trusted.Marshal()) {
		return fmt.Errorf("signed by another key")
	}
	var sig ssh.Signature
	if err := ssh.Unmarshal(blob.Signature, &sig); err != nil {
		return fmt.Errorf("SSH signature: %w", err)
	}
	return trusted.Verify(sshsigSignedData(blob.HashAlg, msg), &sig)
}
