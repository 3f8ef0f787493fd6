package host

import (
	"strings"
	"testing"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/mounts/request"
)

// TestRT4BtrfsTopLevelFalsePositive: on btrfs the root is a subvolume
// (`/@ /`) and backup tools mount the top-level subvolume too (btrbk's
// /mnt/btr_pool, snapper's and timeshift's views; Ubuntu's and openSUSE's
// installers lay out @ and @home). That mount has root / on the root's
// device, but the root's own root is /@, so mirror() does not take it for
// a mirror: every folder of the root subvolume gets an alias under
// /mnt/btr_pool/@, and systemRoot walks the alias up to
// /mnt/btr_pool/@, which holds etc/ and usr/. An ordinary project in
// /srv, /var/tmp or /work is then refused (rule workdir-system) for as
// long as the pool is mounted; a home on @home is not (its alias has no
// etc/ above it). Pure data: the mount table as mountinfo shows it.
func TestRT4BtrfsTopLevelFalsePositive(t *testing.T) {
	table := mi(t, `
0:31 /@ /
0:31 /@home /home
0:31 / /mnt/btr_pool
`)
	in := mounts.Input{Vault: "/home/alice/vault", Home: "/home/alice", Session: "20261204T020000Z-7ab06a3e",
		Homes: []string{"/root", "/home/alice"}, PathDirs: []string{"/usr/bin", "/bin"},
		Aliases: func(p string) []Alias { return aliasesFrom(table, p) },
		Exists: func(p string) (bool, bool) {
			switch {
			case p == "/mnt/btr_pool/@/etc" || p == "/mnt/btr_pool/@/usr":
				return true, true
			case strings.HasPrefix(p, "/mnt/btr_pool/"):
				return false, false
			}
			for _, sfx := range []string{"/etc", "/usr", "/HEAD", "/objects", "/refs"} {
				if strings.HasSuffix(p, sfx) {
					return false, false
				}
			}
			return true, true
		},
	}
	for _, wd := range []string{"/srv/proj", "/var/tmp/build", "/work/app", "/home/alice/src/app"} {
		in.Workdir = wd
		_, err := mounts.Build(request.Request{}, in)
		if err != nil && strings.Contains(err.Error(), "rule: workdir-system") {
			t.Errorf("FALSE POSITIVE: workdir %s (a project on the root subvolume, aliases %v) refused:\n%v", wd, aliasesFrom(table, wd), err)
		} else {
			t.Logf("workdir %s: %v", wd, err)
		}
	}
}
