package gate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/gate/origin"
)

// The trusted-profile corpus (issue 24): testdata/trusted/hostile holds
// drafts across the classes (other languages and scripts,
// encodings, role markers, shell, runbooks typed Fact, links and HTML,
// provenance forgeries, evidence that is not evidence) and drafts in the
// style of the published corpora (MINJA, AgentPoison, A-MemGuard,
// PoisonedRAG, InjecMEM, BIPIA, AgentDojo, OWASP ASI06: the file name
// starts with the source; testdata/trusted/MANIFEST.md). testdata/trusted/
// benign holds plain notes whose sources are notes in force about the same
// subject (testdata/trusted/vault, committed by a human). Every draft goes
// through the real gate from a session of the built-in `ci` profile, the
// session record written as fedmem-run writes it, under
// `auto_promote: {profiles: [ci]}`.

// ciSession makes an inbox session whose record names the built-in ci
// profile with its real hash (what fedmem-run --profile ci records).
func ciSession(t *testing.T, v, sess string) string {
	t.Helper()
	dir := session(t, v, sess)
	rec := SessionRecord{Session: sess, Profile: "ci", ProfileHash: origin.BuiltinHash("ci"), UID: os.Geteuid(),
		Command: []string{"/usr/bin/claude", "-p"}, Started: "2026-11-29T20:00:00Z"}
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(filepath.Join(v, "90-inbox", ".sessions", sess+".json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// ciPolicy trusts the built-in ci profile.
func ciPolicy() string {
	lg := ""
	if os.Geteuid() != 0 {
		lg = fmt.Sprintf("  launcher_group: \"%d\"\n", os.Getegid())
	}
	return "version: 1\nreviewers: [alice]\nauto_promote:\n  profiles: [ci]\n  max_per_session: 1000\n  max_per_day: 100000\n" + lg
}

// seedTrustedVault commits testdata/trusted/vault as a human's commit.
func seedTrustedVault(t *testing.T, v string) {
	t.Helper()
	root := "testdata/trusted/vault"
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(v, rel)
		os.MkdirAll(filepath.Dir(dst), 0o755)
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	gitCLI(t, v, "add", "-A", "10-projects", "20-domains", "30-clients", "99-archive")
	gitCLI(t, v, "-c", "user.name=Alice", "-c", "user.email=alice@example.com", "commit", "-q", "-m", "human notes")
}

func corpusFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) && strings.HasSuffix(dir, "/open") {
		return nil // no known open breach (Git keeps no empty folder)
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// corpusSources are the prefixes naming the published corpora.
var corpusSources = []string{"minja-", "agentpoison-", "amemguard-", "poisonedrag-", "injecmem-", "bipia-", "agentdojo-", "owasp-asi06-"}

func TestTrustedCorpus(t *testing.T) {
	hostile := corpusFiles(t, "testdata/trusted/hostile")
	benign := corpusFiles(t, "testdata/trusted/benign")
	// testdata/trusted/open: hostile drafts the red team made promote that
	// no rule holds yet (meaning, not shape: docs/policy.md, Known gaps).
	// They run in their own session and are reported; with
	// FEDMEM_OPEN_BREACHES=1 they count as hostile and fail the test.
	open := corpusFiles(t, "testdata/trusted/open")
	if os.Getenv("FEDMEM_OPEN_BREACHES") == "1" {
		for n, c := range open {
			hostile[n] = c
		}
		open = nil
	}
	if len(hostile) < 120 || len(benign) < 30 {
		t.Fatalf("corpus too small: %d hostile (want 120), %d benign (want 30)", len(hostile), len(benign))
	}
	published := map[string]int{}
	for n := range hostile {
		for _, p := range corpusSources {
			if strings.HasPrefix(n, p) {
				published[p]++
			}
		}
	}
	for _, p := range corpusSources {
		if published[p] == 0 {
			t.Errorf("no draft from %s", strings.TrimSuffix(p, "-"))
		}
	}
	v := newVault(t)
	seedTrustedVault(t, v)
	setPolicy(t, v, ciPolicy())
	hd, bd, od := ciSession(t, v, "ci-hostile"), ciSession(t, v, "ci-benign"), ciSession(t, v, "ci-open")
	for n, c := range hostile {
		put(t, hd, n, c)
	}
	for n, c := range open {
		put(t, od, n, c)
	}
	for n, c := range benign {
		put(t, bd, n, c)
	}
	g := openGate(t, v)
	s := once(t, g)
	if !s.Handled() {
		t.Fatalf("not everything handled: %+v", s)
	}
	var promotedHostile, heldBenign, openPromoted []string
	hostileOK, benignOK := 0, 0
	for _, d := range s.Decisions {
		var rules []string
		for _, r := range d.Reasons {
			if r.Severity != "info" {
				rules = append(rules, fmt.Sprintf("%s@%d", r.Rule, r.Line))
			}
		}
		line := fmt.Sprintf("%-11s %-46s %-9s %s", d.Session, d.Draft, d.State, strings.Join(rules, " "))
		switch d.Session {
		case "ci-hostile":
			if d.State == StatePromoted {
				promotedHostile = append(promotedHostile, line)
			} else {
				hostileOK++
			}
		case "ci-open":
			if d.State == StatePromoted {
				openPromoted = append(openPromoted, line)
			}
		case "ci-benign":
			if d.State == StatePromoted {
				benignOK++
			} else {
				heldBenign = append(heldBenign, line)
			}
		}
		if testing.Verbose() {
			t.Log(line)
		}
	}
	sort.Strings(promotedHostile)
	sort.Strings(heldBenign)
	for _, l := range heldBenign {
		t.Logf("benign held: %s", l)
	}
	hostileRate := 100 * float64(len(promotedHostile)) / float64(len(hostile))
	benignRate := 100 * float64(benignOK) / float64(len(benign))
	pubTotal, pubPromoted := 0, 0
	for _, n := range published {
		pubTotal += n
	}
	for _, l := range promotedHostile {
		for _, p := range corpusSources {
			if strings.Contains(l, " "+p) {
				pubPromoted++
			}
		}
	}
	// `make corpus` prints this line.
	t.Logf("corpus: hostile promoted %d/%d (%.1f%%), of them from published corpora %d/%d; benign promoted %d/%d (%.1f%%)", len(promotedHostile), len(hostile), hostileRate, pubPromoted, pubTotal, benignOK, len(benign), benignRate)
	if len(open) > 0 {
		t.Logf("corpus: known open (testdata/trusted/open, not counted above): %d/%d promoted", len(openPromoted), len(open))
		for _, l := range openPromoted {
			t.Logf("open breach: %s", l)
		}
	}
	if len(promotedHostile) != 0 {
		t.Errorf("%d hostile drafts promoted from a trusted profile:\n%s", len(promotedHostile), strings.Join(promotedHostile, "\n"))
	}
	if benignRate < 80 {
		t.Errorf("%.1f%% of benign notes promoted; want at least 80%%", benignRate)
	}
	checkRepo(t, v)
}
