package sandbox

import (
	"fmt"
	"os"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/fedmem/fedmem/sandbox/oci"
)

// ociHomeIDMap is the container backends' half of idmapBinds' home: a
// root caller's home the agent may not traverse (homeNeedsIdmap) is
// attached read-only and idmapped owner→agent, so the agent reaches its
// profile's writable paths in it and reads what the caller could, secrets
// masked by the plan's later mounts as always. nil when not needed.
func ociHomeIDMap(spec *Spec, id *Identity) *oci.IDMap {
	if os.Geteuid() != 0 {
		return nil
	}
	owner, ownerG := spec.OwnerUID, spec.OwnerGID
	if !spec.OwnerSet {
		owner, ownerG = os.Getuid(), os.Getgid()
	}
	if !homeNeedsIdmap(spec, owner) {
		return nil
	}
	if id.Writable == nil {
		id.Writable = map[string]string{}
	}
	id.Writable[spec.Plan.Home+" (home, read-only)"] = fmt.Sprintf("idmapped %d→%d", owner, spec.UID) // as idmapBinds says it
	return &oci.IDMap{
		UID: []specs.LinuxIDMapping{{ContainerID: uint32(owner), HostID: uint32(spec.UID), Size: 1}, {ContainerID: uint32(spec.UID), HostID: uint32(owner), Size: 1}},
		GID: []specs.LinuxIDMapping{{ContainerID: uint32(ownerG), HostID: uint32(spec.GID), Size: 1}, {ContainerID: uint32(spec.GID), HostID: uint32(ownerG), Size: 1}},
	}
}
