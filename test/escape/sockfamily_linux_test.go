package escape

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// familyProbe opens one socket of each family and prints "FAMILY OK" or
// "FAMILY ERRNO"; unix is tried with socketpair too.
const familyProbe = `
import errno, socket
def try_(name, f):
    try:
        f().close()
        print(name, "OK", flush=True)
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno), flush=True)
try_("vsock", lambda: socket.socket(40, socket.SOCK_STREAM))
try_("packet", lambda: socket.socket(17, socket.SOCK_DGRAM))
try_("alg", lambda: socket.socket(38, socket.SOCK_SEQPACKET))
try_("x25", lambda: socket.socket(9, socket.SOCK_SEQPACKET))
try_("socketpair-vsock", lambda: socket.socketpair(40, socket.SOCK_STREAM)[0])
try_("unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
try_("socketpair-unix", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)[0])
try_("inet", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
try_("inet6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM))
try_("netlink", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
`

// TestSocketFamiliesAllowList: socket(2) and socketpair(2) name only
// AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK (and what a profile's
// socket_families adds); every other family fails with EAFNOSUPPORT, under
// network none and public. Before, AF_VSOCK worked even under network:
// none — a VM host's vsock port space is not the network namespace's — and
// AF_PACKET was stopped only by a missing capability (EPERM).
func TestSocketFamiliesAllowList(t *testing.T) {
	for _, l := range []layout{{name: "beside/root"}, {name: "beside/user", gateOwned: true, user: true}} {
		t.Run(l.name, func(t *testing.T) { socketFamilies(t, setup(t, l)) })
	}
}

func socketFamilies(t *testing.T, e *env) {
	for _, network := range []string{"none", "public"} {
		t.Run(network, func(t *testing.T) {
			r := e.run(t, []string{"--network", network}, "python3", "-c", familyProbe)
			got := familyLines(t, r)
			for _, fam := range []string{"vsock", "packet", "alg", "x25", "socketpair-vsock"} {
				if got[fam] != "EAFNOSUPPORT" {
					t.Errorf("network %s: socket(%s) = %s, want EAFNOSUPPORT (seccomp rule socket-families)", network, fam, got[fam])
				}
			}
			for _, fam := range []string{"unix", "socketpair-unix", "inet", "inet6", "netlink"} {
				if got[fam] != "OK" {
					t.Errorf("network %s: socket(%s) = %s, want OK (an allowed family)", network, fam, got[fam])
				}
			}
		})
	}
	// A profile that names vsock gets it (where the kernel has it); the
	// others stay refused.
	prof := filepath.Join(e.outDir, "vsock.yaml")
	must(t, os.WriteFile(prof, []byte("name: vsock\nextends: default\nnetwork: none\nsocket_families: [vsock]\n"), 0o644))
	r := e.run(t, []string{"--profile", prof}, "python3", "-c", familyProbe)
	got := familyLines(t, r)
	fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.Close(fd)
	}
	switch {
	case errors.Is(err, unix.EAFNOSUPPORT):
		t.Logf("this kernel has no AF_VSOCK: the profile's socket_families cannot be told from the kernel's answer (%s)", got["vsock"])
	case got["vsock"] == "EAFNOSUPPORT":
		t.Errorf("socket_families: [vsock]: socket(vsock) still EAFNOSUPPORT, want the kernel's answer (host: %v)", err)
	}
	if got["packet"] != "EAFNOSUPPORT" || got["alg"] != "EAFNOSUPPORT" {
		t.Errorf("socket_families: [vsock] let other families through: packet %s, alg %s", got["packet"], got["alg"])
	}
}

// familyLines reads "NAME RESULT" lines of a session that must have run.
func familyLines(t *testing.T, r *run) map[string]string {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	got := map[string]string{}
	for _, l := range strings.Split(string(r.stdout), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			got[f[0]] = f[1]
		}
	}
	t.Logf("agent said: %v", got)
	return got
}
