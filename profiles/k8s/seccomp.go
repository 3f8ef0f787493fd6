package k8s

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/fedmem/fedmem/sandbox/seccomp"
)

// SeccompDir is where a Localhost seccomp profile is looked up, relative to
// the kubelet's seccomp root (/var/lib/kubelet/seccomp by default).
const SeccompDir = "profiles"

// SeccompNodePath is the kubelet's seccomp root; a Localhost profile named
// "profiles/fedmem-P.json" must exist at SeccompNodePath/profiles/fedmem-P.json
// on every node that may run the pod.
const SeccompNodePath = "/var/lib/kubelet/seccomp"

// SeccompFile is the file name of the seccomp profile rendered for profile.
func SeccompFile(profile string) string { return "fedmem-" + profile + ".json" }

// SeccompLocalhostRef is the localhostProfile value of a pod's
// seccompProfile for profile, relative to the kubelet's seccomp root.
func SeccompLocalhostRef(profile string) string { return SeccompDir + "/" + SeccompFile(profile) }

// Seccomp is a seccomp profile in the JSON format the container runtimes
// read for Kubernetes' Localhost profiles: containerd and CRI-O load the
// file into the OCI runtime-spec's LinuxSeccomp field names.
type Seccomp = specs.LinuxSeccomp

// SeccompResult is a rendered seccomp profile and the places where it is
// stricter than the local filter.
type SeccompResult struct {
	Profile Seccomp
	// Notes name each difference from sandbox/seccomp's filter (always a
	// call denied here that the local filter allows).
	Notes []string
}

// JSON is the profile as indented JSON, the file installed on nodes.
func (r *SeccompResult) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r.Profile, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// SeccompProfile renders seccomp.Rules as a Localhost seccomp profile. The
// translation is sandbox/seccomp's own [seccomp.OCI] (one source of rules:
// masked low-word compares against CVE-2019-10063, one entry per bit for
// any-bits and not-in tests); the only change is the architecture list,
// both native ABIs, because one file serves x86_64 and arm64 nodes alike
// (the rules name calls, which libseccomp numbers per architecture). A call
// from any other ABI (i386 through int 0x80, x32, arm32) meets libseccomp's
// bad-architecture action, which kills, as fedmem's own filter does.
//
// families are the profile's socket_families (AF_ numbers): the
// socket-families rule allows them too, as fedmem-run's filter does.
func SeccompProfile(families ...uint32) (*SeccompResult, error) {
	s, err := seccomp.OCI("amd64", families...)
	if err != nil {
		return nil, fmt.Errorf("seccomp profile: %w", err)
	}
	s.Architectures = []specs.Arch{specs.ArchX86_64, specs.ArchAARCH64}
	return &SeccompResult{Profile: *s, Notes: slices.Clone(seccomp.OCIStricter)}, nil
}

// bitsOf lists the set bits of m, lowest first.
func bitsOf(m uint32) []uint32 {
	var out []uint32
	for m != 0 {
		b := uint32(1) << bits.TrailingZeros32(m)
		out = append(out, b)
		m &^= b
	}
	return out
}
