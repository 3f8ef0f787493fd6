package escape

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func (e *env) rtsbRun(t *testing.T, extra, envs []string, argv ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := e.command(ctx, "", extra, argv...)
	cmd.Env = append(cmd.Env, envs...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	return so.String(), se.String(), exitCode(err)
}

// TestCredentialCoverRenamedAway: when the writable workdir holds the home
// (workdir = the home, or the vault's parent is the home), the agent must
// not be able to move the covered credential file's folder aside (the
// cover's bind travels with the dentry) and read the real file under its
// new name in the next session.
func TestCredentialCoverRenamedAway(t *testing.T) {
	for _, l := range []layout{{name: "workdir-is-home/root"}, {name: "workdir-is-home/user", user: true, agentOwned: true}} {
		t.Run(l.name, func(t *testing.T) { testCredentialCoverRenamedAway(t, l) })
	}
}

func testCredentialCoverRenamedAway(t *testing.T, l layout) {
	e := setup(t, l)
	e.workdir = e.home
	prof := credProfile(t, e, "1", "2", "TEST_API_KEY")
	swap := `set -x; mkdir -p "$HOME/x" && printf '{"tokens": {"access_token": "tok_agentsownfakevalue0123456789"}}' > "$HOME/x/auth.json" && mv "$HOME/.testagent" "$HOME/.stash" ; mv "$HOME/x" "$HOME/.testagent"; ls -la "$HOME" "$HOME/.stash"; cat "$HOME/.stash/auth.json"; sleep 1; echo`
	o1, s1, c1 := e.rtsbRun(t, []string{"--profile", prof}, []string{"TEST_API_KEY=" + realEnvKey}, "sh", "-c", swap)
	t.Logf("session 1: exit %d\nstdout:\n%s\nstderr:\n%s", c1, o1, s1)
	cmd2 := `cat "$HOME/.stash/auth.json"; echo; ls -la "$HOME/.stash"; true`
	o2, s2, c2 := e.rtsbRun(t, []string{"--profile", prof}, []string{"TEST_API_KEY=" + realEnvKey}, "sh", "-c", cmd2)
	t.Logf("session 2: exit %d\nstdout:\n%s\nstderr:\n%s", c2, o2, s2)
	if strings.Contains(o1+o2, credMarker) {
		t.Fatalf("the agent read the real credential file after moving its folder aside")
	}
	if c1 == 125 || c2 != 0 {
		t.Fatalf("the sessions did not run (exit %d, %d): the attempt was not made", c1, c2)
	}
	if refusedMoves(s1) == 0 {
		t.Errorf("moving the credential file's folder aside did not fail with EBUSY (a pinned mount point) or EROFS (the home's read-only top, rule home-config-readonly)")
	}
}

// TestHomeMaskRenamedAway: the same with a masked secret of a home shown
// whole in the workdir: ~/.ssh moved aside in one session must not show
// its keys under the new name in the next.
func TestHomeMaskRenamedAway(t *testing.T) {
	e := setup(t, layout{name: "workdir-is-home/root"})
	e.workdir = e.home
	o1, s1, c1 := e.rtsbRun(t, nil, nil, "sh", "-c", `mv "$HOME/.ssh" "$HOME/.s2"; mv "$HOME/.aws" "$HOME/.a2"; echo moved`)
	t.Logf("session 1: exit %d\nstdout:\n%s\nstderr:\n%s", c1, o1, s1)
	o2, s2, c2 := e.rtsbRun(t, nil, nil, "sh", "-c", `cat "$HOME/.s2/id_rsa" "$HOME/.a2/credentials"; echo`)
	t.Logf("session 2: exit %d\nstdout:\n%s\nstderr:\n%s", c2, o2, s2)
	if c1 != 0 || c2 != 0 || refusedMoves(s1) != 2 {
		t.Fatalf("sessions exit %d, %d; moving the masked folders aside must fail with EBUSY (pinned) or EROFS (the home's read-only top)", c1, c2)
	}
	if strings.Contains(o2, "FAKE-RSA-KEY") || strings.Contains(o2, "FAKE-AWS-SECRET") {
		t.Fatalf("the agent read a masked secret of the home after moving its folder aside")
	}
}

// TestNestedHomeMaskRenamedAway: a mask below a folder of the home
// (~/.config/gcloud, ~/.config/gh, ~/.local/share/keyrings) travels with
// that folder: with the home in the workdir, the agent must not move
// ~/.config aside in one session and read the secrets under the new name
// in the next.
func TestNestedHomeMaskRenamedAway(t *testing.T) {
	e := setup(t, layout{name: "workdir-is-home/root"})
	e.workdir = e.home
	o1, s1, c1 := e.rtsbRun(t, nil, nil, "sh", "-c", `mv "$HOME/.config" "$HOME/.c2"; echo done`)
	t.Logf("session 1: exit %d\nstdout:\n%s\nstderr:\n%s", c1, o1, s1)
	o2, s2, c2 := e.rtsbRun(t, nil, nil, "sh", "-c", `cat "$HOME/.c2/gcloud/credentials.db"; echo; true`)
	t.Logf("session 2: exit %d\nstdout:\n%s\nstderr:\n%s", c2, o2, s2)
	if strings.Contains(o2, "FAKE-GCLOUD-CRED") {
		t.Fatalf("the agent read a masked secret after moving the folder that holds its mask aside")
	}
	if c1 != 0 || c2 != 0 || refusedMoves(s1) != 1 {
		t.Fatalf("sessions exit %d, %d; moving ~/.config aside must fail with EBUSY (pinned) or EROFS (the home's read-only top)", c1, c2)
	}
}

// TestHomeRenamedAwayFromParentWorkdir: the workdir is the folder that
// holds the home (and the vault: layout 2, the workdir is the vault's
// parent); the agent moves the whole home aside and makes an empty one in
// its place: the next session must not show the old home's masked
// secrets under the new name.
func TestHomeRenamedAwayFromParentWorkdir(t *testing.T) {
	e := setup(t, layout{name: "workdir-holds-home/root"})
	e.workdir = e.base
	o1, s1, c1 := e.rtsbRun(t, nil, nil, "sh", "-c", `mv "$HOME" "$HOME.x" && mkdir "$HOME"; echo done`)
	t.Logf("session 1: exit %d\nstdout:\n%s\nstderr:\n%s", c1, o1, s1)
	o2, s2, c2 := e.rtsbRun(t, nil, nil, "sh", "-c", `cat "$HOME.x/.ssh/id_rsa" "$HOME.x/.aws/credentials"; echo; true`)
	t.Logf("session 2: exit %d\nstdout:\n%s\nstderr:\n%s", c2, o2, s2)
	if strings.Contains(o2, "FAKE-RSA-KEY") || strings.Contains(o2, "FAKE-AWS-SECRET") {
		t.Fatalf("the agent read the home's masked secrets after moving the home aside")
	}
	if c1 != 0 || !strings.Contains(s1, "Device or resource busy") {
		t.Fatalf("session 1 exit %d; moving the home aside must fail with EBUSY (pinned)", c1)
	}
}

// TestCredentialNotInSandboxInit: the real key (an env credential) is in
// no process of the sandbox — its init (pid 1) included — nor in its
// environment, command line or auxiliary files.
func TestCredentialNotInSandboxInit(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	prof := credProfile(t, e, "1", "2", "TEST_API_KEY")
	probe := `
import os
m = ("REALSECRET" + "MARKER").encode()
hits = []
for d in os.listdir("/proc"):
    if not d.isdigit() or int(d) == os.getpid(): continue
    for f in ("environ", "cmdline", "maps"):
        try:
            if m in open("/proc/%s/%s" % (d, f), "rb").read(): hits.append(d + "/" + f)
        except Exception as x: pass
    try:
        fd = os.open("/proc/%s/mem" % d, os.O_RDONLY); os.close(fd); hits.append(d + "/mem-open")
    except Exception: pass
print("HITS", hits, "PIDS", sorted(d for d in os.listdir("/proc") if d.isdigit()))
`
	o, s, c := e.rtsbRun(t, []string{"--profile", prof}, []string{"TEST_API_KEY=" + realEnvKey, "OTHER_COPY=" + realEnvKey}, "python3", "-c", probe)
	t.Logf("exit %d\n%s\n%s", c, o, s)
	if c != 0 || !strings.Contains(o, "HITS []") {
		t.Fatalf("the real key is readable inside, or a process's memory is open: %s", o)
	}
}

// TestCredentialFileLinkIntoWorkdir: the credential file is a link (a
// dotfiles checkout) whose target lies in the writable workdir: the real
// file must not be readable there, nor through the shown link.
func TestCredentialFileLinkIntoWorkdir(t *testing.T) {
	for _, show := range []bool{true, false} {
		t.Run(map[bool]string{true: "shown", false: "allow-list"}[show], func(t *testing.T) { testCredentialFileLinkIntoWorkdir(t, show) })
	}
}

func testCredentialFileLinkIntoWorkdir(t *testing.T, show bool) {
	e := setup(t, layout{name: "beside/root"})
	prof := credProfile(t, e, "1", "2", "TEST_API_KEY")
	auth := filepath.Join(e.home, ".testagent", "auth.json")
	dots := filepath.Join(e.workdir, "dotfiles")
	must(t, os.MkdirAll(dots, 0o755))
	must(t, os.Rename(auth, filepath.Join(dots, "auth.json")))
	must(t, os.Symlink(filepath.Join(dots, "auth.json"), auth))
	if show {
		b, _ := os.ReadFile(prof)
		must(t, os.WriteFile(prof, append(b, []byte("home:\n  show: [.testagent/]\n")...), 0o644))
	}
	o, s, c := e.rtsbRun(t, []string{"--profile", prof}, []string{"TEST_API_KEY=" + realEnvKey}, "sh", "-c", `cat dotfiles/auth.json; echo; cat "$HOME/.testagent/auth.json"; echo; true`)
	t.Logf("exit %d\n%s\n%s", c, o, s)
	if strings.Contains(o, credMarker) {
		t.Fatalf("the real credential file is readable through the workdir")
	}
	if c != 0 && c != 125 {
		t.Fatalf("exit %d", c)
	}
}

// TestCredentialFileLinkInHome: the link's target lies in a shown folder
// of the allow-list home (home.show: [dotfiles/]).
func TestCredentialFileLinkInHome(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	prof := credProfile(t, e, "1", "2", "TEST_API_KEY")
	auth := filepath.Join(e.home, ".testagent", "auth.json")
	dots := filepath.Join(e.home, "dotfiles")
	must(t, os.MkdirAll(dots, 0o755))
	must(t, os.Rename(auth, filepath.Join(dots, "auth.json")))
	must(t, os.Symlink(filepath.Join(dots, "auth.json"), auth))
	b, _ := os.ReadFile(prof)
	must(t, os.WriteFile(prof, append(b, []byte("home:\n  show: [dotfiles/]\n")...), 0o644))
	o, s, c := e.rtsbRun(t, []string{"--profile", prof}, []string{"TEST_API_KEY=" + realEnvKey}, "sh", "-c", `cat "$HOME/dotfiles/auth.json"; echo; cat "$HOME/.testagent/auth.json"; echo; true`)
	t.Logf("exit %d\n%s\n%s", c, o, s)
	if strings.Contains(o, credMarker) {
		t.Fatalf("the real credential file is readable through a shown home folder")
	}
	if c != 0 && c != 125 {
		t.Fatalf("exit %d", c)
	}
}

// TestCredentialFilePlanted: under the claude profile (~/.claude/
// writable), a user who logs in by API key has no
// ~/.claude/.credentials.json; the agent must not leave one (an OAuth
// login of its own choosing, which the user's next claude outside would
// use: the user's work would go to the agent's account).
func TestCredentialFilePlanted(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	must(t, os.MkdirAll(filepath.Join(e.home, ".claude"), 0o755))
	plant := `{"claudeAiOauth": {"accessToken": "sk-ant-oat01-agentsownaccount0123456789", "refreshToken": "sk-ant-ort01-agentsownaccount0123456789", "expiresAt": 4102444800000}}`
	o, s, c := e.rtsbRun(t, []string{"--profile", "claude"}, nil, "sh", "-c", `printf '%s' "$1" > "$HOME/.claude/.credentials.json" && echo WROTE; true`, "sh", plant)
	t.Logf("exit %d\n%s\n%s", c, o, s)
	if c != 0 {
		t.Fatalf("exit %d", c)
	}
	if _, err := os.Lstat(filepath.Join(e.home, ".claude", ".credentials.json")); err == nil {
		t.Errorf("PARTIAL the agent left a ~/.claude/.credentials.json of its own in the user's home")
	}
}

// TestCredentialPinKeepsMasks: pinning ~/.config for a credential file in
// it (the home in the workdir) keeps the masks and the read-only names
// below it (the pin is a recursive bind).
func TestCredentialPinKeepsMasks(t *testing.T) {
	e := setup(t, layout{name: "workdir-is-home/root"})
	e.workdir = e.home
	dir := filepath.Join(e.home, ".config", "rtcred")
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "auth.json"), []byte(`{"tokens": {"access_token": "`+realFileToken+`"}}`), 0o644))
	prof := filepath.Join(e.outDir, "pin.yaml")
	must(t, os.WriteFile(prof, []byte("name: pin\nextends: default\nnetwork: none\ncredentials:\n"+
		"  - {name: t, file: ~/.config/rtcred/auth.json, path: tokens.access_token, hosts: [\"127.0.0.1:1\"], header: x-t}\n"), 0o644))
	o, s, c := e.rtsbRun(t, []string{"--profile", prof}, nil, "sh", "-c",
		`cat "$HOME/.config/gcloud/credentials.db" "$HOME/.config/rtcred/auth.json"; echo; echo x >> "$HOME/.config/git/config" && echo GITCONFIG-WRITTEN; mv "$HOME/.config" "$HOME/.c3"; mv "$HOME/.config/rtcred" "$HOME/.r3"; true`)
	t.Logf("exit %d\n%s\n%s", c, o, s)
	if c != 0 {
		t.Fatalf("exit %d", c)
	}
	if strings.Contains(o, "FAKE-GCLOUD-CRED") || strings.Contains(o, credMarker) || strings.Contains(o, "GITCONFIG-WRITTEN") {
		t.Fatalf("a mask, the cover or a read-only name below the pin was lost")
	}
	if refusedMoves(s) != 2 {
		t.Errorf("want both renames refused with EBUSY (pinned) or EROFS (the home's read-only top)")
	}
}

// refusedMoves counts the renames mv reports refused by a mount point
// (EBUSY: pinned) or by the read-only top of a home in a writable path
// (EROFS, rule home-config-readonly: the kernel checks the mount before
// the mount point).
func refusedMoves(stderr string) int {
	return strings.Count(stderr, "Device or resource busy") + strings.Count(stderr, "Read-only file system")
}
