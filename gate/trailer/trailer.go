// Package trailer is the format of the gate's commit messages: the
// Fedmem-* trailers every gate commit carries (git interpret-trailers
// format, "Key: value" lines), how one is read back, and how a gate commit
// is told from a human's. The recovery walk, the sync's replay and the
// history check of `fedmem audit verify` all read commits through it.
package trailer

import "strings"

// Trailers every gate commit carries.
const (
	Draft    = "Fedmem-Draft"
	Session  = "Fedmem-Session"
	Decision = "Fedmem-Decision"
	SHA256   = "Fedmem-Draft-Sha256"
	Path     = "Fedmem-Path"
	Origin   = "Fedmem-Origin"
	Reviewer = "Fedmem-Reviewer"
	// AuditHead records the audit log's head at commit time
	// ((*audit.Log).Head), anchoring the log's end outside the gate's
	// state directory.
	AuditHead = "Fedmem-Audit-Head"
)

// Value is the value of the last "key: value" line in msg ("" if none).
func Value(msg, key string) string {
	v := ""
	for _, l := range strings.Split(msg, "\n") {
		if rest, ok := strings.CutPrefix(l, key+": "); ok {
			v = strings.TrimSpace(rest)
		}
	}
	return v
}

// IsGate reports whether msg is a gate commit's: the gate's commits carry
// Fedmem-* trailers; humans' do not.
func IsGate(msg string) bool {
	for _, l := range strings.Split(msg, "\n") {
		if strings.HasPrefix(l, "Fedmem-") && strings.Contains(l, ": ") {
			return true
		}
	}
	return false
}
