package profiles

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SocketFamily is an address family the profile's agent may open sockets
// of, by its lower-case name without AF_ (vsock, packet, can…). Every
// session may use unix, inet, inet6 and netlink; the sandbox's seccomp
// filter answers any other family EAFNOSUPPORT unless socket_families
// names it (sandbox/seccomp rule socket-families).
type SocketFamily string

// socketFamilies numbers the families a profile may name
// (include/linux/socket.h; the same on every architecture).
var socketFamilies = map[string]uint32{
	"unix": 1, "inet": 2, "ax25": 3, "ipx": 4, "appletalk": 5, "netrom": 6, "bridge": 7, "atmpvc": 8,
	"x25": 9, "inet6": 10, "rose": 11, "decnet": 12, "netbeui": 13, "security": 14, "key": 15,
	"netlink": 16, "packet": 17, "econet": 19, "atmsvc": 20, "rds": 21, "irda": 23,
	"pppox": 24, "wanpipe": 25, "llc": 26, "ib": 27, "mpls": 28, "can": 29, "tipc": 30, "bluetooth": 31,
	"iucv": 32, "rxrpc": 33, "isdn": 34, "phonet": 35, "ieee802154": 36, "caif": 37, "alg": 38,
	"nfc": 39, "vsock": 40, "kcm": 41, "qipcrtr": 42, "smc": 43, "xdp": 44, "mctp": 45,
}

// Number is the family's AF_ value; false for a name that is not one.
func (f SocketFamily) Number() (uint32, bool) {
	n, ok := socketFamilies[string(f)]
	return n, ok
}

// SocketFamilyNames lists the names socket_families accepts, sorted.
func SocketFamilyNames() []string {
	names := make([]string, 0, len(socketFamilies))
	for n := range socketFamilies {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func unknownFamily(name string) string {
	return fmt.Sprintf("%q is not an address family fedmem knows (known: %s)", name, strings.Join(SocketFamilyNames(), ", "))
}

// UnmarshalYAML accepts a known family name, in lower case, with or
// without AF_ ("vsock", "AF_VSOCK"); anything else is an error naming
// the line.
func (f *SocketFamily) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &valueError{n, "expected an address family name like vsock or packet, got " + nodeWords(n)}
	}
	name := strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(n.Value, "AF_"), "af_"))
	if _, ok := socketFamilies[name]; !ok {
		return &valueError{n, unknownFamily(n.Value)}
	}
	*f = SocketFamily(name)
	return nil
}

// SocketFamilyNumbers are the AF_ values of the profile's socket_families
// (Validate refused any unknown name).
func (p *Profile) SocketFamilyNumbers() []uint32 {
	var out []uint32
	for _, f := range p.SocketFamilies {
		if n, ok := f.Number(); ok && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
