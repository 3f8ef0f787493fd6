// Package receipts is the read-receipt recorder fedmem-run runs outside
// the sandbox: it takes the vault mounts the sandbox's init hands over,
// marks them with fanotify and names every vault file the agent opens
// (docs/threat-model.md, "Read receipts"). It reads no profile: the mode
// comes with the Spec.
package receipts
