package escape

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/vault"
)

// TestReportLinksPlanted (guarantee 5: fedmem never acts on a path the agent
// controls). Before the fix, --report FILE was written through FILE.tmp and
// renamed, and --events FILE appended with a plain open: an agent that
// planted symbolic links at those names in its workdir made the next
// fedmem-run (as root, or as the user) overwrite whatever they pointed at —
// ~/.bashrc here. Now the files are opened before the agent starts, relative
// to the directory, without following a link, and written through that
// descriptor only.
//
// Session 1 (the agent) plants links at session.json, events.jsonl and
// session.json.tmp pointing at the canary, and reports/ pointing at the
// canary's directory; session 2 runs with the same flags: it refuses with a message naming the flag, the path and the reason,
// and the canary is untouched. Session 3 names only a path whose .tmp
// sibling is planted: the report is written, the canary untouched. Session 4
// swaps the report for a link while it runs: the canary is untouched.
func TestReportLinksPlanted(t *testing.T) {
	for _, l := range []layout{{name: "beside/root"}, {name: "beside/user", gateOwned: true, user: true}} {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			canary := filepath.Join(e.home, ".bashrc")
			before, err := os.ReadFile(canary)
			if err != nil {
				t.Fatal(err)
			}
			rep := filepath.Join(e.workdir, "session.json")
			evs := filepath.Join(e.workdir, "events.jsonl")
			// reports/ → the directory holding the canary: --report
			// reports/.bashrc would name the canary itself, a regular file
			// of the caller.
			plant := "ln -s " + canary + " " + rep + " && ln -s " + canary + " " + evs + " && ln -s " + canary + " " + rep + ".tmp && ln -s " + filepath.Dir(canary) + " " + e.workdir + "/reports && ls -l " + e.workdir
			r := e.run(t, nil, "sh", "-c", plant)
			if r.code != 0 {
				t.Fatalf("session 1 (planting) exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			for _, p := range []string{rep, evs, rep + ".tmp"} {
				if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeSymlink == 0 {
					t.Fatalf("the agent could not plant %s (%v): the attack did not happen", p, err)
				}
			}
			second := func(extra []string, argv ...string) (int, string) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				cmd := e.command(ctx, "", extra, argv...)
				var so, se bytes.Buffer
				cmd.Stdout, cmd.Stderr = &so, &se
				return exitCode(cmd.Run()), se.String()
			}
			code, stderr := second([]string{"--report", rep, "--events", evs}, "true")
			if code != 125 || !strings.Contains(stderr, "--report "+rep+": is a symbolic link: refused") {
				t.Errorf("session 2: exit %d, stderr %q; want 125 naming --report, the path and the link", code, stderr)
			}
			code, stderr = second([]string{"--events", evs}, "true")
			if code != 125 || !strings.Contains(stderr, "--events "+evs+": is a symbolic link: refused") {
				t.Errorf("session 2 (events): exit %d, stderr %q", code, stderr)
			}
			viaDir := filepath.Join(e.workdir, "reports", filepath.Base(canary))
			code, stderr = second([]string{"--report", viaDir}, "true")
			if code != 125 || !strings.Contains(stderr, "directory "+filepath.Join(e.workdir, "reports")+" is a symbolic link in a path the agent can write") {
				t.Errorf("session 2 (linked directory): exit %d, stderr %q", code, stderr)
			}
			code, stderr = second([]string{"--report", rep + ".x"}, "true")
			if code != 0 {
				t.Errorf("session 3 (beside a planted .tmp): exit %d, %s", code, stderr)
			}
			var got map[string]any
			if b, err := os.ReadFile(rep + ".x"); err != nil || json.Unmarshal(b, &got) != nil || got["session"] == nil {
				t.Errorf("session 3 report: %v %s", err, b)
			}
			// Session 4: the agent replaces the (already open) report and
			// events files by links to the canary while it runs.
			rep4, evs4 := filepath.Join(e.workdir, "r4.json"), filepath.Join(e.workdir, "e4.jsonl")
			// The agent checks its swap itself (exit 9 if it did not
			// happen): at the end fedmem-run renames its report over
			// the path (TestRedteamReportSwappedByAgent), so the link is
			// gone afterwards and the path holds the real report.
			swap := "rm -f " + rep4 + " " + evs4 + " && ln -s " + canary + " " + rep4 + " && ln -s " + canary + " " + evs4 + " && test -L " + rep4 + " || exit 9"
			code, stderr = second([]string{"--report", rep4, "--events", evs4}, "sh", "-c", swap)
			if code == 9 {
				t.Errorf("session 4: the agent could not swap the report: the attack did not happen")
			} else if code != 0 {
				t.Errorf("session 4: exit %d, %s", code, stderr)
			}
			got = nil
			if fi, err := os.Lstat(rep4); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("session 4: %s after the run: %v %v, want fedmem-run's report, a regular file", rep4, fi, err)
			} else if b, err := os.ReadFile(rep4); err != nil || json.Unmarshal(b, &got) != nil || got["session"] == nil {
				t.Errorf("session 4 report: %v %s", err, b)
			}
			after, err := os.ReadFile(canary)
			if err != nil || !bytes.Equal(before, after) {
				t.Fatalf("the canary %s changed: %q → %q (%v)", canary, before, after, err)
			}
		})
	}
}

// TestGateStateHidden: the gate's state directory (a sibling of the vault)
// is out of the agent's reach even when it does not exist yet and the
// workdir contains it: fedmem-run creates it for a vault its caller owns
// (the plan then masks it), and refuses to run when it cannot (a vault of
// another user: `fedmem init` makes it for the gate).
func TestGateStateHidden(t *testing.T) {
	e := setup(t, layout{name: "inside/root", vaultInWorkdir: true})
	state := vault.GateStateDir(e.vault.Dir)
	if err := os.RemoveAll(state); err != nil {
		t.Fatal(err)
	}
	r := e.run(t, nil, "sh", "-c", "mkdir "+state+" && echo planted > "+state+"/audit.log; ls -la "+state+"; true")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(state, "audit.log")); err == nil {
		t.Fatalf("the agent planted the gate's state directory %s", state)
	}
	fi, err := os.Lstat(state)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("state dir after the run: %v %v", fi, err)
	}
	// A vault the caller does not own: refuse rather than let the agent
	// create it.
	e2 := setup(t, layout{name: "inside/gate-owned", vaultInWorkdir: true, gateOwned: true})
	state2 := vault.GateStateDir(e2.vault.Dir)
	os.RemoveAll(state2)
	r = e2.run(t, nil, "true")
	if r.code != 125 || !strings.Contains(string(r.stderr), "state directory "+state2+" does not exist and the agent could create it") {
		t.Errorf("gate-owned vault without state dir: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Lstat(state2); err == nil {
		t.Errorf("%s exists after a refused run", state2)
	}
}
