package host

import (
	"slices"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
)

// mi is a mount table: "major:minor root mountpoint" per line.
func mi(t *testing.T, table string) []*mountinfo.Info {
	t.Helper()
	var out []*mountinfo.Info
	for _, l := range strings.Split(strings.TrimSpace(table), "\n") {
		f := strings.Fields(l)
		var m mountinfo.Info
		dev := strings.Split(f[0], ":")
		m.Major, m.Minor = atoi(t, dev[0]), atoi(t, dev[1])
		m.Root, m.Mountpoint = f[1], f[2]
		out = append(out, &m)
	}
	return out
}

func atoi(t *testing.T, s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("bad number %q", s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// aliasesFrom finds a bind alias of /etc, a root seen at /host, a data
// disk holding /home through a bind, a bind of /etc under a workdir, and
// leaves out runtime views under /run, whole-root mirrors (/host: a folder
// there has the role it has at /; /host itself is the root) and the
// workdir's own submounts.
func TestAliasesFrom(t *testing.T) {
	table := mi(t, `
8:1 / /
8:1 /etc /srv/etc-copy
8:1 / /host
8:17 / /mnt/data
8:17 /home /home
8:1 /etc /srv/proj/etc
8:1 / /run/containerd/rootfs/x
0:40 / /srv/proj/cache
`)
	for _, c := range []struct {
		p    string
		want []Alias
	}{
		{"/srv/etc-copy/cron.d", []Alias{{Path: "/etc/cron.d"}, {Path: "/srv/proj/etc/cron.d"}}},
		{"/host", []Alias{{Path: "/"}, {Path: "/srv/etc-copy", Holds: true}, {Path: "/srv/proj/etc", Holds: true}}},
		{"/mnt/data", []Alias{{Path: "/home", Holds: true}}},
		{"/srv/proj", []Alias{{Path: "/etc", Holds: true}, {Path: "/srv/etc-copy", Holds: true}}},
		{"/home/alice/src", []Alias{{Path: "/mnt/data/home/alice/src"}}},
	} {
		got := aliasesFrom(table, c.p)
		slices.SortFunc(got, func(a, b Alias) int { return strings.Compare(a.Path, b.Path) })
		slices.SortFunc(c.want, func(a, b Alias) int { return strings.Compare(a.Path, b.Path) })
		if !slices.Equal(got, c.want) {
			t.Errorf("aliasesFrom(%s) = %v, want %v", c.p, got, c.want)
		}
	}
}
