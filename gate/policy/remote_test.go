package policy

import (
	"strings"
	"testing"
)

func TestRemote(t *testing.T) {
	p, err := Parse("p.yaml", []byte("version: 1\nremote:\n  url: https://git.example.com/team/vault.git\n  branch: main\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Remote == nil || p.Remote.URL != "https://git.example.com/team/vault.git" || p.Remote.Branch != "main" || p.Remote.Line != 3 || p.Remote.Timeout != DefaultRemoteTimeout {
		t.Fatalf("remote = %+v", p.Remote)
	}
	if p, err := Parse("p.yaml", []byte("remote:\n  url: file:///x\n  timeout: 5s\n")); err != nil || p.Remote.Timeout.String() != "5s" {
		t.Fatalf("remote.timeout 5s: %+v %v", p, err)
	}
	for _, ok := range []string{"file:///srv/vault.git", "git://127.0.0.1:9418/vault.git", "ssh://git@host/vault.git", "git@github.com:team/vault.git", "http://127.0.0.1:8080/vault.git"} {
		if _, err := Parse("p.yaml", []byte("remote:\n  url: "+ok+"\n")); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, c := range []struct{ name, text, want string }{
		{"password", "remote:\n  url: https://bob:hunter2@git.example.com/v.git\n", "p.yaml:2: remote.url carries a password"},
		{"http user", "remote:\n  url: https://token@git.example.com/v.git\n", "p.yaml:2: remote.url carries a user name"},
		{"query", "remote:\n  url: https://git.example.com/v.git?access_token=x\n", "p.yaml:2: remote.url has a query"},
		{"scheme", "remote:\n  url: ext::sh -c evil\n", "p.yaml:2: remote.url contains white space"},
		{"ext", "remote:\n  url: ext://x/y\n", "p.yaml:2: remote.url has scheme ext"},
		{"relative file", "remote:\n  url: file://relative/x\n", "p.yaml:2: remote.url file:// URLs name an absolute"},
		{"no url", "remote:\n  branch: main\n", "p.yaml:2: remote needs `url`"},
		{"bad branch", "remote:\n  url: file:///x\n  branch: a..b\n", "p.yaml:3: remote.branch \"a..b\" is not a valid Git branch name"},
		{"dash branch", "remote:\n  url: file:///x\n  branch: -f\n", "p.yaml:3: remote.branch \"-f\" must be"},
		{"unknown", "remote:\n  url: file:///x\n  push: yes\n", "p.yaml:3: unknown key \"remote.push\""},
		{"not mapping", "remote: file:///x\n", "p.yaml:1: remote must be a mapping"},
		{"timeout unit", "remote:\n  url: file:///x\n  timeout: 60\n", "p.yaml:3: remote.timeout must be a duration from 1s to 30m"},
		{"timeout short", "remote:\n  url: file:///x\n  timeout: 10ms\n", "p.yaml:3: remote.timeout must be a duration"},
		{"timeout long", "remote:\n  url: file:///x\n  timeout: 2h\n", "p.yaml:3: remote.timeout must be a duration"},
	} {
		_, err := Parse("p.yaml", []byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}
