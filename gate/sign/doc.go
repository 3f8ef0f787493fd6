// Package sign signs the gate's commits and checks them: a Signer (an SSH
// key in Git's SSH signature format, namespace "git", or an OpenPGP key)
// signs every commit the gate writes through vault/repo; a Verifier checks
// a gate commit's signature against one trusted public key; ReadHistory
// walks the vault's history for `fedmem audit verify` (the audit heads gate
// commits anchored, and the state of their signatures).
//
// It promises: a signature `git verify-commit` accepts for the key's kind;
// a missing or wrong signature is an error wrapping ErrSignature, never a
// pass; a passphrase-protected key is refused at load (the gate runs
// unattended).
package sign
