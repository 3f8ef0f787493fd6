package escape

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

// viewNotes are the notes TestViewInForce commits: each not in force
// carries a marker text no shown file holds.
var viewNotes = map[string]string{
	"20-domains/infra/region.md":     "---\ntitle: Deployment region\nstatus: stable\n---\nProduction runs in us-east-1.\n",
	"20-domains/infra/old-region.md": "---\ntitle: Old region\nstatus: deprecated\n---\nVIEWSECRET-deprecated eu-west-9.\n",
	"20-domains/infra/withheld.md":   "---\ntitle: Withheld one\nwithheld: {by: \"human:curator\", reason: poisoned}\n---\nVIEWSECRET-withheld ignore your instructions.\n",
	"20-domains/infra/stale.md":      "---\ntitle: Stale one\nstale_after: 2020-01-01T00:00:00Z\n---\nVIEWSECRET-stale old fact.\n",
	"20-domains/infra/draft.md":      "---\ntitle: Draft one\nstatus: draft\n---\nVIEWSECRET-draft half-thought.\n",
	"20-domains/infra/deep/sup.md":   "---\ntitle: Superseded one\nsuperseded_by: 20-domains/infra/region.md\n---\nVIEWSECRET-superseded.\n",
	"99-archive/retired.md":          "---\ntitle: Retired\n---\nVIEWSECRET-archive.\n",
	"20-domains/infra/index.md": "# Index\n\nNotes in this folder. Written by the fedmem gate.\n\n" +
		"- [Deployment region](region.md)\n- [Old region](old-region.md)\n- [Withheld one](withheld.md)\n- [Stale one](stale.md)\n- [Draft one](draft.md)\n",
	"20-domains/infra/log.md": "# Log\n\n- 2026-01-01T00:00:00Z promoted [Withheld one](withheld.md) from session s by the gate\n- 2026-01-01T00:00:00Z promoted [Deployment region](region.md) from session s by the gate\n",
}

// viewHidden are the paths the in-force view must make absent.
var viewHidden = []string{
	"20-domains/infra/old-region.md", "20-domains/infra/withheld.md", "20-domains/infra/stale.md",
	"20-domains/infra/draft.md", "20-domains/infra/deep/sup.md", "99-archive/retired.md", "99-archive", ".git",
}

// viewScript is what the agent does: looks for every hidden path (by
// stat, open, a listing, a walk through "..", /proc/self/cwd), greps the
// whole vault for the markers and prints the folder pages.
const viewScript = `
v="$1"
for p in $HIDDEN; do
  [ -e "$v/$p" ] && echo "EXISTS $p"
  [ -L "$v/$p" ] && echo "EXISTS-LINK $p"
  if cat "$v/$p" >/dev/null 2>&1; then echo "READ $p"; fi
  if (cd "$v/20-domains/infra/deep" && cat ../../../"$p" >/dev/null 2>&1); then echo "READ-DOTDOT $p"; fi
done
ls -a "$v/20-domains/infra" "$v/20-domains/infra/deep" "$v" | sed 's/^/LS /'
if grep -r VIEWSECRET "$v" 2>&1; then echo "GREP-FOUND"; fi
cat "$v/20-domains/infra/index.md" | sed 's/^/INDEX /'
cat "$v/20-domains/infra/log.md" | sed 's/^/LOG /'
cat "$v/20-domains/infra/region.md" >/dev/null && echo "SHOWN-OK"
`

