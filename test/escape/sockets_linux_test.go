package escape

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

// Guarantee 5, issue 22: no unix socket or FIFO of the host answers the
// agent unless its profile lists it (unix_sockets), in any tree the
// sandbox shows. Through the idmap a root caller's agent owns the
// caller's 0600 sockets, a read-only mount does not stop connect(2), and
// Landlock does not cover pathname-socket connect on this kernel: before
// the allow-list each of these answered (a docker socket is host root).

// socketProbe connects to each NAME=PATH argument and prints NAME and the
// socket's first line or the errno's name; NAME=fifo:PATH opens a FIFO
// for writing without blocking and writes to it.
const socketProbe = `
import errno, os, socket, sys
for arg in sys.argv[1:]:
    name, p = arg.split("=", 1)
    try:
        if p.startswith("fifo:"):
            fd = os.open(p[5:], os.O_WRONLY | os.O_NONBLOCK)
            os.write(fd, b"AGENT-WROTE\n"); os.close(fd)
            print(name, "OK")
            continue
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(p); print(name, s.recv(64).decode().strip() or "EMPTY"); s.close()
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, str(e.errno)))
print("END")
`

// serveSocket listens on p (owner uid:gid, mode), answering HOST-SOCKET,
// until the test ends; the socket is removed then.
func serveSocket(t *testing.T, p string, uid, gid int, mode os.FileMode) {
	t.Helper()
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close(); os.Remove(p) })
	must(t, os.Chown(p, uid, gid))
	must(t, os.Chmod(p, mode))
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HOST-SOCKET\n"))
			c.Close()
		}
	}()
}

// mkdirOwned makes base/rel, each new component owned by uid:gid.
func mkdirOwned(t *testing.T, base, rel string, uid, gid int) string {
	t.Helper()
	p := base
	for _, c := range filepath.SplitList(strings.ReplaceAll(rel, "/", string(filepath.ListSeparator))) {
		p = filepath.Join(p, c)
		if err := os.Mkdir(p, 0o755); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		must(t, os.Chown(p, uid, gid))
	}
	return p
}

