package escape

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
)

// setidProbe runs in the workdir: the set-id attempts an agent would make
// (each line NAME and "ok" or the errno name) and the ordinary mode work
// that must go on — cp -p, chmod 755, the sticky bit, tar -x of ordinary
// files, and go build when go is installed.
const setidProbe = `
import errno, os, subprocess, sys
def t(n, f):
    try: f(); print(n, "ok")
    except OSError as e: print(n, errno.errorcode[e.errno])
def sh(n, c):
    r = subprocess.run(["sh", "-c", c], capture_output=True, text=True)
    print(n, "ok" if r.returncode == 0 else "exit%d %s" % (r.returncode, r.stderr.strip().replace("\n", " | ")))
t("OPEN_CREAT_4755", lambda: os.close(os.open("s1", os.O_WRONLY|os.O_CREAT, 0o4755)))
t("MKDIR_2775", lambda: os.mkdir("s2", 0o2775))
open("s3", "w").close()
t("CHMOD_6755", lambda: os.chmod("s3", 0o6755))
sh("CP_P_CHMOD_755", "cp -p /bin/true plain && chmod 755 plain && ./plain")
sh("STICKY_1777", "mkdir sticky && chmod 1777 sticky")
sh("TAR_X", "mkdir -p src/a && echo hi > src/a/f && chmod 640 src/a/f && tar -cf a.tar -C src a && mkdir out && tar -xpf a.tar -C out && test \"$(stat -c %a out/a/f)\" = 640")
go = next((p for p in ["/usr/local/go/bin/go", "/usr/bin/go"] if os.path.exists(p)), None)
if go:
    os.makedirs("gob", exist_ok=True)
    open("gob/go.mod", "w").write("module example.com/gob\n\ngo 1.21\n")
    open("gob/main.go", "w").write("package main\n\nfunc main() { println(\"built\") }\n")
    sh("GO_BUILD", "cd gob && HOME=/tmp GOCACHE=/tmp/gocache GOPATH=/tmp/gopath GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 " + go + " build -buildvcs=false -o gob . && ./gob")
else:
    print("GO_BUILD skip")
`

// TestSUIDSGIDRefusedPlainModesWork: inside the sandbox a set-id mode is
// refused (EPERM, seccomp rule suid-sgid, reported with its hint) however
// it is asked for, while ordinary modes, cp -p, tar -x and go build work;
// no set-id file is on the host afterwards. Root and user callers.
func TestSUIDSGIDRefusedPlainModesWork(t *testing.T) {
	for _, l := range []layout{{name: "beside/root"}, {name: "beside/user", gateOwned: true, user: true}} {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			evs := filepath.Join(e.outDir, "events.jsonl")
			r := e.run(t, []string{"--profile", "default", "--events", evs}, "python3", "-c", setidProbe)
			t.Logf("%s: exit %d\n%s%s", testutil.Backend(), r.code, r.stdout, r.stderr)
			got := probeLines(r.stdout)
			for _, k := range []string{"OPEN_CREAT_4755", "MKDIR_2775", "CHMOD_6755"} {
				if got[k] != "EPERM" {
					t.Errorf("%s: %q, want EPERM (rule suid-sgid)", k, got[k])
				}
			}
			for _, k := range []string{"CP_P_CHMOD_755", "STICKY_1777", "TAR_X"} {
				if got[k] != "ok" {
					t.Errorf("%s: %q, want ok", k, got[k])
				}
			}
			if _, err := exec.LookPath("go"); err == nil && got["GO_BUILD"] != "ok" {
				t.Errorf("GO_BUILD: %q, want ok", got["GO_BUILD"])
			}
			n := 0
			for _, m := range eventsOf(t, evs, "denied") {
				if m["rule"] == "suid-sgid" {
					n++
					if m["errno"] != "EPERM" || !strings.Contains(m["hint"].(string), "setuid/setgid bits can never be set inside fedmem") {
						t.Errorf("denied event %v: want errno EPERM and the set-id hint", m)
					}
				}
			}
			if n < 3 {
				t.Errorf("%d denied events of rule suid-sgid, want 3", n)
			}
			filepath.WalkDir(e.workdir, func(p string, d os.DirEntry, err error) error {
				if err != nil {
					return nil
				}
				if fi, err := os.Lstat(p); err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
					t.Errorf("%s is %v on the host after the session", p, fi.Mode())
				}
				return nil
			})
		})
	}
}
