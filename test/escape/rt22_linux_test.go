package escape

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Red team of issue 22 (the home in a writable path, listed sockets bound
// back idmapped, Landlock granting exactly the listed sockets).

// TestRT22ListedSocketLinkPlanted: a socket the profile lists in the
// workdir (a dev server's socket, W/sock/app.sock) is bound back onto
// itself idmapped root→agent. The agent, in one session, moves the
// socket's folder aside (the bind is on the socket, not on its folder:
// rename works) and leaves a relative link in its place, W/sock ->
// ../srv. In the next session the listed path resolves, on the host and in
// the sandbox alike, to ../srv/app.sock: a root-only (0600) socket in the
// host tree the sandbox shows read-only, which the profile does not list.
// On the old code that bind followed the link and, idmapped root→agent,
// made the agent the socket's owner: it answered (HOST-SOCKET) — on every
// backend. The same link into /run (../../run with a listed docker.sock)
// reaches the host's docker socket. Rule unix-socket-no-link: a listed
// path that goes through a link is not bound (a warning names it and its
// real path); the unlisted socket refuses the agent (EACCES: DAC).
func TestRT22ListedSocketLinkPlanted(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	srv := filepath.Join(e.base, "srv")
	must(t, os.MkdirAll(srv, 0o755))
	secret := filepath.Join(srv, "app.sock")
	serveSocket(t, secret, 0, 0, 0o600)
	sockDir := filepath.Join(e.workdir, "sock")
	must(t, os.MkdirAll(sockDir, 0o755))
	listed := filepath.Join(sockDir, "app.sock")
	serveSocket(t, listed, 0, 0, 0o600)
	prof := filepath.Join(e.outDir, "listed.yaml")
	must(t, os.WriteFile(prof, []byte("name: listed\nextends: default\nunix_sockets: ["+listed+"]\n"), 0o644))

	// Session 1: the listed socket answers; the agent plants the link.
	plant := `python3 -c "$1" "LISTED=$2" "SECRET=$3" && mv "$4" "$4.old" && ln -s ../srv "$4" && echo PLANTED`
	o1, s1, c1 := e.rtsbRun(t, []string{"--profile", prof}, nil, "sh", "-c", plant, "sh", socketProbe, listed, secret, sockDir)
	t.Logf("session 1: exit %d\n%s%s", c1, o1, s1)
	got1 := parseProbe([]byte(o1))
	if c1 != 0 || got1["LISTED"] != "HOST-SOCKET" || !strings.Contains(o1, "PLANTED") {
		t.Fatalf("session 1: the listed socket did not answer or the link was not planted (exit %d): %v", c1, got1)
	}
	if got1["SECRET"] != "EACCES" {
		t.Fatalf("session 1: the unlisted root-only socket: %q, want EACCES", got1["SECRET"])
	}
	if fi, err := os.Lstat(sockDir); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was not left on the host: %v", err)
	}

	// Session 2: the listed path now goes through the agent's link.
	o2, s2, c2 := e.rtsbRun(t, []string{"--profile", prof}, nil, "python3", "-c", socketProbe, "VIA_LISTED="+listed, "SECRET="+secret)
	t.Logf("session 2: exit %d\n%s%s", c2, o2, s2)
	if c2 != 0 {
		t.Fatalf("session 2: exit %d (a planted link must not refuse the next session)", c2)
	}
	got2 := parseProbe([]byte(o2))
	for _, k := range []string{"VIA_LISTED", "SECRET"} {
		if got2[k] != "EACCES" {
			t.Errorf("%s: %q, want EACCES (the unlisted root-only socket behind the agent's link must not answer)", k, got2[k])
		}
	}
	if !strings.Contains(s2, "unix-socket-no-link") || !strings.Contains(s2, listed) {
		t.Errorf("no warning naming the listed path and rule unix-socket-no-link on stderr:\n%s", s2)
	}
}
