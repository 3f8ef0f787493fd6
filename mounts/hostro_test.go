package mounts

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// hostTable is a host's mount table with read-only mounts inside the
// workdir /w: a read-only bind alias of the vault, a read-only filesystem,
// a read-only mount hidden by a writable one stacked on it, a read-only
// mount hidden by a later mount over its parent directory, a writable one,
// and a read-only one outside every writable root.
const hostTable = `1 0 8:1 / / rw,relatime - ext4 /dev/vda rw
2 1 8:1 /v /w/vault-alias ro,relatime - ext4 /dev/vda rw
3 1 8:2 / /w/data ro,nosuid - ext4 /dev/vdb ro
4 3 8:3 / /w/data/deeper ro - ext4 /dev/vdc rw
5 1 8:4 / /w/rw rw - ext4 /dev/vdd rw
6 1 8:5 / /w/stacked ro - ext4 /dev/vde rw
7 6 8:6 / /w/stacked rw - ext4 /dev/vdf rw
8 1 8:7 / /w/under/gone ro - ext4 /dev/vdg rw
9 1 0:30 / /w/under rw - tmpfs tmpfs rw
10 1 8:8 / /srv ro - ext4 /dev/vdh rw
`

func TestNoteHostReadOnly(t *testing.T) {
	pl := testPlan(t)
	if err := NoteHostReadOnly(pl, strings.NewReader(hostTable)); err != nil {
		t.Fatal(err)
	}
	want := []string{"/w/vault-alias", "/w/data", "/w/data/deeper"}
	if !slices.Equal(pl.HostReadOnly, want) {
		t.Fatalf("HostReadOnly = %q, want %q", pl.HostReadOnly, want)
	}
	// The workdir itself read-only on the host: read-only inside too.
	pl = testPlan(t)
	if err := NoteHostReadOnly(pl, strings.NewReader("1 0 8:1 / / rw - ext4 /dev/vda rw\n2 1 8:2 / /w ro - ext4 /dev/vdb rw\n")); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pl.HostReadOnly, []string{"/w"}) {
		t.Fatalf("HostReadOnly = %q, want [/w]", pl.HostReadOnly)
	}
	if err := NoteHostReadOnly(pl, strings.NewReader("garbage\n")); err == nil {
		t.Fatal("bad mountinfo accepted")
	}
}

// TestVerifyHostReadOnly: inside, each host read-only mount under a
// writable root must be served read-only; a clone that cleared the flag
// (the submount listed rw) or left the submount out (the workdir's rw
// mount serves the path) is refused with rule host-readonly.
func TestVerifyHostReadOnly(t *testing.T) {
	pl := testPlan(t)
	if err := NoteHostReadOnly(pl, strings.NewReader(hostTable)); err != nil {
		t.Fatal(err)
	}
	inside := goodTable + `20 5 8:1 /v /w/vault-alias ro,nosuid,nodev - ext4 /dev/vda rw
21 5 8:2 / /w/data ro,nosuid,nodev - ext4 /dev/vdb ro
22 21 8:3 / /w/data/deeper ro,nosuid,nodev - ext4 /dev/vdc rw
`
	tests := []struct {
		name, table, path string // path "" = must pass
	}{
		{"flags kept", inside, ""},
		{"alias cleared", strings.Replace(inside, "/v /w/vault-alias ro,", "/v /w/vault-alias rw,", 1), "/w/vault-alias"},
		{"deeper cleared", strings.Replace(inside, "/w/data/deeper ro,", "/w/data/deeper rw,", 1), "/w/data/deeper"},
		{"submount left out", strings.Replace(inside, "21 5 8:2 / /w/data ro,nosuid,nodev - ext4 /dev/vdb ro\n", "", 1), "/w/data"},
		// What the namespace backend's idmapped clone showed: the cleared
		// clone (on the workdir's mount) is listed before the read-only
		// root clone's own copy, which /w hides; the last listed is not
		// the one a lookup reaches.
		{"cleared, hidden copy listed last", strings.Replace(inside, "/v /w/vault-alias ro,", "/v /w/vault-alias rw,", 1) + "30 1 8:1 /v /w/vault-alias ro,nosuid,nodev - ext4 /dev/vda rw\n", "/w/vault-alias"},
		{"writable stacked on it", inside + "23 21 0:40 / /w/data rw - tmpfs tmpfs rw\n", "/w/data"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify(pl, strings.NewReader(tc.table+persistTable(pl, tc.table)))
			if tc.path == "" {
				if err != nil {
					t.Fatalf("want pass, got %v", err)
				}
				return
			}
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Rule != "host-readonly" || ve.Path != tc.path {
				t.Fatalf("want rule host-readonly at %s, got %v", tc.path, err)
			}
		})
	}
}
