package repo

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
)

// Signer signs a commit's encoding (Git's gpgsig header holds what it
// returns: an armored OpenPGP or SSH signature).
type Signer interface {
	Sign(message io.Reader) ([]byte, error)
}

// SignCommit sets com's signature over its encoding without one. A nil
// signer leaves com unsigned. Call it right before the commit is written.
func SignCommit(s Signer, com *Commit) error {
	if s == nil {
		return nil
	}
	com.PGPSignature = ""
	msg, err := SignedPayload(com)
	if err != nil {
		return err
	}
	sig, err := s.Sign(bytes.NewReader(msg))
	if err != nil {
		return fmt.Errorf("sign commit: %w", err)
	}
	com.PGPSignature = string(sig)
	return nil
}

func signCommit(s Signer, com *Commit) error { return SignCommit(s, com) }

// SignedPayload is the encoding of com without its signature: what a
// signature over it signs.
func SignedPayload(com *Commit) ([]byte, error) {
	if com == nil {
		return nil, errors.New("no commit")
	}
	obj := &plumbing.MemoryObject{}
	c := *com
	c.PGPSignature = ""
	if err := c.EncodeWithoutSignature(obj); err != nil {
		return nil, err
	}
	r, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}
