package escape

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

// hideWays are the notes test/hostile's hide-reads reads, one per way an
// agent might hope the read receipt misses (hidereads_linux.go).
var hideWays = []string{"mmap", "sendfile", "copy_file_range", "proc-self-fd", "openat-dirfd", "symlink-in-tmp", "child-exits-at-once"}

// addHideNotes commits one note per hide way, a note the hard link
// targets and one nobody reads; it returns each note's blob id at the new
// HEAD.
func addHideNotes(t *testing.T, e *env) map[string]string {
	t.Helper()
	names := append(append([]string{}, hideWays...), "hardlink", "unread")
	for _, w := range names {
		p := filepath.Join(e.vault.Dir, "10-projects", "hide-"+w+".md")
		if err := os.WriteFile(p, []byte("---\ntype: note\n---\nhide-"+w+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if e.l.gateOwned {
			_ = os.Chown(p, gateUID, gateUID)
		}
	}
	for _, args := range [][]string{{"add", "10-projects"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "hide notes"}} {
		if _, err := testutil.Git(e.vault.Dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	blobs := map[string]string{}
	for _, w := range names {
		rel := "10-projects/hide-" + w + ".md"
		out, err := testutil.Git(e.vault.Dir, "rev-parse", "HEAD:"+rel)
		if err != nil {
			t.Fatal(err)
		}
		blobs[rel] = strings.TrimSpace(out)
	}
	return blobs
}

// TestReadReceiptsHostileAgent (issue 21): the agent reads notes by mmap
// (descriptor closed before the pages are touched), sendfile,
// copy_file_range, a reopen through /proc/self/fd of an O_PATH
// descriptor, openat on a folder descriptor, a symlink planted in /tmp, and a child that exits at once; every one of those notes is in
// the session's read receipt with its blob id at the session's vault
// HEAD, the note nobody read is not, and the hard link from the workdir
// fails with EXDEV (the vault's bind is its own mount: link(2) never
// crosses mounts). On the old code the report had no vault_reads at all.
func TestReadReceiptsHostileAgent(t *testing.T) {
	for _, l := range []layout{{name: "gate-owned/root", gateOwned: true}, {name: "workdir-in-vault/root", workdirInVault: true}, {name: "inside/root", vaultInWorkdir: true}} {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			blobs := addHideNotes(t, e)
			r := e.run(t, nil, e.bins.Hostile, "hide-reads")
			checkHideReceipt(t, l, e, blobs, r)
		})
	}
}

// checkHideReceipt checks the session r of test/hostile's hide-reads:
// every attempt's read happened, the hard link was refused, every note
// read is in the receipt with its blob id, the unread and hard-linked
// notes are not, and the digest is in the report and the record. It
// returns the report's vault_reads.
func checkHideReceipt(t *testing.T, l layout, e *env, blobs map[string]string, r *run) map[string]any {
	t.Helper()
	return checkHideReceiptAllowing(t, l, e, blobs, r, nil)
}

// checkHideReceiptAllowing is checkHideReceipt where the attempts named
// in fails may fail with that errno (the file opened, the read itself
// refused: under vault.view's overlay copy_file_range to another
// filesystem is EXDEV); their notes must be in the receipt all the same.
func checkHideReceiptAllowing(t *testing.T, l layout, e *env, blobs map[string]string, r *run, fails map[string]string) map[string]any {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	res, err := parseResults(r.stdout)
	if err != nil {
		t.Fatal(err)
	}
	sawHardlink := false
	for _, x := range res {
		w, ok := strings.CutPrefix(x.Attempt, "read-")
		switch {
		case !ok:
		case w == "hardlink":
			sawHardlink = true
			// Not EROFS: the hard link is refused for crossing
			// mounts, before any write permission is asked.
			if x.OK || (x.Errno != "EXDEV" && !(l.workdirInVault && x.Errno == "EROFS")) {
				t.Errorf("hard link of a note from the workdir: ok=%v errno=%s (%s), want EXDEV", x.OK, x.Errno, x.Err)
			}
		case !x.OK && fails[w] != "" && x.Errno == fails[w]:
		case !x.OK || !strings.Contains(x.Saw, "hide-"+w):
			t.Errorf("%s: the agent's read did not happen (ok=%v saw=%q err=%s): the attempt proves nothing", x.Attempt, x.OK, x.Saw, x.Err)
		}
	}
	if !sawHardlink {
		t.Fatalf("no read-hardlink attempt in the agent's output:\n%s", r.stdout)
	}
	vr, _ := r.report["vault_reads"].(map[string]any)
	if vr == nil || vr["recorded"] != true {
		t.Fatalf("report vault_reads = %v, want recorded: true\nstderr:\n%s", r.report["vault_reads"], r.stderr)
	}
	got := map[string]string{}
	reads, _ := vr["reads"].([]any)
	for _, x := range reads {
		m, _ := x.(map[string]any)
		p, _ := m["path"].(string)
		b, _ := m["blob"].(string)
		got[p] = b
	}
	for _, w := range hideWays {
		rel := "10-projects/hide-" + w + ".md"
		if b, ok := got[rel]; !ok {
			t.Errorf("read by %s: %s is not in the receipt %v", w, rel, readPaths(got))
		} else if b != blobs[rel] {
			t.Errorf("%s: blob %q in the receipt, %q at HEAD", rel, b, blobs[rel])
		}
	}
	for _, w := range []string{"unread", "hardlink"} {
		if _, ok := got["10-projects/hide-"+w+".md"]; ok {
			t.Errorf("hide-%s.md is in the receipt but the agent never opened it", w)
		}
	}
	if d, _ := vr["digest"].(string); d == "" || r.report["vault_reads_digest"] != d {
		t.Errorf("vault_reads.digest %q, vault_reads_digest %v: want both, equal", d, r.report["vault_reads_digest"])
	}
	rec, err := os.ReadFile(filepath.Join(e.vault.Dir, "90-inbox", ".sessions", r.session+".json"))
	if err != nil || !strings.Contains(string(rec), `"vault_reads_digest": "`+vr["digest"].(string)+`"`) {
		t.Errorf("session record %s lacks the digest %v (%v)", r.session, vr["digest"], err)
	}
	return vr
}

// TestReadReceiptsUserSaysUnavailable (issue 21 item 4): an unprivileged
// caller's launcher cannot mark the sandbox's vault mount (fanotify mount
// marks on a host filesystem need CAP_SYS_ADMIN of the initial user
// namespace); where it cannot mark the vault's folders either (inode
// marks: TestReadReceiptsUnprivilegedHostileAgent), its report says the
// reads were not recorded and why — never an empty list that reads as
// "read nothing"; where it can, the read is in the receipt. Under a profile with
// vault.receipts: required the same session is refused before the agent
// runs (125, stage receipts): it fails closed.
func TestReadReceiptsUserSaysUnavailable(t *testing.T) {
	e := setup(t, layout{name: "beside/user", gateOwned: true, user: true})
	r := e.run(t, nil, "cat", filepath.Join(e.vault.Dir, e.vault.Note))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	vr, _ := r.report["vault_reads"].(map[string]any)
	if vr == nil {
		t.Fatalf("no vault_reads in the report")
	}
	if vr["recorded"] == true {
		if reads, _ := vr["reads"].([]any); len(reads) == 0 {
			t.Fatalf("recorded with no reads, but the agent read %s", e.vault.Note)
		}
		return // the kernel let this caller record
	}
	if why, _ := vr["unavailable"].(string); why == "" {
		t.Errorf("vault_reads %v: not recorded, and no reason given", vr)
	}
	if !strings.Contains(string(r.stderr), "read receipt") {
		t.Errorf("stderr does not tell the user the reads were not recorded:\n%s", r.stderr)
	}
	prof := filepath.Join(e.outDir, "required.yaml")
	if err := os.WriteFile(prof, []byte("name: required\nextends: default\nvault:\n  receipts: required\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chown(prof, agentUID, agentUID)
	marker := filepath.Join(e.workdir, "agent-ran")
	r = e.run(t, []string{"--profile", prof}, "touch", marker)
	errv, _ := r.report["error"].(map[string]any)
	if r.code != 125 || errv == nil || errv["stage"] != "receipts" {
		t.Errorf("vault.receipts: required, no receipt possible: exit %d, error %v; want 125 at stage receipts\n%s", r.code, errv, r.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the agent ran although its reads could not be recorded")
	}
}

func readPaths(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// fedmemJSON runs bin/fedmem with args and decodes its JSON output.
func fedmemJSON(t *testing.T, e *env, v any, args ...string) {
	t.Helper()
	out, err := exec.Command(e.bins.Fedmem, args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("fedmem %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("fedmem %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestAuditReadersThreeSessions (issue 21 item 2): of three sessions, the
// first cats a stale note, the second reads only the agent contract, the
// third greps the whole vault; `fedmem audit readers` names exactly the
// first and the third, with the commit they saw and the note's blob. The
// gate's sweep stores their receipts in its state and withholds the
// stale note naming both as its readers; after the live records are
// removed from 90-inbox/.sessions/, the stored copies still answer.
// `fedmem audit session` shows the second's reads. On the old code there
// was no `audit readers` and no receipt to read.
func TestAuditReadersThreeSessions(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	note := "10-projects/stale.md"
	if err := os.WriteFile(filepath.Join(e.vault.Dir, note), []byte("---\ntype: fact\nstatus: stable\nstale_after: 2020-01-01T00:00:00Z\n---\nThe stale-marker fact.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", note}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "stale note"}} {
		if _, err := testutil.Git(e.vault.Dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	blob, _ := testutil.Git(e.vault.Dir, "rev-parse", "HEAD:"+note)
	head, _ := testutil.Git(e.vault.Dir, "rev-parse", "HEAD")
	var ids []string
	for _, argv := range [][]string{
		{"cat", filepath.Join(e.vault.Dir, note)},
		{"cat", filepath.Join(e.vault.Dir, "00-global/AGENT.md")},
		{"grep", "-rq", "stale-marker", e.vault.Dir},
	} {
		r := e.run(t, nil, argv...)
		if r.code != 0 || r.session == "" {
			t.Fatalf("%v: exit %d, session %q\n%s", argv, r.code, r.session, r.stderr)
		}
		ids = append(ids, r.session)
	}
	check := func(when string) {
		t.Helper()
		var a struct {
			Readers []struct{ Session, Commit, Blob string }
		}
		fedmemJSON(t, e, &a, "audit", "readers", note, "--vault", e.vault.Dir, "--json")
		var got []string
		for _, r := range a.Readers {
			got = append(got, r.Session)
			if r.Commit != strings.TrimSpace(head) || r.Blob != strings.TrimSpace(blob) {
				t.Errorf("%s: reader %s saw commit %s blob %s, want %s %s", when, r.Session, r.Commit, r.Blob, head, blob)
			}
		}
		if want := []string{ids[0], ids[2]}; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: audit readers %s = %v, want exactly %v (sessions: %v)", when, note, got, want, ids)
		}
	}
	check("live records")
	var sw struct {
		Withheld []struct {
			Path   string
			ReadBy []string `json:"read_by"`
		}
		Sessions struct {
			ReceiptsStored int `json:"receipts_stored"`
		}
	}
	fedmemJSON(t, e, &sw, "gate", "sweep", "--vault", e.vault.Dir, "--json")
	if sw.Sessions.ReceiptsStored != 3 {
		t.Errorf("the sweep stored %d receipts, want 3", sw.Sessions.ReceiptsStored)
	}
	if len(sw.Withheld) != 1 || sw.Withheld[0].Path != note || strings.Join(sw.Withheld[0].ReadBy, " ") != ids[0]+" "+ids[2] {
		t.Errorf("withheld %+v: want %s read by %s and %s", sw.Withheld, note, ids[0], ids[2])
	}
	for _, id := range ids {
		if err := os.Remove(filepath.Join(e.vault.Dir, "90-inbox", ".sessions", id+".json")); err != nil {
			t.Fatal(err)
		}
	}
	check("stored copies only")
	var v struct {
		VaultReads struct{ Reads []struct{ Path string } } `json:"vault_reads"`
		Drafts     []any
	}
	fedmemJSON(t, e, &v, "audit", "session", ids[1], "--vault", e.vault.Dir, "--json")
	if len(v.VaultReads.Reads) != 1 || v.VaultReads.Reads[0].Path != "00-global/AGENT.md" {
		t.Errorf("audit session %s reads %+v, want only 00-global/AGENT.md", ids[1], v.VaultReads.Reads)
	}
}

// TestReadReceiptsOnlyTheSandbox: the mark is on the sandbox's own vault
// mount, so an open of a note on the host while the session runs (the
// gate, an editor, another session) is not the agent's read and is not in
// its receipt. The agent signals through its inbox that it is running and
// waits for the host's go before it reads a note of its own and exits.
func TestReadReceiptsOnlyTheSandbox(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	_, got := hostReadWhileRunning(t, e)
	if strings.Join(got, " ") != "10-projects/hide-mmap.md" {
		t.Errorf("receipt reads %v, want only the agent's 10-projects/hide-mmap.md (the host's read of hide-unread.md is not the agent's)", got)
	}
}

// hostReadWhileRunning runs a session whose agent, once running, waits
// for the host to read 10-projects/hide-unread.md and then reads
// 10-projects/hide-mmap.md itself; it returns the session (exit 0) and
// the paths its receipt lists, in order.
func hostReadWhileRunning(t *testing.T, e *env) (*run, []string) {
	t.Helper()
	addHideNotes(t, e)
	goFile := filepath.Join(e.outDir, "go")
	script := `touch "$FEDMEM_INBOX/ready"; while [ ! -e "$1" ]; do sleep 0.05; done; cat "$2" >/dev/null`
	done := startReadySession(t, e, script, goFile, filepath.Join(e.vault.Dir, "10-projects/hide-mmap.md"))
	// The host reads a note while the agent runs.
	if _, err := os.ReadFile(filepath.Join(e.vault.Dir, "10-projects/hide-unread.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	vr, _ := r.report["vault_reads"].(map[string]any)
	reads, _ := vr["reads"].([]any)
	var got []string
	for _, x := range reads {
		m, _ := x.(map[string]any)
		got = append(got, fmt.Sprint(m["path"]))
	}
	return r, got
}

// startReadySession runs script (sh -c, with args) in a session and returns
// once the agent has made "ready" in its inbox; the session's outcome
// comes on the channel.
func startReadySession(t *testing.T, e *env, script string, args ...string) <-chan *run {
	t.Helper()
	done := make(chan *run, 1)
	go func() { done <- e.run(t, nil, append([]string{"sh", "-c", script, "sh"}, args...)...) }()
	inbox := filepath.Join(e.vault.Dir, "90-inbox")
	for {
		select {
		case r := <-done:
			t.Fatalf("the session ended before it was ready: exit %d\n%s", r.code, r.stderr)
		default:
		}
		ents, _ := os.ReadDir(inbox)
		for _, d := range ents {
			if _, err := os.Stat(filepath.Join(inbox, d.Name(), "ready")); err == nil {
				return done
			}
		}
		time.Sleep(10 * time.Millisecond) // a poll for the agent's file, not a wait for a duration
	}
}

// TestReadReceiptsNoteChangedDuringSession (issue 21 item 4): the agent
// reads a note, then the gate commits a new version of it while the
// session runs (a withhold does this); the receipt keeps the blob at the
// session's start and says the note changed by the end (end_blob,
// changed_during), and the user is told: the agent may have read either.
func TestReadReceiptsNoteChangedDuringSession(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	blobs := addHideNotes(t, e)
	note := "10-projects/hide-mmap.md"
	goFile := filepath.Join(e.outDir, "go")
	script := `cat "$2" >/dev/null; touch "$FEDMEM_INBOX/ready"; while [ ! -e "$1" ]; do sleep 0.05; done`
	done := startReadySession(t, e, script, goFile, filepath.Join(e.vault.Dir, note))
	if err := os.WriteFile(filepath.Join(e.vault.Dir, note), []byte("---\ntype: note\nstatus: draft\n---\nwithheld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", note}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "withhold"}} {
		if _, err := testutil.Git(e.vault.Dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	newBlob, _ := testutil.Git(e.vault.Dir, "rev-parse", "HEAD:"+note)
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	vr, _ := r.report["vault_reads"].(map[string]any)
	reads, _ := vr["reads"].([]any)
	if len(reads) != 1 {
		t.Fatalf("receipt reads %v, want the one note", reads)
	}
	m, _ := reads[0].(map[string]any)
	if m["path"] != note || m["blob"] != blobs[note] || m["end_blob"] != strings.TrimSpace(newBlob) || vr["changed_during"] != float64(1) {
		t.Errorf("receipt %v: want %s with blob %s (start), end_blob %s, changed_during 1", vr, note, blobs[note], newBlob)
	}
	if !strings.Contains(string(r.stderr), "changed 1 of the notes the agent read") {
		t.Errorf("the user is not told the note changed during the session:\n%s", r.stderr)
	}
}

// TestReadReceiptsUnprivilegedHostileAgent (issue 21: a mechanism that
// holds for root and unprivileged callers alike): fedmem-run run by an
// ordinary user cannot mark the sandbox's vault mount, so it marks every
// folder the sandbox's vault mounts show (fanotify inode marks, allowed
// unprivileged); the hostile agent's mmap, sendfile, copy_file_range,
// /proc/self/fd reopen, openat on a folder descriptor, symlink in /tmp and
// child that exits at once are all in the receipt (recorded: true,
// attribution any-process). On the old code the receipt was recorded:
// false ("fanotify mount mark ... EPERM").
func TestReadReceiptsUnprivilegedHostileAgent(t *testing.T) {
	for _, l := range []layout{{name: "beside/user", gateOwned: true, user: true}, {name: "inside/user", gateOwned: true, user: true, vaultInWorkdir: true}} {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			blobs := addHideNotes(t, e)
			r := e.run(t, nil, e.bins.Hostile, "hide-reads")
			vr := checkHideReceipt(t, l, e, blobs, r)
			if vr["attribution"] != "any-process" {
				t.Errorf("vault_reads.attribution %v, want any-process (inode marks see every opener)", vr["attribution"])
			}
			if !strings.Contains(string(r.stderr), "attribution: any-process") {
				t.Errorf("stderr does not tell the user the receipt lists every opener's reads:\n%s", r.stderr)
			}
		})
	}
}

// TestReadReceiptsUnprivilegedHostRead: with inode marks a host process's
// open of a note during the session cannot be told from the agent's (an
// unprivileged fanotify group reports every other process's pid as 0 and
// FAN_REPORT_PIDFD is refused): it may be in the receipt, but then only
// as a maybe read — the receipt says attribution any-process, never
// sandbox. The agent's own read is there, and under vault.receipts:
// required the session now runs.
func TestReadReceiptsUnprivilegedHostRead(t *testing.T) {
	e := setup(t, layout{name: "beside/user", gateOwned: true, user: true})
	r, paths := hostReadWhileRunning(t, e)
	vr, _ := r.report["vault_reads"].(map[string]any)
	if vr == nil || vr["recorded"] != true {
		t.Fatalf("vault_reads %v, want recorded: true\n%s", r.report["vault_reads"], r.stderr)
	}
	got := map[string]bool{}
	for _, p := range paths {
		got[p] = true
	}
	if !got["10-projects/hide-mmap.md"] {
		t.Errorf("the agent's read of hide-mmap.md is not in the receipt %v", got)
	}
	if got["10-projects/hide-unread.md"] && vr["attribution"] != "any-process" {
		t.Errorf("the host's read of hide-unread.md is in the receipt as attribution %v: a host read must never be reported as the sandbox's", vr["attribution"])
	}
	t.Logf("host read listed: %v, attribution %v", got["10-projects/hide-unread.md"], vr["attribution"])

	prof := filepath.Join(e.outDir, "required.yaml")
	if err := os.WriteFile(prof, []byte("name: required\nextends: default\nvault:\n  receipts: required\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chown(prof, agentUID, agentUID)
	r = e.run(t, []string{"--profile", prof}, "cat", filepath.Join(e.vault.Dir, "10-projects/hide-sendfile.md"))
	if r.code != 0 {
		t.Fatalf("vault.receipts: required, unprivileged caller: exit %d, want 0 (the receipt can be recorded)\n%s", r.code, r.stderr)
	}
	vr, _ = r.report["vault_reads"].(map[string]any)
	if vr == nil || vr["recorded"] != true || !strings.Contains(fmt.Sprint(vr["reads"]), "10-projects/hide-sendfile.md") {
		t.Errorf("vault.receipts: required: vault_reads %v, want recorded with hide-sendfile.md", vr)
	}
}
