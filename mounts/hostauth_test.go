package mounts

import (
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"

	"github.com/fedmem/fedmem/profiles"
)

func hostAuthPlan(t *testing.T) *Plan {
	t.Helper()
	p, _, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	p.UnixSockets = []string{"/run/allowed.sock", "/run/missing.sock"}
	dirs := map[string]bool{"/w": true, "/proc/sys": true, "/proc/acpi": true, "/run": true, "/var/run": true, "/run/systemd/resolve": true}
	files := map[string]bool{"/proc/kcore": true, "/proc/sysrq-trigger": true, "/run/allowed.sock": true}
	pl, err := Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/w", Home: "/home/u",
		Exists: func(p string) (bool, bool) { return dirs[p] || files[p], dirs[p] },
		RealPath: func(p string) string {
			if p == "/var/run" {
				return "/run"
			}
			return p
		}})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func TestHostAuthorityPlan(t *testing.T) {
	pl := hostAuthPlan(t)
	var got []string
	for _, m := range pl.Mounts {
		if strings.HasPrefix(m.Target, "/proc/") || strings.HasPrefix(m.Target, "/run") || strings.HasPrefix(m.Target, "/var/run") {
			got = append(got, string(m.Kind)+" "+m.Target)
		}
	}
	want := []string{"ro-self /proc/sys", "ro-self /proc/sysrq-trigger", "masked /proc/acpi", "masked /proc/kcore",
		"hidden /run", "ro /run/systemd/resolve", "ro /run/allowed.sock"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("host-authority mounts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(strings.Join(pl.Warnings, "\n"), "/run/missing.sock") {
		t.Errorf("no warning for a unix_sockets entry that does not exist: %q", pl.Warnings)
	}
}

const hostAuthTable = `1 0 8:1 / / ro,nosuid,nodev - ext4 /dev/vda rw
2 1 0:5 / /dev rw,nosuid - tmpfs tmpfs rw
3 1 0:6 / /proc rw,nosuid,nodev,noexec - proc proc rw
4 1 0:7 / /tmp rw,nosuid,nodev - tmpfs tmpfs rw
20 3 0:6 /sys /proc/sys ro,nosuid,nodev,noexec - proc proc rw
21 3 0:6 /sysrq-trigger /proc/sysrq-trigger ro,nosuid,nodev,noexec - proc proc rw
22 3 0:9 / /proc/acpi ro,nosuid,nodev,noexec - tmpfs tmpfs ro
23 3 0:7 /.fedmem-empty /proc/kcore ro,nosuid,nodev - tmpfs tmpfs rw
24 1 0:10 / /run ro,nosuid,nodev,noexec - tmpfs tmpfs ro
25 24 0:11 / /run/systemd/resolve ro,nosuid,nodev - tmpfs tmpfs rw
26 24 0:11 /allowed.sock /run/allowed.sock ro,nosuid,nodev - tmpfs tmpfs rw
5 1 8:1 /w /w rw,nosuid,nodev - ext4 /dev/vda rw
6 1 8:1 /v /v ro,nosuid,nodev - ext4 /dev/vda rw
7 6 0:8 / /v/90-inbox ro,nosuid,nodev - tmpfs tmpfs rw
8 7 8:1 /v/90-inbox/s1 /v/90-inbox/s1 rw,nosuid,nodev - ext4 /dev/vda rw
27 1 0:12 / /home/u ro,nosuid,nodev,noexec - tmpfs tmpfs ro
`

func TestVerifyHostAuthority(t *testing.T) {
	pl := hostAuthPlan(t)
	for _, tc := range []struct{ name, table, rule string }{
		{"proc/sys writable", strings.Replace(hostAuthTable, "/sys /proc/sys ro,", "/sys /proc/sys rw,", 1), "kernel-knob-readonly"},
		{"sysrq-trigger not bound", strings.Replace(hostAuthTable, "21 3 0:6 /sysrq-trigger /proc/sysrq-trigger ro,nosuid,nodev,noexec - proc proc rw\n", "", 1), "kernel-knob-readonly"},
		{"kcore not masked", strings.Replace(hostAuthTable, "23 3 0:7 /.fedmem-empty /proc/kcore ro,nosuid,nodev - tmpfs tmpfs rw\n", "", 1), "secret-masked"},
		{"run not hidden", strings.Replace(hostAuthTable, "24 1 0:10 / /run ro,nosuid,nodev,noexec - tmpfs tmpfs ro\n", "", 1), "hidden-readonly"},
		{"run hidden but writable", strings.Replace(hostAuthTable, "/ /run ro,", "/ /run rw,", 1), "hidden-readonly"},
		{"allow-list home not mounted", strings.Replace(hostAuthTable, "27 1 0:12 / /home/u ro,nosuid,nodev,noexec - tmpfs tmpfs ro\n", "", 1), "hidden-readonly"},
		{"allow-list home writable", strings.Replace(hostAuthTable, "/ /home/u ro,", "/ /home/u rw,", 1), "hidden-readonly"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify(pl, strings.NewReader(tc.table))
			if err == nil || !strings.Contains(err.Error(), "("+tc.rule+")") {
				t.Fatalf("want rule %s, got %v", tc.rule, err)
			}
		})
	}
	if err := verifyHostAuthority(pl, mustParse(t, hostAuthTable)); err != nil {
		t.Fatalf("good table: %v", err)
	}
}

func mustParse(t *testing.T, table string) []*mountinfo.Info {
	t.Helper()
	infos, err := mountinfo.GetMountsFromReader(strings.NewReader(table), nil)
	if err != nil {
		t.Fatal(err)
	}
	return infos
}
