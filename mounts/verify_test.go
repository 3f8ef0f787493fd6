package mounts

import (
	"errors"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/profiles"
)

func testPlan(t *testing.T) *Plan {
	t.Helper()
	p, _, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	p.Home.Mode = profiles.HomeRO // the masks of a whole home shown read-only
	pl, err := Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/w", Home: "/home/u",
		Exists: func(p string) (bool, bool) { return p == "/w" || p == "/home/u/.ssh", true }})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

const goodTable = `1 0 8:1 / / ro,nosuid,nodev - ext4 /dev/vda rw
2 1 0:5 / /dev rw,nosuid - tmpfs tmpfs rw
3 1 0:6 / /proc rw,nosuid,nodev,noexec - proc proc rw
4 1 0:7 / /tmp rw,nosuid,nodev - tmpfs tmpfs rw
5 1 8:1 /w /w rw,nosuid,nodev - ext4 /dev/vda rw
6 1 8:1 /v /v ro,nosuid,nodev - ext4 /dev/vda rw
7 6 0:8 / /v/90-inbox ro,nosuid,nodev - tmpfs tmpfs rw
8 7 8:1 /v/90-inbox/s1 /v/90-inbox/s1 rw,nosuid,nodev - ext4 /dev/vda rw
9 1 0:9 / /home/u/.ssh ro,nosuid,nodev - tmpfs tmpfs rw
`

func TestVerify(t *testing.T) {
	pl := testPlan(t)
	tests := []struct {
		name  string
		table string
		rule  string // "" = must pass
	}{
		{"good", goodTable, ""},
		{"vault rw", strings.Replace(goodTable, "/v /v ro,", "/v /v rw,", 1), "vault-readonly"},
		{"vault missing, root rw", strings.Replace(strings.Replace(goodTable, "6 1 8:1 /v /v ro,nosuid,nodev - ext4 /dev/vda rw\n", "", 1), "/ / ro,", "/ / rw,", 1), "vault-readonly"},
		{"writable submount in vault", goodTable + "10 6 0:10 / /v/.git/hooks rw - tmpfs tmpfs rw\n", "vault-readonly"},
		{"writable mount stacked over vault", goodTable + "11 1 8:1 /v /v rw - ext4 /dev/vda rw\n", "vault-readonly"},
		{"git rw bind", goodTable + "12 6 8:1 /v/.git /v/.git rw - ext4 /dev/vda rw\n", "vault-readonly"},
		{"inbox ro", strings.Replace(goodTable, "/v/90-inbox/s1 /v/90-inbox/s1 rw,", "/v/90-inbox/s1 /v/90-inbox/s1 ro,", 1), "inbox-writable"},
		{"inbox not mounted", strings.Replace(goodTable, "8 7 8:1 /v/90-inbox/s1 /v/90-inbox/s1 rw,nosuid,nodev - ext4 /dev/vda rw\n", "", 1), "inbox-writable"},
		{"secret not masked", strings.Replace(goodTable, "9 1 0:9 / /home/u/.ssh ro,nosuid,nodev - tmpfs tmpfs rw\n", "", 1), "secret-masked"},
		{"secret mask writable", strings.Replace(goodTable, "/home/u/.ssh ro,", "/home/u/.ssh rw,", 1), "secret-masked"},
		{"empty", "", "parse"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify(pl, strings.NewReader(tc.table+persistTable(pl, tc.table)))
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("want pass, got %v", err)
				}
				return
			}
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Rule != tc.rule {
				t.Fatalf("want rule %s, got %v", tc.rule, err)
			}
		})
	}
}

func TestBuildOrder(t *testing.T) {
	p, _, err := profiles.Load("claude")
	if err != nil {
		t.Fatal(err)
	}
	p.Home.Mode = profiles.HomeRO // masks of the whole home come last
	// Vault inside the workdir: the vault's read-only bind must come after
	// the workdir's writable bind, and the inbox after the vault.
	pl, err := Build(p.PlanRequest(), Input{Vault: "/w/vault", Session: "s1", Workdir: "/w", Home: "/home/u"})
	if err != nil {
		t.Fatal(err)
	}
	idx := map[string]int{}
	for i, m := range pl.Mounts {
		idx[string(m.Kind)+" "+m.Target] = i
	}
	order := []string{"rw /w", "ro /w/vault", "hidden /w/vault/90-inbox", "rw /w/vault/90-inbox/s1", "masked /home/u/.ssh"}
	for i := 1; i < len(order); i++ {
		a, ok1 := idx[order[i-1]]
		b, ok2 := idx[order[i]]
		if !ok1 || !ok2 || a >= b {
			t.Fatalf("want %q before %q in %+v", order[i-1], order[i], pl.Mounts)
		}
	}
	if len(pl.Warnings) == 0 {
		t.Fatal("want a warning for a writable path containing the vault")
	}
	// Workdir inside the vault stays read-only.
	pl, err = Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/v/10-projects", Home: "/home/u"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range pl.Mounts {
		if m.Kind == BindRW && m.Target == "/v/10-projects" {
			t.Fatal("workdir inside the vault must not be writable")
		}
	}
	if _, err := Build(p.PlanRequest(), Input{Vault: "/v", Session: "../x", Workdir: "/w", Home: "/h"}); !errors.Is(err, ErrPlan) {
		t.Fatalf("bad session id: %v", err)
	}
}
