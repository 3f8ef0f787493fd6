// Package intake opens what agents write without trusting it: the vault's
// inbox (90-inbox/, one folder per session, owned by the agents) and the
// receipts the gate leaves there, through descriptors and openat2 with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS, so that no
// link an agent plants is ever followed; the gate's own state directory,
// checked before it is trusted (PrepareStateDir); and the state lock that
// keeps one gate per vault (LockState).
//
// It promises: no path under the inbox is resolved through a symbolic
// link, a /proc magic link or "..", on Linux 5.6 and later; on another
// system every call returns ErrUnsupported.
package intake
