package escape

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
)

// TestEventsStream: --events appends one JSON line per event — start, the
// active layers once the agent runs, each limit hit, and the exit — all
// naming the session.
func TestEventsStream(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	path := filepath.Join(e.outDir, "events.jsonl")
	// The wall clock runs from fedmem-run's start, sandbox start-up
	// included: the limit must outlast the slowest backend's start-up
	// (containerd's, ~2 s on a loaded 2-core host) for the agent to start
	// and the started event to exist.
	r := e.run(t, []string{"--events", path, "--timeout", "6s"}, "sleep", "60")
	if r.code != 124 {
		t.Fatalf("exit %d, want 124\n%s", r.code, r.stderr)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	byName := map[string]map[string]any{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %q", sc.Text())
		}
		if m["session"] != r.session || m["time"] == nil {
			t.Errorf("event without this session or a time: %v", m)
		}
		n, _ := m["event"].(string)
		names = append(names, n)
		byName[n] = m
	}
	want := []string{"start", "started", "limit", "exit"}
	if len(names) != len(want) {
		t.Fatalf("events %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("events %v, want %v", names, want)
		}
	}
	layers, _ := byName["started"]["layers"].(map[string]any)
	if layers["seccomp"] != true || layers["mounts_verified"] != true || layers["backend"] != testutil.Backend() {
		t.Errorf("started event layers: %v", layers)
	}
	// Every backend times its start-up phases (issue 9).
	ph, _ := byName["started"]["phases_ms"].(map[string]any)
	for _, k := range []string{"launcher", "clone", "root", "verify", "layers", "exec", "total"} {
		if v, ok := ph[k].(float64); !ok || v < 0 {
			t.Errorf("started event phase %s = %v (phases %v)", k, ph[k], ph)
		}
	}
	if byName["limit"]["limit"] != "wall_time" || byName["exit"]["exit_code"] != float64(124) {
		t.Errorf("limit %v, exit %v", byName["limit"], byName["exit"])
	}
}
