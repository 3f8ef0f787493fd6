package remote

import (
	"errors"
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://bob:hunter2@git.example.com/v.git?t=x": "https://git.example.com/v.git",
		"ssh://git@host/v.git":                          "ssh://host/v.git",
		"git@github.com:team/v.git":                     "github.com:team/v.git",
		"file:///srv/v.git":                             "file:///srv/v.git",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
	raw := "https://bob:hunter2@git.example.com/v.git"
	msg := RedactErr(errors.New("push to "+raw+" failed; also http://u:p@other/x"), raw)
	if strings.Contains(msg, "hunter2") || strings.Contains(msg, "u:p@") {
		t.Errorf("redactErr kept a secret: %s", msg)
	}
}

func TestSyncPathError(t *testing.T) {
	for p, bad := range map[string]bool{
		"20-domains/x.md": false, "90-inbox/.gitkeep": false, ".gitignore": false,
		"90-inbox/sess/x.md": true, ".git/config": true, "a/.GIT/x": true, "a/../b": true, "/abs": true, "a//b": true,
	} {
		if got := PathError(p) != ""; got != bad {
			t.Errorf("PathError(%q) refused=%v, want %v", p, got, bad)
		}
	}
}
