package escape

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

// profilePlant is the hostile agent planting a project profile for the next
// session (guarantee 6: nothing the agent writes runs later outside — a
// profile decides what the next agent may touch). fedmem-run resolves
// `--profile NAME` through WORKDIR/.fedmem/profiles/NAME.yaml first, and the
// workdir is the agent's to write; so the agent tries to create that file,
// to change one the user wrote, and to move the folder aside.
const profilePlant = `
import errno, json, os
def out(attempt, e):
    print(json.dumps({"attempt": attempt, "errno": e}), flush=True)
def attempt(name, fn):
    try:
        fn()
        out(name, "")
    except OSError as e:
        out(name, errno.errorcode.get(e.errno, str(e.errno)))
def write(p, data, mode="w"):
    def f():
        with open(p, mode) as fh:
            fh.write(data)
    return f
evil = "name: x\nnetwork: host\nhome:\n  mode: rw\n"
attempt("create .fedmem/profiles", lambda: os.makedirs(".fedmem/profiles", exist_ok=True))
attempt("create profile x", write(".fedmem/profiles/x.yaml", evil))
attempt("modify profile mine", write(".fedmem/profiles/mine.yaml", evil, "a"))
attempt("replace profile mine", lambda: os.rename(".fedmem/profiles/mine.yaml", ".fedmem/profiles/old.yaml"))
attempt("move .fedmem aside", lambda: os.rename(".fedmem", ".fedmem-moved"))
`

type plantResult struct {
	Attempt string `json:"attempt"`
	Errno   string `json:"errno"`
}

func plantResults(t *testing.T, out []byte) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var x plantResult
		if err := json.Unmarshal(l, &x); err != nil {
			t.Fatalf("probe output %q: %v", l, err)
		}
		got[x.Attempt] = x.Errno
	}
	return got
}

// TestProfilePathPlantRefused: an agent under fedmem-run that creates
// .fedmem/profiles/x.yaml in a workdir without .fedmem finds it moved aside
// after the session (no placeholder holds an absent name: one is an entry
// Git shows; the after-session walk judges the fedmem family at the top
// too), with a persistence event naming it; it cannot modify or rename an
// existing project profile (read-only bind, EROFS; a mount point, EBUSY);
// the host keeps the user's file as it was and no .fedmem is left where
// there was none.
func TestProfilePathPlantRefused(t *testing.T) {
	for _, l := range []layout{{name: "beside/root"}, {name: "own-vault/user", user: true, agentOwned: true}} {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			// Workdir A: no .fedmem at all.
			evs := filepath.Join(e.outDir, "plant-events.jsonl")
			r := e.run(t, []string{"--profile", "default", "--events", evs}, "python3", "-c", profilePlant)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			got := plantResults(t, r.stdout)
			if e := got["create profile x"]; e != "" {
				t.Errorf("create profile x (no .fedmem before): errno %q; the name is free inside and judged after", e)
			}
			if _, err := os.Lstat(filepath.Join(e.workdir, ".fedmem")); !os.IsNotExist(err) {
				t.Errorf("BREACH .fedmem exists on the host after the session (%v)", err)
			}
			// The probe's last step renamed its own .fedmem to .fedmem-moved
			// (a name nothing reads); had it not, the walk would have moved
			// .fedmem aside (TestPersistenceFamilies judges the families).
			if got["move .fedmem aside"] == "" {
				os.RemoveAll(filepath.Join(e.workdir, ".fedmem-moved"))
			} else {
				aside := filepath.Join(e.workdir, ".fedmem.fedmem-quarantined-"+r.session)
				if !persistenceEventNames(t, evs, filepath.Join(e.workdir, ".fedmem"), "fedmem") {
					t.Errorf("no persistence event moved %s/.fedmem aside", e.workdir)
				}
				os.RemoveAll(aside)
			}

			// Workdir with the user's own project profile.
			dir := filepath.Join(e.workdir, ".fedmem", "profiles")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			mine := filepath.Join(dir, "mine.yaml")
			body := "name: mine\nextends: default\n"
			os.WriteFile(mine, []byte(body), 0o644)
			if l.user {
				testutil.ChownTree(filepath.Join(e.workdir, ".fedmem"), agentUID, agentUID)
			}
			// A project profile is used once the user has allowed it.
			r = e.run(t, []string{"--profile", "mine"}, "true")
			if r.code != 125 || !strings.Contains(string(r.stderr), "has not been allowed") || !strings.Contains(string(r.stderr), mine) {
				t.Errorf("unallowed project profile: exit %d, stderr %s", r.code, r.stderr)
			}
			e.allowProfile(t, mine)
			r = e.run(t, []string{"--profile", "mine"}, "python3", "-c", profilePlant)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if r.report["profile"] != "mine" {
				t.Errorf("the session ran profile %v, not the project's mine.yaml", r.report["profile"])
			}
			got = plantResults(t, r.stdout)
			want := map[string][]string{
				"create profile x":     {"EROFS", "EACCES"},
				"modify profile mine":  {"EROFS", "EACCES"},
				"replace profile mine": {"EROFS", "EBUSY", "EACCES"},
				"move .fedmem aside":   {"EBUSY"},
			}
			for a, ok := range want {
				if !contains(ok, got[a]) {
					t.Errorf("BREACH %s: errno %q, want one of %v", a, got[a], ok)
				}
			}
			if b, _ := os.ReadFile(mine); string(b) != body {
				t.Errorf("BREACH the project profile changed on the host: %q", b)
			}
			if _, err := os.Lstat(filepath.Join(dir, "x.yaml")); !os.IsNotExist(err) {
				t.Errorf("BREACH x.yaml planted on the host (%v)", err)
			}
		})
	}
}

