package vault

import (
	"errors"
	"os/user"
	"strings"
	"testing"
)

func TestResolveUser(t *testing.T) {
	if _, err := user.LookupId("64000"); err == nil {
		t.Skip("uid 64000 has a passwd entry here")
	}
	for _, tc := range []struct {
		spec    string
		want    Owner
		wantErr string
	}{
		{spec: "64000", want: Owner{UID: 64000, GID: 64000}},
		{spec: "0", want: Owner{UID: 0, GID: 0, Name: "root"}},
		{spec: "root", want: Owner{UID: 0, GID: 0, Name: "root"}},
		{spec: "4294967294", want: Owner{UID: 4294967294, GID: 4294967294}},
		{spec: "4294967295", wantErr: `user "4294967295": id out of range`},
		{spec: "99999999999999999999", wantErr: "id out of range"},
		{spec: "no-such-user-fedmem", wantErr: `user "no-such-user-fedmem": unknown user or group (give a numeric uid`},
		{spec: "-1", wantErr: "unknown user or group"},
		{spec: "", wantErr: "empty name"},
	} {
		got, err := ResolveUser(tc.spec)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ResolveUser(%q) = %+v, %v; want error %q", tc.spec, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ResolveUser(%q) = %+v, %v; want %+v", tc.spec, got, err, tc.want)
		}
	}
	if _, err := ResolveUser("no-such-user-fedmem"); !errors.Is(err, ErrUnknownID) {
		t.Errorf("unknown name: %v, want ErrUnknownID", err)
	}
}

func TestResolveGroup(t *testing.T) {
	if _, err := user.LookupGroupId("64010"); err == nil {
		t.Skip("gid 64010 has a group entry here")
	}
	if g, err := ResolveGroup("64010"); err != nil || g != (Group{GID: 64010}) {
		t.Errorf("ResolveGroup(64010) = %+v, %v", g, err)
	}
	if g, err := ResolveGroup("root"); err != nil || g != (Group{GID: 0, Name: "root"}) {
		t.Errorf("ResolveGroup(root) = %+v, %v", g, err)
	}
	if _, err := ResolveGroup("no-such-group-fedmem"); !errors.Is(err, ErrUnknownID) || !strings.Contains(err.Error(), `group "no-such-group-fedmem"`) {
		t.Errorf("unknown group: %v", err)
	}
}
