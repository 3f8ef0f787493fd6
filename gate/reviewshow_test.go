package gate

import (
	"encoding/json"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/gate/review"
)

// TestShowContextDiffsProvenanceSources: review show gives the reviewer
// the proven session, the unified diff against the note in force a draft
// contradicts, and each cited source's state at HEAD.
func TestShowContextDiffsProvenanceSources(t *testing.T) {
	v := newVault(t)
	human := filepath.Join(v, "20-domains", "prod-region.md")
	os.MkdirAll(filepath.Dir(human), 0o755)
	os.WriteFile(human, []byte("---\ntype: Fact\ntitle: Deployment region\n---\nProduction runs in us-east-1.\n"), 0o644)
	src := filepath.Join(v, "10-projects", "src.md")
	os.MkdirAll(filepath.Dir(src), 0o755)
	os.WriteFile(src, []byte("---\ntype: Reference\ntitle: Source\nstatus: deprecated\n---\nold\n"), 0o644)
	gitCLI(t, v, "add", ".")
	gitCLI(t, v, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-qm", "human notes")
	put(t, session(t, v, "s-1"), "r.md", "---\ntype: Fact\ntitle: Deployment region\nsources: [10-projects/src.md, 10-projects/gone.md]\n---\nProduction runs in eu-west-1.\n")
	// The launcher writes its report as the record: workdir and HEAD too.
	head := strings.TrimSpace(gitCLI(t, v, "rev-parse", "HEAD"))
	rec := SessionRecord{Session: "s-1", Profile: testProfile, ProfileHash: testProfileHash, UID: os.Geteuid(), Command: []string{"claude"}, Started: "2026-11-29T20:00:00Z", Workdir: "/srv/project", VaultHeadStart: head}
	rb, _ := json.Marshal(rec)
	os.WriteFile(filepath.Join(v, "90-inbox", ".sessions", "s-1.json"), rb, 0o644)
	g := openGate(t, v)
	pend := decisionFor(t, once(t, g), "r.md")
	if pend.State != StatePending {
		t.Fatalf("%+v", pend)
	}
	d, _, c, err := g.ShowFull(pend.ID[strings.LastIndexByte(pend.ID, '-')+1:][:6])
	if err != nil || d.ID != pend.ID || c == nil {
		t.Fatalf("ShowFull: %v %+v %+v", err, d, c)
	}
	if c.Problem != "" {
		t.Fatalf("context problem: %s", c.Problem)
	}
	p := c.Provenance
	if p.Session != "s-1" || p.Profile != testProfile || p.ProfileHash != testProfileHash || p.UID != os.Geteuid() || len(p.Command) == 0 || p.Meaning == "" {
		t.Errorf("provenance %+v", p)
	}
	if p.Workdir != "/srv/project" || p.VaultHead != head {
		t.Errorf("workdir %q head %q", p.Workdir, p.VaultHead)
	}
	if u, err := user.LookupId(strconv.Itoa(os.Geteuid())); err == nil && p.User != u.Username {
		t.Errorf("agent user %q, want %q", p.User, u.Username)
	}
	var contra *review.RelatedNote
	for i := range c.Related {
		if c.Related[i].Path == "20-domains/prod-region.md" {
			contra = &c.Related[i]
		}
	}
	if contra == nil || contra.Relation != "contradicts" {
		t.Fatalf("related %+v; want the human note as contradicted", c.Related)
	}
	for _, want := range []string{"-Production runs in us-east-1.", "+Production runs in eu-west-1.", "--- a/20-domains/prod-region.md"} {
		if !strings.Contains(contra.Diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, contra.Diff)
		}
	}
	if len(c.Sources) != 2 {
		t.Fatalf("sources %+v", c.Sources)
	}
	if s := c.Sources[0]; s.Path != "10-projects/src.md" || s.InForce || s.Status != "deprecated" || len(s.Blob) != 40 {
		t.Errorf("deprecated source: %+v", s)
	}
	if s := c.Sources[1]; s.Path != "10-projects/gone.md" || s.Problem == "" {
		t.Errorf("missing source: %+v", s)
	}
	if !strings.Contains(c.Rendered, "eu-west-1") || c.Target == "" {
		t.Errorf("target %q rendered %q", c.Target, c.Rendered)
	}
}
