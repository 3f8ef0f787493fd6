package escape

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/test/testutil"
)

// roProbe tries, for each path, to append to it and to create a file
// beside it, and prints WROTE or "refused OP PATH ERRNO" for each attempt.
// argv[1] is a control path in the workdir that must be writable.
const roProbe = `
import errno, os, sys
def attempt(op, p):
    try:
        if op == "append":
            fd = os.open(p, os.O_WRONLY | os.O_APPEND)
        else:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"AGENT WAS HERE\n")
        os.close(fd)
        print("WROTE", op, p, flush=True)
    except OSError as e:
        print("refused", op, p, errno.errorcode.get(e.errno, e.errno), flush=True)
attempt("create", sys.argv[1])
for p in sys.argv[2:]:
    attempt("append", p)
    attempt("create", os.path.join(os.path.dirname(p), "new-by-agent"))
`

// roBind binds src at dst (made) and remounts it read-only, as a user's
// read-only alias would be; the cleanup detaches it before the temporary
// tree goes.
func roBind(t *testing.T, src, dst string) {
	t.Helper()
	must(t, os.MkdirAll(dst, 0o755))
	must(t, unix.Mount(src, dst, "", unix.MS_BIND, ""))
	t.Cleanup(func() { _ = unix.Unmount(dst, unix.MNT_DETACH) })
	must(t, unix.Mount("", dst, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""))
}

// TestReadOnlySubmountStaysReadOnly: a mount that is read-only on the host
// and lies inside the writable workdir — a read-only bind alias of the
// vault mounted in the project, and a plain read-only bind — stays
// read-only inside, for a root caller (the workdir idmapped to the agent)
// and an unprivileged one (no idmap). Before, the idmapped clone of the
// workdir cleared MOUNT_ATTR_RDONLY recursively: the agent appended to
// 00-global/AGENT.md through the alias (guarantee 1) and mounts.Verify did
// not notice; for an unprivileged caller the clone's recursive clear hit
// the locked read-only flag (EPERM) and every session was refused (exit
// 125). The agent's files are writable by its uid (idmapped to it, or its
// own, and mode 0666 besides), so only the mount's flag stands between it
// and the host files.
func TestReadOnlySubmountStaysReadOnly(t *testing.T) {
	for _, l := range []layout{{name: "beside/root"}, {name: "own-vault/user", user: true, agentOwned: true}} {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			plain := filepath.Join(e.base, "ro-src")
			must(t, os.MkdirAll(plain, 0o755))
			must(t, os.WriteFile(filepath.Join(plain, "data.txt"), []byte("host data\n"), 0o644))
			agentMD := filepath.Join(e.vault.Dir, "00-global/AGENT.md")
			// Writable by every uid on the host: only the mount's flag
			// stands between the agent and these files, whether the
			// backend idmaps the submount to it or not.
			for p, mode := range map[string]os.FileMode{plain: 0o777, filepath.Join(plain, "data.txt"): 0o666, filepath.Dir(agentMD): 0o777, agentMD: 0o666} {
				must(t, os.Chmod(p, mode))
			}
			alias := filepath.Join(e.workdir, "vault-alias")
			sub := filepath.Join(e.workdir, "ro-sub")
			roBind(t, e.vault.Dir, alias)
			roBind(t, plain, sub)
			beforeMD, err := os.ReadFile(agentMD)
			must(t, err)
			before, err := testutil.Take(e.vault.Dir)
			must(t, err)

			control := filepath.Join(e.workdir, "control.txt")
			targets := []string{filepath.Join(alias, "00-global/AGENT.md"), filepath.Join(sub, "data.txt")}
			r := e.run(t, nil, append([]string{"python3", "-c", roProbe, control}, targets...)...)
			t.Logf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			if r.code != 0 {
				t.Fatalf("the session did not run (exit %d): a read-only mount in the workdir must not refuse it\n%s", r.code, r.stderr)
			}
			out := string(r.stdout)
			if !strings.Contains(out, "WROTE create "+control) {
				t.Errorf("control: the agent could not write its workdir:\n%s", out)
			}
			for _, p := range targets {
				for _, op := range []string{"append " + p, "create " + filepath.Join(filepath.Dir(p), "new-by-agent")} {
					if strings.Contains(out, "WROTE "+op+"\n") {
						t.Errorf("BREACH: %s succeeded on a mount read-only on the host", op)
					} else if !strings.Contains(out, "refused "+op+" EROFS\n") {
						t.Errorf("%s: not refused with EROFS (the mount's read-only flag):\n%s", op, out)
					}
				}
			}
			if b, _ := os.ReadFile(agentMD); !bytes.Equal(b, beforeMD) {
				t.Errorf("BREACH: 00-global/AGENT.md changed on the host: %q", b)
			}
			if b, _ := os.ReadFile(filepath.Join(plain, "data.txt")); string(b) != "host data\n" {
				t.Errorf("BREACH: the read-only bind's file changed on the host: %q", b)
			}
			for _, p := range []string{filepath.Join(plain, "new-by-agent"), filepath.Join(e.vault.Dir, "00-global/new-by-agent")} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("BREACH: the agent created %s", p)
				}
			}
			after, err := testutil.Take(e.vault.Dir)
			must(t, err)
			for _, d := range testutil.Diff(before, after, func(rel string) bool { return rel == "90-inbox" || strings.HasPrefix(rel, "90-inbox/") }) {
				t.Errorf("BREACH: the vault changed: %s", d)
			}
		})
	}
}
