package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault"
)

func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }

const (
	gateUID  = 64000
	agentUID = 64001
)

func as(uid, gid int, groups []uint32, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}}
	return cmd
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := testutil.Git(dir, args...)
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return out
}

// The agent script copies the drafts the test prepared in the workdir
// into its inbox (temp name, then rename), waits inside its sandbox for the
// gate's receipt of each, and prints them.
const agentScript = `set -e
cd "$FEDMEM_INBOX"
for f in "$1"/*.md; do n=$(basename "$f"); cp "$f" "$n.tmp"; chmod 0644 "$n.tmp"; mv "$n.tmp" "$n"; done
i=0
for f in "$1"/*.md; do n=$(basename "$f")
  while [ ! -f ".receipts/$n.json" ]; do
    i=$((i+1)); [ $i -lt 1200 ] || { echo "no receipt for $n after 120s"; ls -la . .receipts || true; exit 3; }; sleep 0.1
  done
  echo "RECEIPT ${n%.md} $(tr -d '\n ' < ".receipts/$n.json")"
done
`

// leakedKey is an AWS access key id the secret-via-YAML-escape draft hides
// behind "\x41" (A); it must never reach a Git object.
const leakedKey = "AKIAZ7Q3XW2R5T4Y6U2P"

// e2eDrafts: ordinary notes whose sources resolve at HEAD, one without
// sources, one invalid, and hostile drafts from gate/testdata/corpus made to
// cite a resolving source (so evidence alone cannot hold them).
func e2eDrafts(t *testing.T) map[string]string {
	t.Helper()
	d := map[string]string{
		"good1":               "---\ntype: Fact\ntitle: Gate user account\nsources: [10-projects/fedmem/gate-user.md]\n---\nThe gate makes its commits as its own user.\n",
		"good2":               "---\ntype: Fact\ntitle: Session inbox drafts\nsources: [10-projects/fedmem/session-inbox.md]\n---\nDrafts are written only in the session's own inbox.\n",
		"hunch":               "---\ntype: Fact\ntitle: A hunch worth a look\nconfidence: hypothesis\n---\nMaybe.\n",
		"bad":                 "no frontmatter at all\n",
		"hostile-yaml-secret": "---\ntype: Fact\ntitle: Cloud access\ndescription: \"\\x41" + leakedKey[1:] + "\"\nsources: [00-global/AGENT.md]\n---\nUse the key above.\n",
	}
	for _, name := range []string{"hostile-curl-sh", "hostile-adapter-skip-tests", "forged-provenance", "status-approved"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "gate", "testdata", "corpus", name+".md"))
		if err != nil {
			t.Fatal(err)
		}
		body, ok := strings.CutPrefix(string(b), "---\n")
		if !ok {
			t.Fatalf("corpus %s: no frontmatter", name)
		}
		d[name] = "---\nsources: [00-global/AGENT.md]\n" + body
	}
	return d
}

