package mounts

import (
	"fmt"

	"github.com/fedmem/fedmem/mounts/request"
)

// NetworkMode is a Plan's network mode, the profile's `network:` typed and
// resolved once, by Build: a backend never sees the empty value (Build puts
// the profile default in its place) nor an unknown one (Build refuses it).
type NetworkMode string

// The network modes (the profile's names; see profiles.NetworkHost and the
// others for what each one means).
const (
	NetworkHost      NetworkMode = request.NetworkHost
	NetworkNone      NetworkMode = request.NetworkNone
	NetworkAllowlist NetworkMode = request.NetworkAllowlist
	NetworkPublic    NetworkMode = request.NetworkPublic
	// NetworkDefault is the mode of a profile that names none.
	NetworkDefault = NetworkPublic
)

// NetworkModeOf types a profile's network mode: "" is the profile default
// (NetworkDefault), an unknown name an error.
func NetworkModeOf(s string) (NetworkMode, error) {
	switch m := NetworkMode(s); m {
	case "":
		return NetworkDefault, nil
	case NetworkHost, NetworkNone, NetworkAllowlist, NetworkPublic:
		return m, nil
	}
	return "", fmt.Errorf("%w: network %q: want none, allowlist, public or host", ErrPlan, s)
}

// OwnNetNS reports whether the mode gives the sandbox its own network
// namespace, loopback only: every mode but host. The one decision both
// backends take from it (the namespace backend's unshare, the container's
// OCI network namespace); a value Build never makes ("") fails closed.
func (m NetworkMode) OwnNetNS() bool { return m != NetworkHost }

// Proxied reports whether the mode reaches out through fedmem-run's proxy
// (allowlist and public).
func (m NetworkMode) Proxied() bool { return m == NetworkAllowlist || m == NetworkPublic }