// TestUnlistedSocketsUnreachable: for a root and an unprivileged caller,
// a 0600 socket of the caller's in its home (~/.colima/default/docker.sock)
// does not exist inside (ENOENT: the home is an allow-list, .colima is not
// on it); one in a home entry the profile shows (~/.local/bin) and one in
// the workdir are masked by the empty read-only file (EACCES on the
// namespace backend: connect(2) needs write permission on a mode-0000
// file before it finds no socket; ECONNREFUSED on a container backend's
// /dev/null mask, not a socket); a world-writable socket under /var/tmp
// does not exist (ENOENT: /var/tmp is a private tmpfs); a FIFO in the
// workdir a host process reads is masked too (EACCES) and nothing the
// agent writes reaches the host reader. The same sockets listed in
// unix_sockets answer: the workdir's (the agent's uid owns it through the
// idmap or as the caller) and /var/tmp's (bound back into the tmpfs).
func TestUnlistedSocketsUnreachable(t *testing.T) {
	for _, l := range []layout{{name: "beside/root"}, {name: "beside/user", gateOwned: true, user: true}} {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			uid, gid := 0, 0
			if l.user {
				uid, gid = agentUID, agentUID
			} else {
				// Root's home is 0700 on most hosts: the old model
				// attached it idmapped root→agent, making the agent the
				// owner of every 0600 socket in it.
				must(t, os.Chmod(e.home, 0o700))
			}
			var b [4]byte
			rand.Read(b[:])
			tag := hex.EncodeToString(b[:])
			homeSock := filepath.Join(e.home, ".colima", "default", "docker.sock")
			shownSock := filepath.Join(e.home, ".local", "bin", "editor.sock")
			workSock := filepath.Join(e.workdir, ".devenv", "state", "daemon.sock")
			workListed := filepath.Join(e.workdir, "listed.sock")
			varTmp := filepath.Join("/var/tmp", "sock-"+tag+".sock")
			varTmpListed := filepath.Join("/var/tmp", "sock-"+tag+"-listed.sock")
			mkdirOwned(t, e.home, ".colima/default", uid, gid)
			mkdirOwned(t, e.home, ".local/bin", uid, gid)
			mkdirOwned(t, e.workdir, ".devenv/state", uid, gid)
			serveSocket(t, homeSock, uid, gid, 0o600)
			// World-writable: only the mask stops it, whatever the uid.
			serveSocket(t, shownSock, uid, gid, 0o666)
			serveSocket(t, workSock, uid, gid, 0o600)
			serveSocket(t, workListed, uid, gid, 0o600)
			serveSocket(t, varTmp, 0, 0, 0o666)
			serveSocket(t, varTmpListed, 0, 0, 0o666)
			fifo := filepath.Join(e.workdir, "cmd.fifo")
			must(t, syscall.Mkfifo(fifo, 0o600))
			must(t, os.Chown(fifo, uid, gid))
			// The host's reader: open read-write, so the agent's open for
			// writing would not fail for want of a reader (ENXIO).
			// A raw fd: an *os.File would park Read on the poller.
			rd, err := syscall.Open(fifo, syscall.O_RDWR|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
			must(t, err)
			defer syscall.Close(rd)

			prof := filepath.Join(e.outDir, "sock.yaml")
			must(t, os.WriteFile(prof, []byte("name: sock\nextends: default\nunix_sockets: ["+workListed+", "+varTmpListed+"]\n"), 0o644))
			if l.user {
				must(t, os.Chown(prof, uid, gid))
			}
			r := e.run(t, []string{"--profile", prof}, "python3", "-c", socketProbe,
				"HOME_SOCKET="+homeSock, "SHOWN_SOCKET="+shownSock, "WORKDIR_SOCKET="+workSock, "VARTMP_SOCKET="+varTmp,
				"WORKDIR_FIFO=fifo:"+fifo, "LISTED_WORKDIR="+workListed, "LISTED_VARTMP="+varTmpListed)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			got := parseProbe(r.stdout)
			t.Logf("probe:\n%s", r.stdout)
			masked := "EACCES" // the namespace backend's mode-0000 empty file
			if testutil.Backend() != "namespace" {
				masked = "ECONNREFUSED" // /dev/null: not a socket
			}
			for k, w := range map[string]string{
				"HOME_SOCKET":    "ENOENT",
				"SHOWN_SOCKET":   masked,
				"WORKDIR_SOCKET": masked,
				"VARTMP_SOCKET":  "ENOENT",
				"WORKDIR_FIFO":   "EACCES",
				"LISTED_WORKDIR": "HOST-SOCKET",
				"LISTED_VARTMP":  "HOST-SOCKET",
				"END":            "",
			} {
				if got[k] != w {
					t.Errorf("%s: got %q, want %q", k, got[k], w)
				}
			}
			buf := make([]byte, 64)
			if n, _ := syscall.Read(rd, buf); n > 0 {
				t.Errorf("the host's FIFO reader got %q from the agent", buf[:n])
			}
			// The masks leave the host's files as they were.
			for _, p := range []string{workSock, shownSock} {
				fi, err := os.Lstat(p)
				if err != nil || fi.Mode()&os.ModeSocket == 0 {
					t.Errorf("%s after the session: %v %v (want the socket, untouched)", p, fi, err)
				}
			}
		})
	}
}

