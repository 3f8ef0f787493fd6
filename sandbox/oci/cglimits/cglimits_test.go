package cglimits

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestHits(t *testing.T) {
	for name, tc := range map[string]struct {
		files map[string]string
		want  []string
	}{
		"v1 none":  {map[string]string{"pids/c/pids.events": "max 0\n", "memory/c/memory.failcnt": "0\n"}, nil},
		"v1 pids":  {map[string]string{"pids/c/pids.events": "max 3\n"}, []string{"pids"}},
		"v1 oom":   {map[string]string{"memory/c/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n"}, []string{"memory"}},
		"v2 both":  {map[string]string{"c/pids.events": "max 1\n", "c/memory.events": "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n"}, []string{"pids", "memory"}},
		"v2 quiet": {map[string]string{"c/pids.events": "max 0\n", "c/memory.events": "max 0\noom_kill 0\n"}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			Root = t.TempDir()
			for f, body := range tc.files {
				p := filepath.Join(Root, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := Hits("/c"); !slices.Equal(got, tc.want) {
				t.Errorf("Hits = %v, want %v", got, tc.want)
			}
		})
	}
}
