package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedmem/fedmem/gate"
	"github.com/fedmem/fedmem/gate/audit"
	"github.com/fedmem/fedmem/gate/review"
	"github.com/fedmem/fedmem/gate/sweep"
	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/repo"
)

func gateVault(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(testutil.TempDir(t), "vault")
	if _, err := repo.Init(dir, repo.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	sd := filepath.Join(dir, "90-inbox", "cli-1")
	if err := os.MkdirAll(sd, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(sd, "ok.md"), []byte("---\ntype: Fact\ntitle: CLI fact\nconfidence: verified\n---\nx\n"), 0o644)
	os.WriteFile(filepath.Join(sd, "bad.md"), []byte("---\ntype: Fact\ntitle: a\ntitle: b\n---\n"), 0o644)
	return dir
}

func TestGateOnceCommand(t *testing.T) {
	v := gateVault(t)
	// Without --allow-same-user, a session of the gate's own uid is refused.
	code, out, errOut := runFedmem("gate", "once", "--vault", v)
	if code != 1 || !strings.Contains(errOut, "--allow-same-user") {
		t.Fatalf("same user: code %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runFedmem("gate", "once", "--vault", v, "--allow-same-user", "--json")
	if code != 0 {
		t.Fatalf("code %d\n%s\n%s", code, out, errOut)
	}
	var s gate.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	// The default policy trusts no origin: the valid draft waits for a
	// reviewer (review-required), the invalid one is rejected.
	if s.Promoted != 0 || s.Pending != 1 || s.Rejected != 1 || !strings.Contains(errOut, "same-user mode") {
		t.Fatalf("summary %+v\nstderr %s", s, errOut)
	}
	// Human output names file, line and rule.
	os.WriteFile(filepath.Join(v, "90-inbox", "cli-1", "bad2.md"), []byte("---\ntype: Fact\nx: &a 1\n---\n"), 0o644)
	code, out, _ = runFedmem("gate", "once", "--vault", v, "--allow-same-user")
	if code != 0 || !strings.Contains(out, "cli-1/bad2.md:3: error:") || !strings.Contains(out, "(yaml-anchor)") {
		t.Fatalf("code %d\n%s", code, out)
	}
	if code, _, errOut := runFedmem("gate", "once"); code != 2 {
		t.Fatalf("missing --vault: code %d %s", code, errOut)
	}

	// audit verify: intact, then tampered.
	code, out, _ = runFedmem("audit", "verify", "--vault", v)
	if code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("verify: %d %s", code, out)
	}
	abs, _ := filepath.EvalSymlinks(v)
	logPath := filepath.Join(gate.DefaultStateDir(abs), audit.File)
	b, _ := os.ReadFile(logPath)
	os.WriteFile(logPath, []byte(strings.Replace(string(b), `"pending"`, `"promoted"`, 1)), 0o600)
	code, out, _ = runFedmem("audit", "verify", "--vault", v)
	if code != 1 || !strings.Contains(out, "audit.jsonl:") || !strings.Contains(out, "was changed") {
		t.Fatalf("tampered log: code %d\n%s", code, out)
	}
}

func TestPolicyCheckCommand(t *testing.T) {
	dir := testutil.TempDir(t)
	p := filepath.Join(dir, "policy.yaml")
	os.WriteFile(p, []byte("version: 1\ntargets:\n  Fact: 90-inbox\nlimits:\n  max_draft_bytes: -1\n"), 0o644)
	code, out, _ := runFedmem("policy", "check", p)
	if code != 1 || !strings.Contains(out, p+":3: targets.Fact") || !strings.Contains(out, p+":5: limits.max_draft_bytes") {
		t.Fatalf("code %d\n%s", code, out)
	}
	os.WriteFile(p, []byte("version: 1\nreviewers: [alice]\n"), 0o644)
	if code, out, _ := runFedmem("policy", "check", p); code != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("valid policy: %d %s", code, out)
	}
}

func TestReviewCommands(t *testing.T) {
	dir := filepath.Join(testutil.TempDir(t), "vault")
	if _, err := repo.Init(dir, repo.InitOptions{Reviewers: []string{strconv.Itoa(os.Geteuid())}}); err != nil {
		t.Fatal(err)
	}
	sd := filepath.Join(dir, "90-inbox", "rv-1")
	os.MkdirAll(sd, 0o700)
	os.WriteFile(filepath.Join(sd, "h.md"), []byte("---\ntype: Fact\ntitle: Held\n---\nabc\u202edef\n"), 0o644)
	g, err := gate.Open(gate.Options{Vault: dir, AllowSameUser: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s, err := g.Once()
	if err != nil || s.Pending != 1 {
		t.Fatalf("%+v %v", s, err)
	}
	id := s.Decisions[0].ID
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sock := filepath.Join(g.StateDir(), review.SocketName)
	go g.ServeReview(ctx, sock)
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The list shows the shortest unique prefix of the id's tail (issue 19),
	// the JSON the full id.
	code, out, errOut := runFedmem("review", "list", "--vault", dir)
	if f := strings.Fields(out); code != 0 || len(f) == 0 || len(f[0]) < gate.MinIDPrefix || !strings.HasPrefix(id[strings.LastIndexByte(id, '-')+1:], f[0]) {
		t.Fatalf("list: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runFedmem("review", "list", "--vault", dir, "--json"); code != 0 || !strings.Contains(out, id) {
		t.Fatalf("list --json: %d %s %s", code, out, errOut)
	}
	code, out, _ = runFedmem("review", "show", id, "--vault", dir)
	if code != 0 || !strings.Contains(out, "abc<U+202E>def") || strings.Contains(out, "\u202e") {
		t.Fatalf("show must make the bidi control visible: %d %q", code, out)
	}
	// A unique prefix of the id's random tail: the same answer, the same
	// JSON, as the full id; too short is refused.
	tail := id[strings.LastIndexByte(id, '-')+1:][:gate.MinIDPrefix]
	_, full, _ := runFedmem("review", "show", id, "--vault", dir, "--json")
	code, out, errOut = runFedmem("review", "show", tail, "--vault", dir, "--json")
	if code != 0 || out != full {
		t.Fatalf("show by prefix %q: %d %s\n%s\nwant\n%s", tail, code, errOut, out, full)
	}
	if code, _, errOut := runFedmem("review", "show", tail[:3], "--vault", dir); code != 1 || !strings.Contains(errOut, "too short") {
		t.Fatalf("3-character prefix: %d %s", code, errOut)
	}
	if code, _, errOut := runFedmem("review", "reject", id, "--vault", dir); code != 2 {
		t.Fatalf("reject without --reason: %d %s", code, errOut)
	}
	code, out, errOut = runFedmem("review", "reject", tail, "--reason", "hidden text", "--vault", dir)
	if code != 0 || !strings.Contains(out, id+" rejected") {
		t.Fatalf("reject by prefix: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := runFedmem("review", "approve", id, "--vault", dir); code != 1 || !strings.Contains(errOut, "no pending draft") {
		t.Fatalf("approve after reject: %d %s", code, errOut)
	}
}

// TestGateSweepPrunesEmptySessionsCommand: `fedmem gate sweep` removes an
// empty session folder idle past the grace period and says so (text and
// JSON); `fedmem gate status` reports the last sweep's counts.
func TestGateSweepPrunesEmptySessionsCommand(t *testing.T) {
	v := gateVault(t) // cli-1 holds drafts: kept
	inbox := filepath.Join(v, "90-inbox")
	old := time.Now().Add(-48 * time.Hour)
	for _, s := range []string{"idle-1", "idle-2"} {
		os.Mkdir(filepath.Join(inbox, s), 0o700)
		os.Chtimes(filepath.Join(inbox, s), old, old)
	}
	os.Mkdir(filepath.Join(inbox, "fresh"), 0o700)
	code, out, errOut := runFedmem("gate", "sweep", "--vault", v, "--json")
	if code != 0 {
		t.Fatalf("sweep: %d %s %s", code, out, errOut)
	}
	var s sweep.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.Sessions == nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if len(s.Sessions.Pruned) != 2 || s.Sessions.Waiting != 1 || s.Sessions.Kept != 1 {
		t.Fatalf("sessions %+v", s.Sessions)
	}
	for _, d := range []string{"cli-1", "fresh"} {
		if _, err := os.Stat(filepath.Join(inbox, d)); err != nil {
			t.Errorf("%s removed: %v", d, err)
		}
	}
	os.Mkdir(filepath.Join(inbox, "idle-3"), 0o700)
	os.Chtimes(filepath.Join(inbox, "idle-3"), old, old)
	code, out, _ = runFedmem("gate", "sweep", "--vault", v)
	if code != 0 || !strings.Contains(out, "pruned   empty session folder 90-inbox/idle-3") || !strings.Contains(out, "session folders: 1 empty pruned, 1 empty waiting") {
		t.Fatalf("sweep text: %d\n%s", code, out)
	}
	code, out, _ = runFedmem("gate", "status", "--vault", v)
	if code != 0 || !strings.Contains(out, "sessions:   last sweep") || !strings.Contains(out, "3 pruned in all") {
		t.Fatalf("status: %d\n%s", code, out)
	}
	code, out, _ = runFedmem("gate", "status", "--vault", v, "--json")
	var st struct {
		Configured *bool             `json:"configured"`
		Sessions   *gate.PruneStatus `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || st.Configured == nil || st.Sessions == nil || st.Sessions.PrunedTotal != 3 {
		t.Fatalf("status --json: %d %v\n%s", code, err, out)
	}
}

// TestHelperFedmemMain is not a test: it runs fedmem's main with the
// arguments in FEDMEM_HELPER_ARGS (separated by U+001F), for tests that signal it.
func TestHelperFedmemMain(t *testing.T) {
	args := os.Getenv("FEDMEM_HELPER_ARGS")
	if args == "" {
		t.Skip("helper process")
	}
	os.Exit(run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
}

// gate run handles a draft written while it runs (inotify) and, on SIGTERM,
// finishes and exits 0.
func TestGateRunCommandDrainsOnSIGTERM(t *testing.T) {
	v := gateVault(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFedmemMain$")
	cmd.Env = append(os.Environ(), "FEDMEM_HELPER_ARGS="+strings.Join([]string{"gate", "run", "--vault", v, "--allow-same-user", "--interval", "1h"}, "\x1f"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sd := filepath.Join(v, "90-inbox", "cli-1")
	wait := func(p string) {
		t.Helper()
		for i := 0; i < 400; i++ {
			if _, err := os.Stat(p); err == nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("%s never appeared\n%s", p, stderr.String())
	}
	wait(filepath.Join(sd, ".receipts", "ok.md.json")) // the start-up pass
	os.WriteFile(filepath.Join(sd, "later.md"), []byte("---\ntype: Fact\ntitle: Later\nconfidence: verified\n---\nx\n"), 0o644)
	wait(filepath.Join(sd, ".receipts", "later.md.json"))
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("gate run after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("gate run did not stop on SIGTERM\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), `"msg":"gate stopped"`) {
		t.Errorf("no stop log:\n%s", stderr.String())
	}
}

// End to end: an agent inside fedmem-run writes drafts; the gate (running
// alongside) promotes one and rejects one; the agent reads both receipts
// from inside its sandbox; a receipt the agent forges changes nothing.
func TestEndToEndSandboxDraftsAndReceipts(t *testing.T) {
	testutil.RequireRoot(t)
	bins := testutil.Binaries(t)
	base := testutil.TempDir(t)
	v := filepath.Join(base, "vault")
	if _, err := repo.Init(v, repo.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	// The vault trusts sessions of the built-in profile fedmem-run picks
	// here (their records are root's: proven).
	os.WriteFile(filepath.Join(v, "00-global", "policy.yaml"), []byte("version: 1\nreviewers: [root]\nauto_promote:\n  profiles: [default]\n"), 0o644)
	// The note the draft cites: a human's, in force, about its subject
	// (the agent contract is not evidence, issue 24).
	os.MkdirAll(filepath.Join(v, "10-projects"), 0o755)
	os.WriteFile(filepath.Join(v, "10-projects", "sandbox.md"), []byte("---\ntype: Fact\ntitle: Sandbox\n---\nThe sandbox mounts the vault read-only.\n"), 0o644)
	for _, a := range [][]string{{"add", "00-global/policy.yaml", "10-projects/sandbox.md"}, {"-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", "policy"}} {
		if out, err := exec.Command("git", append([]string{"-C", v}, a...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", a, err, out)
		}
	}
	g, err := gate.Open(gate.Options{Vault: v, AllowSameUser: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx, 200*time.Millisecond, func(*gate.Summary, error) {}) }()
	defer func() { cancel(); <-done }()

	script := `set -e
printf -- '---\ntype: Fact\ntitle: From the sandbox\nsources: [10-projects/sandbox.md]\n---\nThe sandbox mounts the vault read-only.\n' > "$FEDMEM_INBOX/n.md.tmp"
mv "$FEDMEM_INBOX/n.md.tmp" "$FEDMEM_INBOX/n.md"
printf 'no frontmatter\n' > "$FEDMEM_INBOX/bad.md"
i=0
while [ ! -f "$FEDMEM_INBOX/.receipts/n.md.json" ] || [ ! -f "$FEDMEM_INBOX/.receipts/bad.md.json" ]; do
  i=$((i+1)); [ $i -lt 300 ] || { echo "no receipts"; exit 3; }; sleep 0.1
done
echo "RECEIPT-N $(tr -d '\n ' < "$FEDMEM_INBOX/.receipts/n.md.json")"
echo "RECEIPT-BAD $(tr -d '\n ' < "$FEDMEM_INBOX/.receipts/bad.md.json")"
echo '{"state":"promoted"}' > "$FEDMEM_INBOX/.receipts/bad.md.json" || echo "FORGE-REFUSED"
`
	cmd := exec.Command(bins.FedmemRun, "--vault", v, "--workdir", base, "--", "/bin/sh", "-c", script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fedmem-run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `RECEIPT-N {"draft":"n.md"`) || !strings.Contains(string(out), `"state":"promoted"`) {
		t.Fatalf("promotion receipt not visible in the sandbox:\n%s", out)
	}
	if !strings.Contains(string(out), `RECEIPT-BAD {"draft":"bad.md"`) || !strings.Contains(string(out), `"rule":"frontmatter-open","line":1`) {
		t.Fatalf("rejection receipt not visible in the sandbox:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(v, "20-domains", "from-the-sandbox.md")); err != nil || !strings.Contains(string(b), "The sandbox mounts the vault read-only.") {
		t.Fatalf("promoted note: %v", err)
	}
	decs, _ := g.Decisions()
	for _, d := range decs {
		if d.Draft == "bad.md" && d.State != gate.StateRejected {
			t.Fatalf("a forged receipt changed the gate's decision: %+v", d)
		}
	}
}

// TestReviewBatchCommands: approve and reject take several ids and
// filters; a batch shows what it selected and its count, refuses to decide
// without --yes when stdin is not a terminal, decides with it (one commit
// per draft), and a filter that matches nothing or a half-failed batch
// exits non-zero with a message.
func TestReviewBatchCommands(t *testing.T) {
	dir := filepath.Join(testutil.TempDir(t), "vault")
	if _, err := repo.Init(dir, repo.InitOptions{Reviewers: []string{strconv.Itoa(os.Geteuid())}}); err != nil {
		t.Fatal(err)
	}
	for sess, drafts := range map[string][]string{"bt-1": {"one", "two", "three"}, "bt-2": {"four"}} {
		sd := filepath.Join(dir, "90-inbox", sess)
		os.MkdirAll(sd, 0o700)
		for _, n := range drafts {
			os.WriteFile(filepath.Join(sd, n+".md"), []byte("---\ntype: Fact\ntitle: Batch "+n+"\n---\nThe number "+n+" is a word.\n"), 0o644)
		}
	}
	g, _, _ := reviewGate(t, dir, 4)
	if code, _, errOut := runFedmem("review", "approve", "--vault", dir); code != 2 || !strings.Contains(errOut, "--all") {
		t.Fatalf("approve with nothing named: %d %s", code, errOut)
	}
	if code, _, errOut := runFedmem("review", "approve", "--session", "bt-none", "--yes", "--vault", dir); code != 1 || !strings.Contains(errOut, "no held draft matches --session bt-none") {
		t.Fatalf("filter matching nothing: %d %s", code, errOut)
	}
	// The test's stdin is not a terminal: the batch is shown, not decided.
	code, out, errOut := runFedmem("review", "approve", "--session", "bt-1", "--vault", dir)
	if code != 2 || !strings.Contains(out, "3 held draft(s) to approve") || !strings.Contains(errOut, "--yes") {
		t.Fatalf("batch without --yes off a terminal: %d %s %s", code, out, errOut)
	}
	if s, _ := g.Pending(); len(s) != 4 {
		t.Fatalf("a refused batch decided something: %d held", len(s))
	}
	before, _ := exec.Command("git", "-C", dir, "rev-list", "--count", "HEAD").Output()
	code, out, errOut = runFedmem("review", "approve", "--session", "bt-1", "--yes", "--vault", dir)
	if code != 0 || !strings.Contains(out, "3 of 3 draft(s) approved by") {
		t.Fatalf("batch approve: %d %s %s", code, out, errOut)
	}
	after, _ := exec.Command("git", "-C", dir, "rev-list", "--count", "HEAD").Output()
	b, _ := strconv.Atoi(strings.TrimSpace(string(before)))
	a, _ := strconv.Atoi(strings.TrimSpace(string(after)))
	if a != b+3 {
		t.Errorf("commits %d -> %d: want one per approved draft", b, a)
	}
	left, _ := g.Pending()
	if len(left) != 1 || left[0].Session != "bt-2" {
		t.Fatalf("held after the batch: %+v", left)
	}
	// Several ids, one of them already decided: the rest is decided, the
	// decided one is named, the exit code says not everything was.
	code, out, errOut = runFedmem("review", "reject", left[0].ID, "--reason", "dup", "--yes", "--vault", dir, "--type", "Fact")
	if code != 0 || !strings.Contains(out, "1 of 1 draft(s) rejected") {
		t.Fatalf("reject by id and --type: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := runFedmem("review", "approve", left[0].ID, left[0].ID, "--vault", dir, "--yes"); code != 1 || !strings.Contains(errOut, "no pending draft") {
		t.Fatalf("batch of decided ids: %d %s", code, errOut)
	}
}

// TestReviewTUIThroughTmux: `fedmem review` on a terminal with no
// subcommand is the interactive review — the held drafts, the gate's view
// of the selected one, a reject with a typed reason and an approval by key,
// each decided by the gate (a commit for the approval).
func TestReviewTUIThroughTmux(t *testing.T) {
	bin := buildFedmem(t)
	dir := filepath.Join(testutil.TempDir(t), "vault")
	if _, err := repo.Init(dir, repo.InitOptions{Reviewers: []string{strconv.Itoa(os.Geteuid())}}); err != nil {
		t.Fatal(err)
	}
	sd := filepath.Join(dir, "90-inbox", "tui-1")
	os.MkdirAll(sd, 0o700)
	os.WriteFile(filepath.Join(sd, "a.md"), []byte("---\ntype: Fact\ntitle: Tui alpha\n---\nAlpha text for the reviewer.\n"), 0o644)
	os.WriteFile(filepath.Join(sd, "b.md"), []byte("---\ntype: Decision\ntitle: Tui beta\n---\nBeta text for the reviewer.\n"), 0o644)
	g, _, sock := reviewGate(t, dir, 2)
	tm := testutil.StartTmux(t, "TERM=xterm-256color "+bin+" review --socket "+sock+"; echo EXIT=$?")
	tm.WaitFor(regexp.MustCompile(`held: 2 shown of 2`), 20*time.Second)
	// The filter narrows the list to the Fact; it is shown with the gate's
	// context.
	tm.Send("/")
	tm.WaitFor(regexp.MustCompile(`filter:`), 10*time.Second)
	tm.Send("Fact", "Enter")
	tm.WaitFor(regexp.MustCompile(`(?s)held: 1 shown of 2.*draft:\s+a\.md.*provenance \(unverified\)`), 20*time.Second)
	tm.Send("r")
	tm.WaitFor(regexp.MustCompile(`reject, reason:`), 10*time.Second)
	tm.Send("not a fact", "Enter")
	tm.WaitFor(regexp.MustCompile(`rejected by \S+`), 20*time.Second)
	tm.WaitFor(regexp.MustCompile(`held: 0 shown of 1`), 20*time.Second)
	tm.Send("/")
	tm.WaitFor(regexp.MustCompile(`filter:`), 10*time.Second)
	tm.Send("C-u", "Enter")
	tm.WaitFor(regexp.MustCompile(`(?s)held: 1 shown of 1.*draft:\s+b\.md`), 20*time.Second)
	tm.Send("a")
	tm.WaitFor(regexp.MustCompile(`promoted by \S+: 70-decisions/tui-beta\.md @ [0-9a-f]{40}`), 20*time.Second)
	tm.Send("q")
	tm.WaitFor(regexp.MustCompile(`2 draft\(s\) decided\s+EXIT=0`), 20*time.Second)
	if left, _ := g.Pending(); len(left) != 0 {
		t.Errorf("still held after the TUI: %+v", left)
	}
	all, _ := g.Decisions()
	for _, d := range all {
		switch d.Draft {
		case "a.md":
			if d.State != gate.StateRejected || d.ReviewReason != "not a fact" {
				t.Errorf("a.md: %+v", d)
			}
		case "b.md":
			if d.State != gate.StatePromoted || d.Commit == "" {
				t.Errorf("b.md: %+v", d)
			}
		}
	}
	// Off a terminal, review alone is a usage error, not the TUI.
	if code, _, errOut := runFedmem("review", "--socket", sock); code != 2 || !strings.Contains(errOut, "subcommand is required") {
		t.Errorf("review off a terminal: %d %s", code, errOut)
	}
}

// reviewGate opens a gate on the vault dir, runs one pass that must hold
// want drafts, and serves the review socket until the test ends.
func reviewGate(t *testing.T, dir string, want int) (*gate.Gate, *gate.Summary, string) {
	t.Helper()
	g, err := gate.Open(gate.Options{Vault: dir, AllowSameUser: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	s, err := g.Once()
	if err != nil || s.Pending != want {
		t.Fatalf("gate pass: %+v %v; want %d held", s, err, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sock := filepath.Join(g.StateDir(), review.SocketName)
	done := make(chan error, 1)
	go func() { done <- g.ServeReview(ctx, sock) }()
	t.Cleanup(func() { cancel(); <-done })
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			return g, s, sock
		}
		if i == 500 {
			t.Fatalf("the review socket %s never appeared", sock)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSessionsCommand: fedmem sessions lists the records newest first, open
// and ended, with the agent's user and the drafts in each inbox; --open and
// --json narrow and script it; no --vault is a usage error.
func TestSessionsCommand(t *testing.T) {
	dir := filepath.Join(testutil.TempDir(t), "vault")
	if _, err := repo.Init(dir, repo.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	sd := filepath.Join(dir, "90-inbox", ".sessions")
	os.MkdirAll(sd, 0o755)
	os.WriteFile(filepath.Join(sd, "s-a.json"), []byte(`{"session":"s-a","profile":"ci","uid":0,"started":"2026-12-01T10:00:00Z","ended":"2026-12-01T10:01:00Z","workdir":"/srv/p"}`), 0o644)
	os.WriteFile(filepath.Join(sd, "s-b.json"), []byte(`{"session":"s-b","profile":"claude","uid":0,"started":"2026-12-01T11:00:00Z","workdir":"/srv/q"}`), 0o644)
	os.MkdirAll(filepath.Join(dir, "90-inbox", "s-b"), 0o755)
	os.WriteFile(filepath.Join(dir, "90-inbox", "s-b", "d.md"), nil, 0o644)
	code, out, errOut := runFedmem("sessions", "--vault", dir)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[1], "s-b") || !strings.Contains(lines[1], "open") || !strings.Contains(lines[2], "ended") || !strings.Contains(lines[1], "root (0)") {
		t.Fatalf("sessions: %d %q %s", code, out, errOut)
	}
	if f := strings.Fields(lines[1]); len(f) < 7 || f[6] != "1" { // AGENT is two words: root (0)
		t.Errorf("drafts of s-b: %q", lines[1])
	}
	code, out, _ = runFedmem("sessions", "--vault", dir, "--open", "--json")
	var got []vault.SessionInfo
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got) != 1 || got[0].Session != "s-b" || got[0].Workdir != "/srv/q" {
		t.Fatalf("--open --json: %d %v %s", code, err, out)
	}
	if code, _, _ := runFedmem("sessions"); code != 2 {
		t.Errorf("no --vault: exit %d, want 2", code)
	}
}
