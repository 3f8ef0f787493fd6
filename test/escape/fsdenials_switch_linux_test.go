package escape

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runVars is e.run with extra variables in fedmem-run's environment.
func (e *env) runVars(t *testing.T, vars, extra []string, argv ...string) *run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	report := filepath.Join(e.outDir, "report-"+strconv.FormatInt(time.Now().UnixNano(), 36)+".json")
	cmd := e.command(ctx, report, extra, argv...)
	cmd.Env = append(cmd.Env, vars...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("fedmem-run timed out\nstderr:\n%s", se.Bytes())
	}
	r := &run{stdout: so.Bytes(), stderr: se.Bytes(), code: exitCode(err)}
	if b, err := os.ReadFile(report); err == nil {
		if err := json.Unmarshal(b, &r.report); err != nil {
			t.Errorf("report %s: %v", report, err)
		}
	}
	return r
}

const fsOffNote = "refused filesystem writes are not reported (--fs-denials or --events turns it on)"

// TestFilesystemDenialSwitch: reporting refused filesystem writes is a
// switch (--fs-denials, $FEDMEM_FS_DENIALS, default on exactly with
// --events). Off, a write into the vault still fails with EROFS but leaves
// no filesystem "denied" event and no filesystem count in the report,
// while a refused mount is still reported as a syscall denial; the layers
// say which it is (filesystem_denials and the note). The flag beats the
// variable, the variable beats the default, and a bad value is refused.
func TestFilesystemDenialSwitch(t *testing.T) {
	cases := []struct {
		name   string
		l      layout
		vars   []string
		extra  []string
		events bool
		want   bool // filesystem denials reported
	}{
		{name: "events/default-on", l: layout{name: "beside/root"}, events: true, want: true},
		{name: "events/flag-off", l: layout{name: "beside/root"}, extra: []string{"--fs-denials=false"}, events: true, want: false},
		{name: "events/flag-off/user", l: layout{name: "beside/user", gateOwned: true, user: true}, extra: []string{"--fs-denials=false"}, events: true, want: false},
		{name: "events/env-off", l: layout{name: "beside/root"}, vars: []string{"FEDMEM_FS_DENIALS=0"}, events: true, want: false},
		{name: "events/env-off/flag-on", l: layout{name: "beside/root"}, vars: []string{"FEDMEM_FS_DENIALS=0"}, extra: []string{"--fs-denials"}, events: true, want: true},
		{name: "report/default-off", l: layout{name: "beside/root"}, want: false},
		{name: "report/env-on", l: layout{name: "beside/root"}, vars: []string{"FEDMEM_FS_DENIALS=1"}, want: true},
		{name: "report/flag-on/user", l: layout{name: "beside/user", gateOwned: true, user: true}, extra: []string{"--fs-denials"}, want: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := setup(t, c.l)
			extra := c.extra
			evs := filepath.Join(e.outDir, "events.jsonl")
			if c.events {
				extra = append([]string{"--events", evs}, extra...)
			}
			r := e.runVars(t, c.vars, extra, "python3", "-c", denialProbe)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			out := string(r.stdout)
			for _, want := range []string{"MOUNT -1 1\n", "VAULTWRITE 30\n"} { // EPERM, EROFS: whatever the switch
				if !strings.Contains(out, want) {
					t.Errorf("probe: %q, want %q", out, want)
				}
			}
			if c.events {
				var fsEv, mountEv int
				for _, m := range eventsOf(t, evs, "denied") {
					switch {
					case m["kind"] == "filesystem":
						fsEv++
					case m["kind"] == "syscall" && m["syscall"] == "mount":
						mountEv++
					}
				}
				if mountEv != 1 {
					t.Errorf("%d syscall denial events for mount, want 1", mountEv)
				}
				if (fsEv > 0) != c.want {
					b, _ := os.ReadFile(evs)
					t.Errorf("%d filesystem denial events, want reported=%v\n%s", fsEv, c.want, b)
				}
			}
			d, _ := r.report["denials"].(map[string]any)
			byKind, _ := d["by_kind"].(map[string]any)
			bySys, _ := d["by_syscall"].(map[string]any)
			if bySys["mount"] != 1.0 {
				t.Errorf("report denials %v: want mount counted", r.report["denials"])
			}
			if n, _ := byKind["filesystem"].(float64); (n > 0) != c.want {
				t.Errorf("report denials %v: filesystem reported=%v", r.report["denials"], c.want)
			}
			layers, _ := r.report["layers"].(map[string]any)
			if got, ok := layers["filesystem_denials"].(bool); !ok || got != c.want {
				t.Errorf("layers.filesystem_denials = %v, want %v", layers["filesystem_denials"], c.want)
			}
			notes, _ := json.Marshal(layers["notes"])
			if strings.Contains(string(notes), fsOffNote) == c.want {
				t.Errorf("layers.notes %s: off note present = %v, want %v", notes, !c.want, !c.want)
			}
		})
	}
}

// TestFilesystemDenialSwitchExplain: --explain (and --json) says whether
// refused filesystem writes would be reported and what decided it; a bad
// $FEDMEM_FS_DENIALS is refused, naming the variable.
func TestFilesystemDenialSwitchExplain(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	for _, c := range []struct {
		vars, extra []string
		want        string
	}{
		{extra: []string{"--explain"}, want: "filesystem denials: " + fsOffNote + " (default without --events)"},
		{extra: []string{"--explain", "--events", "/dev/null"}, want: "filesystem denials: refused filesystem writes reported (default with --events"},
		{vars: []string{"FEDMEM_FS_DENIALS=1"}, extra: []string{"--explain"}, want: "refused filesystem writes reported ($FEDMEM_FS_DENIALS"},
		{vars: []string{"FEDMEM_FS_DENIALS=1"}, extra: []string{"--explain", "--json", "--fs-denials=false"}, want: fsOffNote + " (--fs-denials)"},
	} {
		r := e.runVars(t, c.vars, c.extra)
		if r.code != 0 {
			t.Fatalf("%v %v: exit %d\n%s%s", c.vars, c.extra, r.code, r.stdout, r.stderr)
		}
		out := string(r.stdout)
		if slices.Contains(c.extra, "--json") {
			var m map[string]any
			if err := json.Unmarshal(r.stdout, &m); err != nil {
				t.Fatalf("--json: %v\n%s", err, out)
			}
			b, _ := json.Marshal(m["layers"])
			out = string(b)
		} else {
			// The text is folded to 100 columns off a terminal: a fold
			// is a line break and indent where a space was.
			out = strings.Join(strings.Fields(out), " ")
		}
		if !strings.Contains(out, c.want) {
			t.Errorf("%v %v: output lacks %q:\n%s", c.vars, c.extra, c.want, out)
		}
	}
	r := e.runVars(t, []string{"FEDMEM_FS_DENIALS=yes"}, nil, "true")
	if r.code != 125 || !strings.Contains(string(r.stderr), "FEDMEM_FS_DENIALS") {
		t.Errorf("FEDMEM_FS_DENIALS=yes: exit %d, stderr %s; want 125 naming the variable", r.code, r.stderr)
	}
}
