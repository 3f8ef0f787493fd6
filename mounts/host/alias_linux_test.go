package host

import (
	"slices"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"

	"github.com/fedmem/fedmem/vault"
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

// judged is what the workdir rules judge of aliasesFrom(p): each alias's
// As ("+held" when it holds), without p itself and its own submounts
// (mounts.judgeWritable skips those), sorted, each once.
func judged(as []Alias, p string) []string {
	var out []string
	for _, a := range as {
		if a.As == "" || (a.Path != "" && vault.Within(a.Path, p)) || (a.As == p && !a.Holds) {
			continue
		}
		s := a.As
		if a.Holds {
			s += "+held"
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// aliasesFrom finds a bind alias of /etc, a data disk holding /home
// through a bind, a bind of /etc under a workdir, a folder of another
// disk bound alone (a container's /host/etc: judged as /etc), and judges
// a path through a mirror of the root (/host, a runtime's rootfs) as the
// path it has at /.
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
8:33 /etc /ctr/host/etc
`)
	for _, c := range []struct {
		p    string
		want []string
	}{
		{"/srv/etc-copy/cron.d", []string{"/etc/cron.d", "/srv/proj/etc/cron.d"}},
		{"/host", []string{"/", "/srv/etc-copy+held", "/srv/proj/etc+held"}},
		{"/mnt/data", []string{"/home+held"}},
		{"/srv/proj", []string{"/etc+held", "/srv/etc-copy+held"}},
		{"/home/alice/src", []string{"/mnt/data/home/alice/src"}},
		{"/ctr/host/etc/cron.d", []string{"/etc/cron.d"}},
		{"/var/tmp/x", nil},
	} {
		if got := judged(aliasesFrom(table, c.p), c.p); !slices.Equal(got, c.want) {
			t.Errorf("aliasesFrom(%s) judges %q, want %q (all: %v)", c.p, got, c.want, aliasesFrom(table, c.p))
		}
	}
	if got := mirrorBases(table); !slices.Equal(got, []string{"/host", "/run/containerd/rootfs/x"}) {
		t.Errorf("mirrorBases = %q", got)
	}
}