// TestTwoUsersEndToEnd (issue 7, "end to end through fedmem-run in the
// two-user layout"): a vault owned by a gate uid whose policy trusts the
// built-in default profile; root starts fedmem-run (a proven, root-written
// session record) running the agent as its own uid in the agents' group;
// `fedmem gate run`, as the gate uid, promotes the ordinary notes whose
// sources resolve, holds or rejects every hostile corpus draft (which cite a
// resolving source too), holds one without sources and rejects an invalid
// one; the agent reads the receipts inside its sandbox; a hand-made session
// (folder, record and draft by a host user in the agents' group, no
// fedmem-run) stays pending as origin-unverified; a reviewer approves the
// held draft over the review socket; fsck --strict clean, status clean,
// every commit the gate's, no secret in any Git object; and the agent's
// uid cannot write the vault's protected paths on the host either.
func TestTwoUsersEndToEnd(t *testing.T) {
	testutil.RequireRoot(t)
	bins := testutil.Binaries(t)
	base := testutil.TempDir(t)
	v := filepath.Join(base, "vault")
	work := filepath.Join(base, "work")
	home := filepath.Join(base, "home")
	for _, d := range []string{work, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, agentUID, agentUID); err != nil {
			t.Fatal(err)
		}
	}
	// The binaries must be executable by the other uids.
	if out, err := testutil.InitCommand(t, bins.Fedmem, v, "--gate-user", "64000", "--agent-group", "64000", "--reviewer", "root").CombinedOutput(); err != nil {
		t.Fatalf("fedmem init: %v\n%s", err, out)
	}
	// A policy that trusts the built-in profile the agent runs under,
	// committed by the gate user (changes to 00-global/ are the gate's).
	pol := "version: 1\nreviewers: [root]\nauto_promote:\n  profiles: [default]\n  types: [Fact]\n  max_per_session: 20\n"
	if err := os.WriteFile(filepath.Join(v, "00-global", "policy.yaml"), []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	// The notes the ordinary drafts cite: in force, written by a human, about
	// the drafts' subjects (the agent contract is not evidence, issue 24).
	srcNotes := map[string]string{
		"10-projects/fedmem/gate-user.md":     "---\ntype: Fact\ntitle: Gate user\n---\nThe gate runs as its own user.\n",
		"10-projects/fedmem/session-inbox.md": "---\ntype: Fact\ntitle: Session inbox\n---\nEach session writes drafts to its own inbox.\n",
	}
	for p, c := range srcNotes {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(v, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(v, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{filepath.Dir(filepath.Join(v, p)), filepath.Join(v, p)} {
			if err := os.Chown(f, gateUID, gateUID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if out, err := as(gateUID, gateUID, []uint32{}, "git", "-c", "safe.directory=*", "-C", v, "add", "--", "10-projects/fedmem").CombinedOutput(); err != nil {
		t.Fatalf("add source notes as the gate: %v\n%s", err, out)
	}
	if out, err := as(gateUID, gateUID, []uint32{}, "git", "-c", "safe.directory=*", "-C", v, "-c", "user.name=fedmem-gate", "-c", "user.email=gate@fedmem.invalid", "commit", "-q", "-m", "policy: trust the default profile for Facts", "00-global/policy.yaml", "10-projects/fedmem").CombinedOutput(); err != nil {
		t.Fatalf("commit policy as the gate: %v\n%s", err, out)
	}
	head0 := strings.TrimSpace(git(t, v, "rev-parse", "HEAD"))
	drafts := e2eDrafts(t)
	draftDir := filepath.Join(work, "drafts")
	if err := os.Mkdir(draftDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range drafts {
		if err := os.WriteFile(filepath.Join(draftDir, name+".md"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// A hand-made session: a host user in the agents' group makes a
	// session folder, a record claiming the trusted profile, and an
	// ordinary draft with a resolving source — no fedmem-run at all.
	hand := "20260101T000000Z-handmade"
	handScript := `set -e
cd "$1/90-inbox"
mkdir "$2"; chmod 2770 "$2"
printf -- '---\ntype: Fact\ntitle: Hand made session note\nsources: [00-global/AGENT.md]\n---\nNo launcher made this.\n' > "$2/hand.md"
mkdir -p .sessions 2>/dev/null || true
printf '{"session":"%s","uid":64001,"profile":"default","command":["claude"]}' "$2" > ".sessions/$2.json" 2>/dev/null || echo "record refused"
`
	if out, err := as(agentUID, agentUID, []uint32{gateUID}, "/bin/sh", "-c", handScript, "sh", v, hand).CombinedOutput(); err != nil {
		t.Fatalf("hand-made session: %v\n%s", err, out)
	} else {
		t.Logf("hand-made session: %s", out)
	}

	// The gate, as its own uid.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gateCmd := as(gateUID, gateUID, []uint32{}, bins.Fedmem, "gate", "run", "--vault", v, "--interval", "300ms")
	gateCmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + base}
	var gateLog bytes.Buffer
	gateCmd.Stdout, gateCmd.Stderr = &gateLog, &gateLog
	if err := gateCmd.Start(); err != nil {
		t.Fatal(err)
	}
	gateDone := make(chan error, 1)
	go func() { gateDone <- gateCmd.Wait() }()
	defer func() {
		gateCmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-gateDone:
		case <-time.After(20 * time.Second):
			gateCmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("gate log:\n%s", gateLog.String())
		}
	}()
	sock := filepath.Join(vault.GateStateDir(v), "review.sock")
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the gate never opened its review socket %s\n%s", sock, gateLog.String())
		}
	}

	// The agent: fedmem-run started by root (a root-written session record,
	// which the gate can prove), running the agent as its own uid in the
	// vault's agent group.
	agentCtx, agentCancel := context.WithTimeout(ctx, 3*time.Minute)
	defer agentCancel()
	agentArgs := append([]string{"--vault", v, "--workdir", work, "--agent-user", fmt.Sprintf("%d:%d", agentUID, gateUID), "--report", filepath.Join(base, "report.json")}, testutil.BackendArgs()...) // the matrix: FEDMEM_BACKEND
	agent := exec.CommandContext(agentCtx, bins.FedmemRun, append(agentArgs, "--", "/bin/sh", "-c", agentScript, "agent", draftDir)...)
	agent.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
	agent.Dir = work
	out, err := agent.CombinedOutput()
	if agentCtx.Err() != nil || err != nil {
		t.Fatalf("agent: %v\n%s", err, out)
	}
	testutil.RequireReportBackend(t, filepath.Join(base, "report.json"))
	receipts := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(l, "RECEIPT "); ok {
			name, body, _ := strings.Cut(rest, " ")
			receipts[name] = body
		}
	}
	for name := range drafts {
		r := receipts[name]
		var want string
		switch {
		case strings.HasPrefix(name, "good"):
			want = `"state":"promoted"`
		case name == "hunch":
			want = `"state":"pending"`
		case name == "bad":
			want = `"state":"rejected"`
		default: // hostile: held or rejected, never promoted
			if r == "" || strings.Contains(r, `"state":"promoted"`) {
				t.Errorf("hostile draft %s.md: receipt %q, want held or rejected", name, r)
			}
			continue
		}
		if !strings.Contains(r, want) {
			t.Errorf("receipt for %s.md seen in the sandbox: %q, want %s", name, r, want)
		}
	}
	if !strings.Contains(receipts["hostile-yaml-secret"], `"state":"rejected"`) || !strings.Contains(receipts["hostile-yaml-secret"], "secret") {
		t.Errorf("the secret behind a YAML escape is not rejected as a secret: %s", receipts["hostile-yaml-secret"])
	}
	if !strings.Contains(receipts["bad"], `"line":1`) {
		t.Errorf("the rejection receipt does not name the line: %s", receipts["bad"])
	}

	// The promoted note is committed by the gate, with provenance from the
	// enforcer: the agent's uid and proven origin, not anything the draft said.
	good := filepath.Join(v, "20-domains", "gate-user-account.md")
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatalf("promoted note: %v\n%s", err, git(t, v, "log", "--stat"))
	}
	for _, want := range []string{`uid: "64001"`, "status: stable", "origin: verified", "profile: default"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("promoted note lacks %q (the enforcer's provenance):\n%s", want, b)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(good, &st); err != nil || st.Uid != gateUID {
		t.Errorf("promoted note owned by uid %d, want the gate's %d", st.Uid, gateUID)
	}

	// The hand-made session is never auto-promoted: origin-unverified.
	handReceipt := filepath.Join(v, vault.InboxDir, hand, ".receipts", "hand.md.json")
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(handReceipt); err == nil || time.Now().After(end) {
			break
		}
	}
	if hr, err := os.ReadFile(handReceipt); err != nil {
		t.Errorf("hand-made session: no receipt: %v", err)
	} else if c := new(bytes.Buffer); json.Compact(c, hr) != nil || !strings.Contains(c.String(), `"state":"pending"`) || !strings.Contains(c.String(), "origin-unverified") || strings.Contains(c.String(), "not valid JSON") {
		t.Errorf("hand-made session's draft: want pending with origin-unverified, got:\n%s", hr)
	}

	// A human approves the held draft over the review socket.
	list, err := exec.Command(bins.Fedmem, "review", "--vault", v, "list", "--json").CombinedOutput()
	if err != nil {
		t.Fatalf("review list: %v\n%s", err, list)
	}
	id := pendingID(t, list, "hunch.md")
	// review show gives the reviewer the session as fedmem-run recorded it
	// (the workdir and the vault HEAD the agent could read), what the
	// origin word means, and the note an approval would commit.
	show, err := exec.Command(bins.Fedmem, "review", "--vault", v, "show", id).CombinedOutput()
	if err != nil {
		t.Fatalf("review show %s: %v\n%s", id, err, show)
	}
	for _, want := range []string{"workdir: " + work, "vault HEAD at start: ", "default): fedmem-run wrote the session record (proven", "approving writes: 20-domains/a-hunch-worth-a-look.md"} {
		if !strings.Contains(string(show), want) {
			t.Errorf("review show lacks %q:\n%s", want, show)
		}
	}
	if strings.Contains(string(show), "vault HEAD at start: unknown") {
		t.Errorf("review show has no vault HEAD for a fedmem-run session:\n%s", show)
	}
	if out, err := exec.Command(bins.Fedmem, "review", "--vault", v, "approve", id).CombinedOutput(); err != nil {
		t.Fatalf("review approve %s: %v\n%s", id, err, out)
	}
	approved, err := os.ReadFile(filepath.Join(v, "20-domains", "a-hunch-worth-a-look.md"))
	if err != nil || !strings.Contains(string(approved), "human:root") {
		t.Fatalf("approved note: %v\n%s", err, approved)
	}
	if msg := git(t, v, "log", "-1", "--format=%B"); !strings.Contains(msg, "Fedmem-Reviewer: root") {
		t.Errorf("approval commit does not name the reviewer:\n%s", msg)
	}

	// The repository: valid, clean, every commit since init by the gate.
	if out, err := testutil.Git(v, "fsck", "--strict"); err != nil {
		t.Fatalf("git fsck --strict: %v\n%s", err, out)
	}
	if s := git(t, v, "--no-optional-locks", "status", "--porcelain"); strings.TrimSpace(s) != "" {
		t.Errorf("git status not clean after promotions:\n%s", s)
	}
	for _, l := range strings.Split(strings.TrimSpace(git(t, v, "log", "--format=%an <%ae>|%cn", head0+"..HEAD")), "\n") {
		if l != "fedmem-gate <gate@fedmem.invalid>|fedmem-gate" {
			t.Errorf("a commit not by the gate identity: %q", l)
		}
	}
	if n := len(strings.Split(strings.TrimSpace(git(t, v, "log", "--format=%H", head0+"..HEAD")), "\n")); n != 3 {
		t.Errorf("%d commits since the policy, want 3 (two promotions, one approval)", n)
	}
	// No secret in any Git object, commit messages included.
	objs := exec.Command("git", "-c", "safe.directory=*", "-C", v, "cat-file", "--batch-all-objects", "--batch")
	all, err := objs.Output()
	if err != nil {
		t.Fatalf("git cat-file --batch-all-objects: %v", err)
	}
	if bytes.Contains(all, []byte(leakedKey)) || bytes.Contains(all, []byte(leakedKey[1:])) {
		t.Errorf("the leaked key is in a Git object")
	}

	// On the host, outside any sandbox, the agent's uid still cannot write
	// the vault's protected paths: only the gate does.
	for _, p := range []string{"00-global/AGENT.md", ".git/config", ".git/refs/heads/main", "20-domains/gate-user-account.md"} {
		f, err := openAs(t, agentUID, filepath.Join(v, p))
		if err == nil {
			t.Errorf("uid %d opened %s for writing on the host", agentUID, p)
			f.Close()
		} else if !errors.Is(err, os.ErrPermission) {
			t.Errorf("uid %d writing %s: %v, want permission denied", agentUID, p, err)
		}
	}

	// A reviewer who is not root (issue 19 item 5): root, a reviewer of a
	// root-made vault, adds uid 64002 by a gate commit (trailers name the
	// change and who asked); 64002 then reviews over the socket and checks
	// the audit log, which it cannot read itself, through the gate.
	const otherUID = 64002
	if out, err := exec.Command(bins.Fedmem, "policy", "reviewers", "--vault", v, "add", strconv.Itoa(otherUID)).CombinedOutput(); err != nil {
		t.Fatalf("policy reviewers add: %v\n%s", err, out)
	}
	if msg := git(t, v, "log", "-1", "--format=%an%n%B"); !strings.Contains(msg, "Fedmem-Policy: reviewers add 64002") || !strings.Contains(msg, "Fedmem-Reviewer: root") || !strings.HasPrefix(msg, "fedmem-gate") {
		t.Errorf("reviewer change is not a gate commit naming it:\n%s", msg)
	}
	other := func(args ...string) (string, string, error) {
		c := as(otherUID, otherUID, []uint32{}, bins.Fedmem, args...)
		c.Env = []string{"PATH=/usr/bin:/bin", "HOME=/"}
		var o, e bytes.Buffer
		c.Stdout, c.Stderr = &o, &e
		err := c.Run()
		return o.String(), e.String(), err
	}
	if o, e, err := other("review", "--vault", v, "list"); err != nil {
		t.Errorf("review list as reviewer uid %d: %v\n%s%s", otherUID, err, o, e)
	}
	if o, e, err := other("audit", "verify", "--vault", v); err != nil || !strings.Contains(o, "ok:") || !strings.Contains(e, "verified by the running gate") {
		t.Errorf("audit verify as reviewer uid %d: %v\n%s%s", otherUID, err, o, e)
	}
	// A resubmitted draft (issue 19 item 2): 64002 rejects the hand-made
	// draft; its writer rewrites it under the same name; show of the new
	// version names the rejected one, the reviewer and the reason, and
	// diffs the two.
	hlist, e, err := other("review", "--vault", v, "list", "--json")
	if err != nil {
		t.Fatalf("review list as %d: %v %s", otherUID, err, e)
	}
	handID := pendingID(t, []byte(hlist), "hand.md")
	if o, e, err := other("review", "--vault", v, "reject", handID, "--reason", "cite a source that says so"); err != nil {
		t.Fatalf("reject as %d: %v\n%s%s", otherUID, err, o, e)
	}
	rewrite := `printf -- '---\ntype: Fact\ntitle: Hand made session note\nsources: [00-global/AGENT.md]\n---\nNo launcher made this, and here is why.\n' > "$1/hand.md"`
	if out, err := as(agentUID, agentUID, []uint32{gateUID}, "/bin/sh", "-c", rewrite, "sh", filepath.Join(v, vault.InboxDir, hand)).CombinedOutput(); err != nil {
		t.Fatalf("rewrite the hand-made draft: %v\n%s", err, out)
	}
	var newID string
	for end := time.Now().Add(time.Minute); newID == ""; time.Sleep(100 * time.Millisecond) {
		if hr, err := os.ReadFile(handReceipt); err == nil && bytes.Contains(hr, []byte(`"pending"`)) && !bytes.Contains(hr, []byte(handID)) {
			var r struct {
				ID string `json:"id"`
			}
			json.Unmarshal(hr, &r)
			newID = r.ID
		}
		if newID == "" && time.Now().After(end) {
			t.Fatalf("the rewritten draft was never held\n%s", gateLog.String())
		}
	}
	if o, e, err := other("review", "--vault", v, "show", newID); err != nil {
		t.Errorf("show as %d: %v %s", otherUID, err, e)
	} else {
		for _, want := range []string{"resubmitted: replaces " + handID + " (rejected by ", ": cite a source that says so", "-No launcher made this.", "+No launcher made this, and here is why."} {
			if !strings.Contains(o, want) {
				t.Errorf("show of the resubmitted draft lacks %q:\n%s", want, o)
			}
		}
	}
	if _, e, err := other("policy", "reviewers", "--vault", v, "remove", strconv.Itoa(otherUID)); err != nil {
		t.Errorf("policy reviewers remove (itself): %v %s", err, e)
	}
	if _, e, err := other("review", "--vault", v, "list"); err == nil || !strings.Contains(e, "is not a reviewer") {
		t.Errorf("a removed reviewer still reviews: %v %s", err, e)
	}
}

func pendingID(t *testing.T, list []byte, draft string) string {
	t.Helper()
	var items []map[string]any
	dec := json.NewDecoder(bytes.NewReader(list))
	var raw any
	if err := dec.Decode(&raw); err != nil {
		t.Fatalf("review list --json: %v\n%s", err, list)
	}
	switch r := raw.(type) {
	case []any:
		for _, x := range r {
			if m, ok := x.(map[string]any); ok {
				items = append(items, m)
			}
		}
	case map[string]any:
		for _, k := range []string{"decisions", "pending", "items"} {
			if xs, ok := r[k].([]any); ok {
				for _, x := range xs {
					if m, ok := x.(map[string]any); ok {
						items = append(items, m)
					}
				}
			}
		}
	}
	for _, m := range items {
		if s, _ := m["draft"].(string); s == draft {
			if id, ok := m["id"].(string); ok {
				return id
			}
		}
	}
	t.Fatalf("%s not pending in:\n%s", draft, list)
	return ""
}

// openAs opens path for writing as uid, in a child process (the test runs
// as root, which file permissions do not stop).
func openAs(t *testing.T, uid int, path string) (*os.File, error) {
	t.Helper()
	cmd := as(uid, uid, []uint32{gateUID}, "/bin/sh", "-c", `exec 3>>"$1"`, "sh", path)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return os.Open(os.DevNull)
	}
	if strings.Contains(string(out), "Permission denied") {
		return nil, os.ErrPermission
	}
	return nil, errors.New(strings.TrimSpace(string(out)))
}
