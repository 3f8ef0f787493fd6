package escape

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReportFolderSwappedFailsLoudly: the agent renames the report's
// folder away and puts a folder of its own, with a forged report, at its
// path. fedmem-run writes its report into the folder it opened at the
// start (now out.old/) and, since the path no longer leads there, exits 125
// naming the path and the rule: a CI job must not read the forgery as
// fedmem-run's report.
func TestReportFolderSwappedFailsLoudly(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	out := filepath.Join(e.workdir, "out")
	must(t, os.MkdirAll(out, 0o755))
	rep := filepath.Join(out, "r.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	forge := `{"schema_version":1,"session":"forged","exit_code":0}`
	cmd := e.command(ctx, rep, nil, "sh", "-c", `mv "$1" "$1.old" && mkdir "$1" && printf '%s\n' "$2" > "$1/r.json" && test -d "$1.old"`, "sh", out, forge)
	o, err := cmd.CombinedOutput()
	code := exitCode(err)
	t.Logf("exit %d\n%s", code, o)
	if code != 125 || !strings.Contains(string(o), rep) || !strings.Contains(string(o), "was replaced during the run") {
		t.Errorf("exit %d, output %q: want 125 and a message naming %s and the swapped folder", code, o, rep)
	}
	var m map[string]any
	if b, err := os.ReadFile(filepath.Join(out+".old", "r.json")); err != nil || json.Unmarshal(b, &m) != nil || m["session"] == "forged" || m["session"] == nil {
		t.Errorf("fedmem-run's report in the folder it opened (%s.old): %v %s", out, err, b)
	}
}