// TestSocketScanFailsClosed: a workdir larger than the profile's bound
// for the start-time socket scan (limits.scan_entries) refuses the
// session (exit 125, the tree and the key named) before the agent runs,
// rather than start with sockets unchecked.
func TestSocketScanFailsClosed(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	for i := 0; i < 40; i++ {
		must(t, os.WriteFile(filepath.Join(e.workdir, "f"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+".txt"), nil, 0o644))
	}
	prof := filepath.Join(e.outDir, "small.yaml")
	must(t, os.WriteFile(prof, []byte("name: small\nextends: default\nlimits:\n  scan_entries: 16\n"), 0o644))
	r := e.run(t, []string{"--profile", prof}, "/bin/sh", "-c", "echo AGENT-RAN")
	if r.code != 125 || strings.Contains(string(r.stdout), "AGENT-RAN") {
		t.Fatalf("exit %d (want 125, agent not started)\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, w := range []string{e.workdir, "scan_entries", "unix sockets and FIFOs"} {
		if !strings.Contains(string(r.stderr), w) {
			t.Errorf("stderr does not name %q:\n%s", w, r.stderr)
		}
	}
}

// TestAllowlistHomeEverydayBuilds: under the allow-list home of the
// built-in default profile, the everyday builds still work for a root and
// an unprivileged caller — git with the user's ~/.gitconfig (home.show),
// go build (module and build caches in the profile's state), make, a
// Python venv and npm install of a local package (~/.npm in state) —
// offline, in the workdir.
func TestAllowlistHomeEverydayBuilds(t *testing.T) {
	for _, tool := range []string{"/usr/local/go/bin/go", "make", "git", "python3", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: %v", tool, err) // the host's toolchain, not fedmem's
		}
	}
	for _, l := range []layout{{name: "beside/root"}, {name: "beside/user", gateOwned: true, user: true}} {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			uid := 0
			if l.user {
				uid = agentUID
			}
			files := map[string]string{
				"go.mod":           "module example.com/m\n\ngo 1.21\n",
				"main.go":          "package main\n\nfunc main() { println(\"built\") }\n",
				"Makefile":         "all:\n\techo MAKE-OK > made.txt\n",
				"dep/package.json": `{"name":"dep","version":"1.0.0"}`,
				"package.json":     `{"name":"app","version":"1.0.0"}`,
			}
			for rel, c := range files {
				p := filepath.Join(e.workdir, rel)
				must(t, os.MkdirAll(filepath.Dir(p), 0o755))
				must(t, os.WriteFile(p, []byte(c), 0o644))
				must(t, os.Chown(filepath.Dir(p), uid, uid))
				must(t, os.Chown(p, uid, uid))
			}
			// The repository exists before the session: the agent may
			// not create .git (guarantee 6 holds its hooks and config).
			if _, err := testutil.Git(e.workdir, "init", "-q"); err != nil {
				t.Fatal(err)
			}
			must(t, testutil.ChownTree(filepath.Join(e.workdir, ".git"), uid, uid))
			gc := filepath.Join(e.home, ".gitconfig")
			must(t, os.WriteFile(gc, []byte("[user]\n\tname = Fedmem Test\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644))
			must(t, os.Chown(gc, uid, uid))
			script := `set -e
export GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off
git add -A && git commit -qm agent-commit && echo GIT-OK "$(git log -1 --format=%an)"
/usr/local/go/bin/go build -o app . && ./app 2>&1 && echo GO-OK
make -s && cat made.txt
python3 -m venv venv && ./venv/bin/python -c 'print("VENV-OK")'
npm install --offline --no-audit --no-fund ./dep >/dev/null && test -e node_modules/dep/package.json && echo NPM-OK
`
			// A cold Go build cache (the profile's fresh state) compiles the
			// runtime: more than e.run's two minutes on a loaded host.
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			cmd := e.command(ctx, "", nil, "/bin/sh", "-c", script)
			var so, se bytes.Buffer
			cmd.Stdout, cmd.Stderr = &so, &se
			code := exitCode(cmd.Run())
			t.Logf("stdout:\n%s\nstderr:\n%s", so.Bytes(), se.Bytes())
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			for _, w := range []string{"GIT-OK Fedmem Test", "built", "GO-OK", "MAKE-OK", "VENV-OK", "NPM-OK"} {
				if !strings.Contains(so.String(), w) {
					t.Errorf("no %q in the output", w)
				}
			}
		})
	}
}

// TestListedHomeSocketAnswers: a socket of the caller's in its home that
// the profile lists (a docker socket the user means the agent to have)
// answers the agent for a root caller too — bound into the allow-list
// home idmapped caller→agent, read-only (connect needs write permission
// on a 0600 socket, which the agent's uid holds only through the idmap) —
// while its unlisted sibling does not exist there (ENOENT). The container
// backends bind it without the idmap (DAC decides: EACCES for a root
// caller's 0600 socket).
func TestListedHomeSocketAnswers(t *testing.T) {
	for _, l := range []layout{{name: "beside/root"}, {name: "beside/user", gateOwned: true, user: true}} {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			uid := 0
			if l.user {
				uid = agentUID
			} else {
				must(t, os.Chmod(e.home, 0o700))
			}
			dir := mkdirOwned(t, e.home, ".colima/default", uid, uid)
			listed, other := filepath.Join(dir, "docker.sock"), filepath.Join(dir, "other.sock")
			serveSocket(t, listed, uid, uid, 0o600)
			serveSocket(t, other, uid, uid, 0o600)
			prof := filepath.Join(e.outDir, "dock.yaml")
			must(t, os.WriteFile(prof, []byte("name: dock\nextends: default\nunix_sockets: ["+listed+"]\n"), 0o644))
			r := e.run(t, []string{"--profile", prof}, "python3", "-c", socketProbe, "LISTED="+listed, "OTHER="+other)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			got := parseProbe(r.stdout)
			// Every backend: the listed socket is bound idmapped
			// caller→agent (runc and containerd too, since issue 23's
			// last item; before, a root caller's 0600 one refused there).
			want := "HOST-SOCKET"
			if got["LISTED"] != want || got["OTHER"] != "ENOENT" {
				t.Fatalf("listed home socket %q (want %s), unlisted sibling %q (want ENOENT)\n%s", got["LISTED"], want, got["OTHER"], r.stdout)
			}
		})
	}
}
