package mounts

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/moby/sys/mountinfo"

	"github.com/fedmem/fedmem/vault"
)

// VerifyError says which path of the plan the live mount table fails to
// protect, and how.
type VerifyError struct {
	Path   string // the path that is not protected
	Rule   string // e.g. "vault-readonly", "inbox-writable", "secret-masked"
	Detail string
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("mount verification failed for %s (%s): %s", e.Path, e.Rule, e.Detail)
}

// Verify checks a live mount table (the text of /proc/self/mountinfo, read
// inside the sandbox after pivot_root) against the plan. It fails closed:
//   - every mount at or under the vault, except the session inbox, is read-only;
//   - the mount that serves the vault root is read-only;
//   - the inbox is served by a writable mount;
//   - every masked path is served by a mount at exactly that path;
//   - every path that runs code later (Protected) is served by a read-only
//     mount at exactly that path, and every Pinned directory is a mount point;
//   - every mount read-only on the host under a writable root
//     (pl.HostReadOnly, see NoteHostReadOnly) is read-only inside;
//   - a home in a writable path (pl.HomeTop) is served by a read-only
//     mount at exactly its path, and each of its writable non-dot entries
//     by its own mount.
func Verify(pl *Plan, r io.Reader) error {
	_, err := VerifyRead(pl, r)
	return err
}

// VerifyRead is Verify that also returns the mount table it read and
// checked, for a caller that needs the same table right after (pid 1
// hands the vault's mount points to fedmem-run for the read receipts):
// one read and parse of /proc/self/mountinfo, not two.
func VerifyRead(pl *Plan, r io.Reader) ([]*mountinfo.Info, error) {
	infos, err := parseMountinfo(r)
	if err != nil {
		return nil, &VerifyError{Path: "/proc/self/mountinfo", Rule: "parse", Detail: err.Error()}
	}
	if err := verifyInfos(pl, infos); err != nil {
		return nil, err
	}
	return infos, nil
}

// verifyInfos is Verify on a parsed table.
func verifyInfos(pl *Plan, infos []*mountinfo.Info) error {
	if len(infos) == 0 {
		return &VerifyError{Path: "/proc/self/mountinfo", Rule: "parse", Detail: "empty mount table"}
	}
	for _, m := range infos {
		mp := m.Mountpoint
		if !vault.Within(mp, pl.Vault) || vault.Within(mp, pl.Inbox) {
			continue
		}
		if !readOnly(m) {
			return &VerifyError{Path: mp, Rule: "vault-readonly",
				Detail: fmt.Sprintf("mount %d (%s %s) is writable inside the vault", m.ID, m.FSType, m.Source)}
		}
	}
	if m := serving(infos, pl.Vault); m == nil || !readOnly(m) {
		return &VerifyError{Path: pl.Vault, Rule: "vault-readonly", Detail: describe(m)}
	}
	// With vault.visible, .git is not there at all: the empty read-only
	// tmpfs over the vault serves its path, which this check also accepts.
	if m := serving(infos, pl.Vault+"/.git"); m == nil || !readOnly(m) {
		return &VerifyError{Path: pl.Vault + "/.git", Rule: "vault-readonly", Detail: describe(m)}
	}
	if m := serving(infos, pl.Inbox); m == nil || readOnly(m) || m.Mountpoint != pl.Inbox {
		return &VerifyError{Path: pl.Inbox, Rule: "inbox-writable", Detail: "the session inbox is not its own writable mount: " + describe(m)}
	}
	for _, pm := range pl.Mounts {
		if pm.Kind != Masked {
			continue
		}
		if m := serving(infos, pm.Target); m == nil || m.Mountpoint != pm.Target || !readOnly(m) {
			return &VerifyError{Path: pm.Target, Rule: "secret-masked", Detail: describe(m)}
		}
	}
	if err := verifyHomeTop(pl, infos); err != nil {
		return err
	}
	if err := verifyHostReadOnly(pl, infos); err != nil {
		return err
	}
	if err := verifyHostAuthority(pl, infos); err != nil {
		return err
	}
	return verifyPersistence(pl, infos)
}

// serving returns the mount that serves path: the last-listed mount (later
// entries are stacked on top) among those with the longest mount point that
// contains path.
func serving(infos []*mountinfo.Info, path string) *mountinfo.Info {
	var best *mountinfo.Info
	for _, m := range infos {
		if !vault.Within(path, m.Mountpoint) {
			continue
		}
		if best == nil || len(m.Mountpoint) >= len(best.Mountpoint) {
			best = m
		}
	}
	return best
}

// reached returns the mount that serves path the way a path lookup finds
// it: from the namespace's root mount, down to the child mounted at the
// first mount point along the path (the topmost of several there, the one
// listed last), and so on, into a mount stacked on that one at the same
// point too. Listing order alone does not say which mount is on top: an
// idmapped clone fedmem-run made before the init cloned the host's root is
// listed before the root clone's own (hidden) copy of the same submount,
// which serving (the last listed) would take. The host-readonly check uses
// it, on the host's table and inside.
func reached(infos []*mountinfo.Info, path string) *mountinfo.Info {
	ids := make(map[int]bool, len(infos))
	for _, m := range infos {
		ids[m.ID] = true
	}
	var cur *mountinfo.Info
	for _, m := range infos {
		if (!ids[m.Parent] || m.Parent == m.ID) && vault.Within(path, m.Mountpoint) {
			cur = m // the root: its parent is not in this namespace
		}
	}
	if cur == nil {
		return nil
	}
	for {
		var next *mountinfo.Info
		for _, m := range infos {
			if m.Parent != cur.ID || m == cur || !vault.Within(path, m.Mountpoint) || len(m.Mountpoint) < len(cur.Mountpoint) {
				continue
			}
			if next == nil || len(m.Mountpoint) <= len(next.Mountpoint) {
				next = m
			}
		}
		if next == nil {
			return cur
		}
		cur = next
	}
}

func readOnly(m *mountinfo.Info) bool {
	return slices.Contains(strings.Split(m.Options, ","), "ro")
}

func describe(m *mountinfo.Info) string {
	if m == nil {
		return "no mount serves it"
	}
	return fmt.Sprintf("served by mount %d at %s (%s, %s)", m.ID, m.Mountpoint, m.FSType, m.Options)
}
