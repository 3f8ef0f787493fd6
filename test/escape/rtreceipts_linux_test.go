package escape

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
)

// Red team of the read receipts (issue 21): what the agent, or a host
// user who never runs fedmem-run, can do to the answer of `fedmem audit
// readers` — the forensic question "who read this note".

// commitNote writes and commits one note of the vault; it returns its
// vault-relative path.
func commitNote(t *testing.T, e *env, rel, body string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.vault.Dir, rel), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", rel}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "note " + rel}} {
		if _, err := testutil.Git(e.vault.Dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	return rel
}

// auditReaders is `fedmem audit readers NOTE --json`'s answer.
type auditReaders struct {
	Readers []struct {
		Session string
		Maybe   bool
	}
	Unrecorded []string
}

func (a auditReaders) names(id string) bool {
	for _, r := range a.Readers {
		if r.Session == id {
			return true
		}
	}
	return false
}

// TestRedTeamReceiptsGitObjects: the agent reads a note's text through
// the vault's own Git objects (`git show HEAD:NOTE`, `git log -p`), which
// the sandbox shows read-only with the rest of the vault. fanotify sees
// opens of files under .git only (git_opens), never the note: that is
// the mechanism's stated limit. The breach is in the answer built on it:
// `fedmem audit readers NOTE` said "no recorded session opened NOTE" — a
// silent no for a session that printed the note — and the sweep's
// withhold named nobody. A receipt that cannot say which notes its Git
// reads held must make its session a "maybe" reader of every note (as a
// cut receipt already is), never a non-reader. Fails on h-receipts
// (f3c115a): the session is not in the answer at all.
func TestRedTeamReceiptsGitObjects(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	note := commitNote(t, e, "10-projects/rt-git.md", "---\ntype: fact\n---\nrt-git-marker: the text only Git shows\n")
	script := `cd "$FEDMEM_VAULT" && git -c safe.directory='*' --no-pager show HEAD:"$1" && git -c safe.directory='*' --no-pager log -p -1 -- "$1" >/dev/null`
	r := e.run(t, nil, "sh", "-c", script, "sh", note)
	if r.code != 0 || !strings.Contains(string(r.stdout), "rt-git-marker") {
		t.Fatalf("the agent's read through Git did not happen (exit %d): the attempt proves nothing\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	vr, _ := r.report["vault_reads"].(map[string]any)
	if vr == nil || vr["recorded"] != true {
		t.Fatalf("vault_reads %v: want a recorded receipt", r.report["vault_reads"])
	}
	if n, _ := vr["git_opens"].(float64); n == 0 {
		t.Errorf("vault_reads %v: the session opened Git's objects and git_opens is 0", vr)
	}
	var a auditReaders
	fedmemJSON(t, e, &a, "audit", "readers", note, "--vault", e.vault.Dir, "--json")
	if !a.names(r.session) {
		t.Errorf("audit readers %s = %+v: the session %s printed the note through the vault's Git objects and is not named, not even as a maybe", note, a, r.session)
	}
}

// TestRedTeamReceiptsForgedRecord: any host user (90-inbox/.sessions/ is
// sticky and writable by all, or by the agents' group) can create a
// session record of their own with a forged receipt: a session that never
// ran, "uid 0, profile strict", that read the note. `fedmem audit
// readers` listed it as a reader exactly like a receipt fedmem-run
// recorded, and the sweep's withhold wrote it into read_by (its commit
// and the hash-chained audit log): the answer is forgeable. A second
// forged record's session id carries a terminal escape and a newline,
// which the text output printed raw. Only a record proven to be
// fedmem-run's (written by root, not group- or world-writable, one link:
// the gate's own proof) may answer "read it"; any other record's receipt
// is a claim (the session is one nobody recorded). Fails on h-receipts
// (f3c115a).
func TestRedTeamReceiptsForgedRecord(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	note := commitNote(t, e, "10-projects/rt-stale.md", "---\ntype: fact\nstatus: stable\nstale_after: 2020-01-01T00:00:00Z\n---\nThe rt-stale fact.\n")
	// A genuine session that does not read the note.
	real := e.run(t, nil, "cat", filepath.Join(e.vault.Dir, "00-global/AGENT.md"))
	if real.code != 0 || real.session == "" {
		t.Fatalf("exit %d\n%s", real.code, real.stderr)
	}
	head := strings.TrimSpace(mustGitOut(t, e.vault.Dir, "rev-parse", "HEAD"))
	sessions := filepath.Join(e.vault.Dir, "90-inbox", ".sessions")
	forge := func(id string) {
		t.Helper()
		idJSON, _ := json.Marshal(id)
		rec := `{"session":` + string(idJSON) + `,"profile":"strict","uid":0,"started":"2026-01-01T00:00:00Z","ended":"2026-01-01T00:01:00Z",` +
			`"workdir":"/home/alice/proj","vault_head_start":"` + head + `","vault_reads":{"recorded":true,"commit":"` + head + `","count":1,` +
			`"reads":[{"path":"` + note + `","blob":"deadbeef","first":"2026-01-01T00:00:30Z"}]}}`
		// As a host user who is not root and never ran fedmem-run.
		cmd := exec.Command("setpriv", "--reuid", strconv.Itoa(agentUID), "--regid", strconv.Itoa(agentUID), "--clear-groups",
			"sh", "-c", `cat > "$1"`, "sh", filepath.Join(sessions, id+".json"))
		cmd.Stdin = strings.NewReader(rec)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("a host user cannot write %s (%v: %s): nothing to attack", sessions, err, out)
		}
	}
	forged, escaped := "20260101T000000Z-f0r9ed00", "20260101T000000Z-\x1b]0;pwn\x07\nSESSION  x"
	forge(forged)
	forge(escaped)

	var a auditReaders
	fedmemJSON(t, e, &a, "audit", "readers", note, "--vault", e.vault.Dir, "--json")
	if a.names(forged) || a.names(escaped) {
		t.Errorf("audit readers %s = %+v: a record a host user wrote is named as a reader", note, a)
	}
	if a.names(real.session) {
		t.Errorf("audit readers names %s, which never opened %s", real.session, note)
	}
	out, err := exec.Command(e.bins.Fedmem, "audit", "readers", note, "--vault", e.vault.Dir).CombinedOutput()
	if err != nil {
		t.Fatalf("audit readers: %v\n%s", err, out)
	}
	if strings.ContainsAny(string(out), "\x1b\x07") || strings.Contains(string(out), "\nSESSION  x") {
		t.Errorf("audit readers prints a forged session id raw (terminal escape / a forged line):\n%q", out)
	}
	var sw struct {
		Withheld []struct {
			Path   string
			ReadBy []string `json:"read_by"`
		}
	}
	fedmemJSON(t, e, &sw, "gate", "sweep", "--vault", e.vault.Dir, "--json")
	if len(sw.Withheld) != 1 || sw.Withheld[0].Path != note {
		t.Fatalf("sweep withheld %+v, want %s", sw.Withheld, note)
	}
	for _, s := range sw.Withheld[0].ReadBy {
		if s == forged || s == escaped {
			t.Errorf("the withhold of %s names %q as a reader: a host user's forged record is in the gate's commit and audit log", note, s)
		}
	}
}

func mustGitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := testutil.Git(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRedTeamReceiptsBloatedRecord: the agent reads a note, then leaves
// 6000 empty files with 200-character names in its inbox (no bytes: no
// inbox limit is hit). fedmem-run writes its whole report as the session
// record, inbox listing included: 1.6 MB, past the 1 MiB that `fedmem
// audit readers` and the gate read of a record. The record was dropped
// with a warning line, so the session that read the note vanished from
// the answer — not a reader, not a maybe, not even one of the sessions
// "with no receipt" — and the sweep's withhold counted it nowhere
// (read_by, sessions_unrecorded). The agent suppressed its own receipt.
// A record that cannot be read must still name its session (it could
// have read the note), and fedmem-run must write a record that can be
// read (the report keeps the lists). Fails on h-receipts (f3c115a).
func TestRedTeamReceiptsBloatedRecord(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	note := commitNote(t, e, "10-projects/rt-bloat.md", "---\ntype: fact\nstatus: stable\nstale_after: 2020-01-01T00:00:00Z\n---\nThe rt-bloat fact.\n")
	script := `cat "$1" >/dev/null && cd "$FEDMEM_INBOX" && n=$(printf 'n%.0s' $(seq 1 200)) && i=0 && while [ $i -lt 6000 ]; do : > "$n$i"; i=$((i+1)); done`
	r := e.run(t, nil, "sh", "-c", script, "sh", filepath.Join(e.vault.Dir, note))
	if r.code != 0 || r.session == "" {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if files, _ := r.report["inbox_files"].([]any); len(files) < 6000 {
		t.Fatalf("the report lists %d inbox files, want 6000 (1.6 MB of record): the attempt proves nothing", len(files))
	}
	var a auditReaders
	fedmemJSON(t, e, &a, "audit", "readers", note, "--vault", e.vault.Dir, "--json")
	if !a.names(r.session) {
		t.Errorf("audit readers %s = %+v: the session %s read it and is not named as a reader (its record is too large to read?)", note, a, r.session)
	}
	var sw struct {
		Withheld []struct {
			Path       string
			ReadBy     []string `json:"read_by"`
			Unrecorded int      `json:"sessions_unrecorded"`
		}
	}
	fedmemJSON(t, e, &sw, "gate", "sweep", "--vault", e.vault.Dir, "--json")
	if len(sw.Withheld) != 1 || sw.Withheld[0].Path != note {
		t.Fatalf("sweep withheld %+v, want %s", sw.Withheld, note)
	}
	if w := sw.Withheld[0]; len(w.ReadBy) != 1 || w.ReadBy[0] != r.session {
		t.Errorf("the withhold of %s: %+v, want read_by [%s]", note, w, r.session)
	}
}

// TestRedTeamReceiptsManyMounts: a profile whose vault.visible names 260
// folders gives the sandbox more vault mounts than one SCM_RIGHTS message
// carries (250). The init handed over the first 250 and told fedmem-run
// there were 250, so fedmem-run marked those, said recorded: true, and
// the opens through the other mounts were silently missing — neither
// truncated, nor lost, nor unattributed. Every note the agent read must be
// in a recorded receipt, or the receipt must say it was not recorded.
// Fails on h-receipts (f3c115a): 249 of 260 reads, recorded: true.
func TestRedTeamReceiptsManyMounts(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	const n = 260
	var prof strings.Builder
	prof.WriteString("name: many\nextends: default\nvault:\n  visible:\n")
	for i := 0; i < n; i++ {
		d := filepath.Join("20-domains", "rt-f"+strconv.Itoa(1000+i))
		if err := os.MkdirAll(filepath.Join(e.vault.Dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.vault.Dir, d, "n.md"), []byte("---\ntype: note\n---\nrt-many\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		prof.WriteString("    - " + d + "\n")
	}
	for _, args := range [][]string{{"add", "20-domains"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "many folders"}} {
		if _, err := testutil.Git(e.vault.Dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	pf := filepath.Join(e.outDir, "many.yaml")
	if err := os.WriteFile(pf, []byte(prof.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.run(t, []string{"--profile", pf}, "sh", "-c", `cat "$FEDMEM_VAULT"/20-domains/rt-f*/n.md | grep -c rt-many`)
	if r.code != 0 || strings.TrimSpace(string(r.stdout)) != strconv.Itoa(n) {
		t.Fatalf("exit %d, stdout %q: the agent did not read the %d notes\n%s", r.code, r.stdout, n, r.stderr)
	}
	vr, _ := r.report["vault_reads"].(map[string]any)
	if vr == nil {
		t.Fatalf("no vault_reads in the report")
	}
	if vr["recorded"] != true {
		if why, _ := vr["unavailable"].(string); why == "" {
			t.Errorf("vault_reads %v: not recorded and no reason", vr)
		}
		return // fails closed: said, not silently short
	}
	if c, _ := vr["count"].(float64); int(c) != n && vr["lost"] != true && vr["truncated"] != true {
		t.Errorf("vault_reads: recorded, count %v of the %d notes read, not lost, not truncated: reads through the unmarked mounts are silently missing", vr["count"], n)
	}
}

// TestRedTeamReceiptsLocalRemote: the vault's Git remote is a bare
// repository on the same host (the design's "vault is a Git remote", one
// machine), beside the vault. The sandbox shows the host's root read-only,
// so the agent copied the remote into its /tmp and read every note —
// withheld ones included — without opening one file of the vault mount:
// no read, no git_opens, and `fedmem audit readers` said nobody read it
// (red team; it failed on h-receipts). The plan masks the copies of the
// vault its own Git config names — local remotes and alternates — so the
// remote is an empty folder inside; a remote the plan cannot mask (it
// holds the workdir) is said in a warning.
func TestRedTeamReceiptsLocalRemote(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	note := commitNote(t, e, "10-projects/rt-remote.md", "---\ntype: fact\n---\nrt-remote-marker\n")
	remote := filepath.Join(e.base, "vault-remote.git")
	if out, err := exec.Command("git", "clone", "-q", "--bare", e.vault.Dir, remote).CombinedOutput(); err != nil {
		t.Fatalf("git clone --bare: %v\n%s", err, out)
	}
	if _, err := testutil.Git(e.vault.Dir, "remote", "add", "origin", remote); err != nil {
		t.Fatal(err)
	}
	// The agent never touches the vault mount: it knows (or lists) the
	// remote's path.
	script := `ls -A "$1" | wc -l; cp -R "$1" /tmp/r.git && git --git-dir=/tmp/r.git --no-pager show HEAD:"$2"`
	r := e.run(t, nil, "sh", "-c", script, "sh", remote, note)
	if strings.Contains(string(r.stdout), "rt-remote-marker") {
		var a auditReaders
		fedmemJSON(t, e, &a, "audit", "readers", note, "--vault", e.vault.Dir, "--json")
		t.Fatalf("BREACH: the agent printed %s from the vault's local remote %s (audit names the session: %v; receipt %s)", note, remote, a.names(r.session), fmtAny(r.report["vault_reads"]))
	}
	if !strings.HasPrefix(strings.TrimSpace(string(r.stdout)), "0") {
		t.Errorf("the remote %s is not an empty folder inside (ls -A | wc -l):\n%s\nstderr:\n%s", remote, r.stdout, r.stderr)
	}
	// The control: the remote is there, with the note, on the host.
	if out, err := exec.Command("git", "--git-dir="+remote, "show", "HEAD:"+note).CombinedOutput(); err != nil || !strings.Contains(string(out), "rt-remote-marker") {
		t.Fatalf("the control failed: the host's remote does not hold %s: %v\n%s", note, err, out)
	}
}

func fmtAny(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestRedTeamReceiptsVaultCopiesUnparsed: copies of the vault its Git
// repository names in ways vaultCopies does not read — a linked worktree
// (.git/worktrees/*/gitdir), a remote URL naming a clone's .git (the clone's
// work tree beside it holds every note), a remote URL rewritten by
// url.<base>.insteadOf, and a remote in a file the config includes. Each
// holds the note; the sandbox shows the host's root, so the agent reads it
// there and the read receipt never names it.
func TestRedTeamReceiptsVaultCopiesUnparsed(t *testing.T) {
	cases := []struct {
		name string
		// make returns the folder the agent reads and the script's way to
		// read the note from it.
		make func(t *testing.T, e *env, base string) (dir, script string)
	}{
		{"linked-worktree", func(t *testing.T, e *env, base string) (string, string) {
			wt := filepath.Join(base, "vault-wt")
			if out, err := testutil.Git(e.vault.Dir, "worktree", "add", "-q", "--detach", wt); err != nil {
				t.Fatalf("git worktree add: %v\n%s", err, out)
			}
			return wt, `cat "$1/$2"`
		}},
		{"remote-url-names-dot-git", func(t *testing.T, e *env, base string) (string, string) {
			clone := filepath.Join(base, "vault-clone")
			if out, err := exec.Command("git", "clone", "-q", e.vault.Dir, clone).CombinedOutput(); err != nil {
				t.Fatalf("git clone: %v\n%s", err, out)
			}
			if _, err := testutil.Git(e.vault.Dir, "remote", "add", "origin", filepath.Join(clone, ".git")); err != nil {
				t.Fatal(err)
			}
			return clone, `cat "$1/$2"`
		}},
		{"insteadof", func(t *testing.T, e *env, base string) (string, string) {
			mirror := filepath.Join(base, "vault-mirror.git")
			if out, err := exec.Command("git", "clone", "-q", "--bare", e.vault.Dir, mirror).CombinedOutput(); err != nil {
				t.Fatalf("git clone --bare: %v\n%s", err, out)
			}
			for _, a := range [][]string{{"remote", "add", "origin", "mirror:vault-mirror.git"}, {"config", "url." + base + "/.insteadOf", "mirror:"}} {
				if _, err := testutil.Git(e.vault.Dir, a...); err != nil {
					t.Fatal(err)
				}
			}
			if out, err := testutil.Git(e.vault.Dir, "remote", "get-url", "origin"); err != nil || !strings.Contains(out, mirror) {
				t.Fatalf("control: git does not rewrite the URL to %s: %q %v", mirror, out, err)
			}
			return mirror, `cp -R "$1" /tmp/r.git && git --git-dir=/tmp/r.git --no-pager show HEAD:"$2"`
		}},
		{"separate-git-dir", func(t *testing.T, e *env, base string) (string, string) {
			gd := filepath.Join(base, "vault-gitdir")
			if out, err := testutil.Git(e.vault.Dir, "init", "-q", "--separate-git-dir", gd); err != nil {
				t.Fatalf("git init --separate-git-dir: %v\n%s", err, out)
			}
			return gd, `cp -R "$1" /tmp/r.git && git --git-dir=/tmp/r.git --no-pager show HEAD:"$2"`
		}},
		{"include", func(t *testing.T, e *env, base string) (string, string) {
			inc := filepath.Join(base, "vault-inc.git")
			if out, err := exec.Command("git", "clone", "-q", "--bare", e.vault.Dir, inc).CombinedOutput(); err != nil {
				t.Fatalf("git clone --bare: %v\n%s", err, out)
			}
			extra := filepath.Join(base, "remotes.gitconfig")
			must(t, os.WriteFile(extra, []byte("[remote \"backup\"]\n\turl = "+inc+"\n"), 0o644))
			if _, err := testutil.Git(e.vault.Dir, "config", "include.path", extra); err != nil {
				t.Fatal(err)
			}
			return inc, `cp -R "$1" /tmp/r.git && git --git-dir=/tmp/r.git --no-pager show HEAD:"$2"`
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := setup(t, layout{name: "beside/root"})
			note := commitNote(t, e, "10-projects/rt-copy.md", "---\ntype: fact\n---\nrt-copy-marker\n")
			dir, script := c.make(t, e, e.base)
			r := e.run(t, nil, "sh", "-c", script, "sh", dir, note)
			t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			if strings.Contains(string(r.stdout), "rt-copy-marker") {
				t.Fatalf("BREACH: the agent printed %s from %s, a copy of the vault its Git repository names (%s); receipt %s", note, dir, c.name, fmtAny(r.report["vault_reads"]))
			}
		})
	}
}