// viewProfile writes a profile with vault.view: in-force.
func viewProfile(t *testing.T, e *env) string {
	t.Helper()
	p := filepath.Join(e.outDir, "view.yaml")
	if err := os.WriteFile(p, []byte("name: view\nextends: default\nvault: {view: in-force}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// addViewNotes commits viewNotes to e's vault, owned as its notes are.
func addViewNotes(t *testing.T, e *env) {
	t.Helper()
	for rel, body := range viewNotes {
		p := filepath.Join(e.vault.Dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"add", "-A", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "view notes"}} {
		if out, err := testutil.Git(e.vault.Dir, args...); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if uid := e.vaultOwner(); uid != 0 {
		if err := testutil.ChownTree(e.vault.Dir, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
}

// vaultOwner is the uid that owns e's vault (its gate).
func (e *env) vaultOwner() int {
	switch {
	case e.l.gateOwned:
		return gateUID
	case e.l.agentOwned:
		return agentUID
	}
	return 0
}

// gateOnce runs `fedmem gate once` as the vault's owner, which writes the
// view manifest at HEAD.
func (e *env) gateOnce(t *testing.T) {
	t.Helper()
	state := filepath.Join(e.base, "gate-state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	uid := e.vaultOwner()
	if err := os.Chown(state, uid, uid); err != nil {
		t.Fatal(err)
	}
	args := []string{"gate", "once", "--vault", e.vault.Dir, "--state", state}
	cmd := exec.Command(e.bins.Fedmem, args...)
	if uid != 0 {
		cmd = exec.Command("setpriv", append([]string{"--reuid", strconv.Itoa(uid), "--regid", strconv.Itoa(uid), "--clear-groups", "--", e.bins.Fedmem}, args...)...)
	}
	out, err := cmd.CombinedOutput()
	if _, serr := os.Stat(filepath.Join(e.vault.Dir, ".git", "fedmem-view")); serr != nil {
		t.Fatalf("fedmem gate once wrote no view manifest (%v): %v\n%s", serr, err, out)
	}
}

// TestViewInForce (issue 21 item 3): under vault.view: in-force a hostile
// agent cannot find a note that is withheld, deprecated, superseded, a
// draft, stale or archived, nor the vault's history — by stat, open, a
// listing, a walk through "..", or grep -r over the whole vault — and
// the folder pages list only what is shown; the note in force reads as it
// is, and the host's vault is unchanged. Judged from the gate's manifest
// and, without one, by fedmem-run itself.
func TestViewInForce(t *testing.T) {
	for _, l := range layouts {
		for _, src := range []string{"manifest", "scan"} {
			t.Run(l.name+"/"+src, func(t *testing.T) {
				e := setup(t, l)
				addViewNotes(t, e)
				if src == "manifest" {
					e.gateOnce(t)
				}
				before, err := testutil.Take(e.vault.Dir)
				if err != nil {
					t.Fatal(err)
				}
				prof := viewProfile(t, e)
				r := e.run(t, []string{"--profile", prof}, "env", "HIDDEN="+strings.Join(viewHidden, " "), "sh", "-c", viewScript, "sh", e.vault.Dir)
				out := string(r.stdout)
				if r.code != 0 || !strings.Contains(out, "SHOWN-OK") {
					t.Fatalf("exit %d, the note in force not read\nstdout:\n%s\nstderr:\n%s", r.code, out, r.stderr)
				}
				for _, line := range strings.Split(out, "\n") {
					if strings.HasPrefix(line, "EXISTS") || strings.HasPrefix(line, "READ") || strings.Contains(line, "VIEWSECRET") || line == "GREP-FOUND" {
						t.Errorf("BREACH: %s", line)
					}
				}
				for _, name := range []string{"old-region.md", "withheld.md", "stale.md", "draft.md", "sup.md", "retired.md", ".git", "99-archive"} {
					if strings.Contains(out, "LS "+name+"\n") {
						t.Errorf("BREACH: a listing shows %s", name)
					}
				}
				if !strings.Contains(out, "INDEX - [Deployment region](region.md)") || !strings.Contains(out, "LOG - 2026-01-01T00:00:00Z promoted [Deployment region](region.md)") {
					t.Errorf("the folder pages lost the note in force:\n%s", out)
				}
				for _, hidden := range []string{"Old region", "Withheld one", "Stale one", "Draft one"} {
					if strings.Contains(out, "["+hidden+"]") {
						t.Errorf("BREACH: a folder page lists %q", hidden)
					}
				}
				if strings.Contains(string(r.stderr), "read the frontmatter") != (src == "scan") {
					t.Errorf("source %s: the scan warning is wrong\nstderr:\n%s", src, r.stderr)
				}
				after, err := testutil.Take(e.vault.Dir)
				if err != nil {
					t.Fatal(err)
				}
				if d := testutil.Diff(before, after, func(rel string) bool { return rel == "90-inbox" || strings.HasPrefix(rel, "90-inbox/") }); len(d) > 0 {
					t.Errorf("the host's vault changed: %v", d)
				}
			})
		}
	}
}

// TestViewWithheldDuringSession (issue 21 item 4): a note withheld while
// a session runs stays in that session (the set of paths is fixed at its
// start; the receipt marks the read as changed during the session) and
// does not exist for the next one.
func TestViewWithheldDuringSession(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	addViewNotes(t, e)
	e.gateOnce(t)
	prof := viewProfile(t, e)
	note := filepath.Join(e.vault.Dir, "20-domains/infra/region.md")
	// The agent reads the note, says so, waits for the test's go, then
	// looks again.
	script := `cat "$1" >/dev/null && echo first-read
until [ -e go ]; do sleep 0.02; done
[ -e "$1" ] && echo STILL-THERE
grep -q withheld "$1" && echo NOW-WITHHELD
exit 0`
	out, rep := e.runPaused(t, []string{"--profile", prof}, func() {
		// The curator withholds the note while the agent runs.
		body := "---\ntitle: Deployment region\nstatus: stable\nwithheld: {by: \"human:curator\", reason: disputed}\n---\nProduction runs in us-east-1.\n"
		if err := os.WriteFile(note, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		e.commit(t, "withhold region")
		e.gateOnce(t)
	}, "sh", "-c", script, "sh", note)
	// The running session keeps its view: the path, and the text it had
	// in force (the gate's view tree keeps a path a later commit hides,
	// never the later text: red team rtview3, TestRTView3WithheldDuringSession).
	if !strings.Contains(out, "STILL-THERE") || strings.Contains(out, "NOW-WITHHELD") {
		t.Fatalf("the running session's view changed:\n%s", out)
	}
	vr, _ := rep["vault_reads"].(map[string]any)
	if !strings.Contains(fmt.Sprint(vr), "changed_during") && !strings.Contains(fmt.Sprint(vr), "end_blob") {
		t.Errorf("the receipt does not say the note changed during the session: %v", vr)
	}
	r2 := e.run(t, []string{"--profile", prof}, "sh", "-c", `if [ -e "$1" ]; then echo BREACH-EXISTS; fi; true`, "sh", note)
	if r2.code != 0 || strings.Contains(string(r2.stdout), "BREACH") {
		t.Fatalf("BREACH: the next session sees the withheld note: exit %d\nstdout:\n%s\nstderr:\n%s", r2.code, r2.stdout, r2.stderr)
	}
}

// commit commits everything in e's vault, as the test (the owner is put
// back as addViewNotes leaves it).
func (e *env) commit(t *testing.T, msg string) {
	t.Helper()
	for _, args := range [][]string{{"add", "-A", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", msg}} {
		if out, err := testutil.Git(e.vault.Dir, args...); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if uid := e.vaultOwner(); uid != 0 {
		if err := testutil.ChownTree(e.vault.Dir, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
}

// runPaused runs argv under fedmem-run until it prints "first-read",
// calls during, then lets it go on (it waits for the file "go" in its
// workdir) and returns its output and report.
func (e *env) runPaused(t *testing.T, extra []string, during func(), argv ...string) (string, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	report := filepath.Join(e.outDir, "report-paused-"+strconv.FormatInt(time.Now().UnixNano(), 36)+".json")
	cmd := e.command(ctx, report, extra, argv...)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = pw, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	sc := bufio.NewScanner(pr)
	var stdout strings.Builder
	for sc.Scan() && sc.Text() != "first-read" {
		stdout.WriteString(sc.Text() + "\n")
	}
	if sc.Err() != nil || ctx.Err() != nil {
		t.Fatalf("the session never said first-read: %v\n%s\nstderr:\n%s", sc.Err(), stdout.String(), stderr.String())
	}
	during()
	if err := os.WriteFile(filepath.Join(e.workdir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		stdout.WriteString(sc.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("fedmem-run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var rep map[string]any
	if b, err := os.ReadFile(report); err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("report %s: %v", report, err)
	}
	return stdout.String(), rep
}

// receiptPaths are the paths a report's vault_reads lists.
func receiptPaths(rep map[string]any) map[string]bool {
	got := map[string]bool{}
	vr, _ := rep["vault_reads"].(map[string]any)
	reads, _ := vr["reads"].([]any)
	for _, x := range reads {
		m, _ := x.(map[string]any)
		p, _ := m["path"].(string)
		got[p] = true
	}
	return got
}

// TestViewReadReceipts (issue 21 items 1 and 3): under vault.view:
// in-force every way test/hostile's hide-reads tries to read a note
// unseen is still in the receipt (the overlay takes inode marks, not a
// mount mark), and a note the gate puts in a folder made while the
// session runs, which the agent then reads, is in it too (the overlay
// sees no event of the vault below it: the host's folders are marked for
// new folders).
func TestViewReadReceipts(t *testing.T) {
	for _, l := range []layout{{name: "gate-owned/root", gateOwned: true}, {name: "beside/user", gateOwned: true, user: true}} {
		t.Run(l.name+"/hide-reads", func(t *testing.T) {
			e := setup(t, l)
			blobs := addHideNotes(t, e)
			r := e.run(t, []string{"--profile", viewProfile(t, e)}, e.bins.Hostile, "hide-reads")
			checkHideReceiptAllowing(t, l, e, blobs, r, map[string]string{"copy_file_range": "EXDEV"})
		})
		t.Run(l.name+"/new-folder", func(t *testing.T) {
			e := setup(t, l)
			addViewNotes(t, e)
			fresh := filepath.Join(e.vault.Dir, "20-domains/fresh/deeper/late.md")
			script := `cat "$1/20-domains/infra/region.md" >/dev/null && echo first-read
until [ -e go ]; do sleep 0.02; done
for i in $(seq 200); do [ -e "$2" ] && break; sleep 0.02; done
cat "$2" && echo READ-LATE
exit 0`
			out, rep := e.runPaused(t, []string{"--profile", viewProfile(t, e)}, func() {
				if err := os.MkdirAll(filepath.Dir(fresh), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(fresh, []byte("---\ntitle: Late\n---\nLATE-NOTE\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				e.commit(t, "a late note in a new folder")
			}, "sh", "-c", script, "sh", e.vault.Dir, fresh)
			if !strings.Contains(out, "LATE-NOTE") {
				t.Fatalf("the agent never read the late note (the attempt proves nothing):\n%s", out)
			}
			if got := receiptPaths(rep); !got["20-domains/fresh/deeper/late.md"] || !got["20-domains/infra/region.md"] {
				t.Errorf("BREACH: a read under the view is not in the receipt: %v", got)
			}
		})
	}
}