// allowProfile runs `fedmem profile allow FILE` as the caller of e's
// fedmem-run (same user, same HOME): the user reading and allowing a
// profile file an agent could have written.
func (e *env) allowProfile(t *testing.T, file string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name, args := e.bins.Fedmem, []string{"profile", "allow", file}
	if e.l.user {
		args = append([]string{"--reuid", strconv.Itoa(agentUID), "--regid", strconv.Itoa(agentUID), "--clear-groups", "--inh-caps=-all", "--", name}, args...)
		name = "setpriv"
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = e.workdir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + e.home, "LANG=C"}
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "allowed "+file) {
		t.Fatalf("fedmem profile allow %s: %v\n%s", file, err, out)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestProfilePathSearchAndTrust: `--profile NAME` resolves
// WORKDIR/.fedmem/profiles/NAME.yaml before the built-ins; --explain (text
// and JSON) names the file. A project profile writable by group or others,
// or owned by another user than the caller (or root), is refused with a
// message naming the file and the rule.
func TestProfilePathSearchAndTrust(t *testing.T) {
	e := setup(t, layout{name: "beside/user", gateOwned: true, user: true})
	dir := filepath.Join(e.workdir, ".fedmem", "profiles")
	os.MkdirAll(dir, 0o755)
	p := filepath.Join(dir, "proj.yaml")
	os.WriteFile(p, []byte("name: proj\nextends: default\nnetwork: none\n"), 0o644)
	testutil.ChownTree(filepath.Join(e.workdir, ".fedmem"), agentUID, agentUID)
	e.allowProfile(t, p)
	explain := func(extra ...string) (int, string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := e.command(ctx, "", append([]string{"--profile", "proj", "--explain"}, extra...))
		var so, se bytes.Buffer
		cmd.Stdout, cmd.Stderr = &so, &se
		return exitCode(cmd.Run()), so.String(), se.String()
	}
	code, out, stderr := explain()
	if code != 0 || !strings.Contains(out, "profile proj") || !strings.Contains(out, "source  "+p+" (project)") {
		t.Fatalf("--explain: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = explain("--json")
	var m map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &m) != nil || m["profile_source"] != p {
		t.Fatalf("--explain --json: exit %d, profile_source %v\n%s", code, m["profile_source"], out)
	}
	// A file anybody may write is refused, naming file and rule.
	os.Chmod(p, 0o666)
	if code, _, stderr := explain(); code != 125 || !strings.Contains(stderr, p) || !strings.Contains(stderr, "writable by group or others") {
		t.Errorf("group/other-writable project profile: exit %d, stderr %q", code, stderr)
	}
	os.Chmod(p, 0o644)
	// A file of another user.
	os.Chown(p, gateUID, gateUID)
	if code, _, stderr := explain(); code != 125 || !strings.Contains(stderr, p) || !strings.Contains(stderr, "owned by uid 64000") {
		t.Errorf("project profile of another user: exit %d, stderr %q", code, stderr)
	}
	os.Chown(p, agentUID, agentUID)
	// A profiles folder others may write is refused too (they could swap the file).
	os.Chmod(dir, 0o777)
	if code, _, stderr := explain(); code != 125 || !strings.Contains(stderr, dir) {
		t.Errorf("world-writable profiles folder: exit %d, stderr %q", code, stderr)
	}
	os.Chmod(dir, 0o755)
	// The report of such a refusal is written (stage profile).
	os.Chmod(p, 0o666)
	rep := filepath.Join(e.outDir, "refused.json")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var cmd *exec.Cmd = e.command(ctx, rep, []string{"--profile", "proj"}, "true")
	code, stderr, rm := reportOf(t, cmd, rep)
	checkErrorReport(t, code, stderr, rm, "profile", "writable by group or others")
}
