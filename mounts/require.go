package mounts

import "fmt"

// Require is a profile's `require:` as a set, typed once by Build: the
// layers whose absence refuses the session instead of weakening it.
type Require struct {
	// UserNS: user namespaces (every backend needs them; named for
	// `fedmem doctor` and profile check).
	UserNS bool `json:"userns,omitempty"`
	// Seccomp: the seccomp filter must be installed.
	Seccomp bool `json:"seccomp,omitempty"`
	// Landlock: Landlock's filesystem rules must hold (ABI ≥ 1).
	Landlock bool `json:"landlock,omitempty"`
}

// RequireOf types a profile's `require:` names; an unknown name is an
// error (profiles.Validate refuses it first).
func RequireOf(names []string) (Require, error) {
	var r Require
	for _, n := range names {
		switch n {
		case "userns":
			r.UserNS = true
		case "seccomp":
			r.Seccomp = true
		case "landlock":
			r.Landlock = true
		default:
			return Require{}, fmt.Errorf("%w: require: %q is not userns, seccomp or landlock", ErrPlan, n)
		}
	}
	return r, nil
}
