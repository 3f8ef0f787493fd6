package agents

import (
	"bytes"
	"context"
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

// TestCodexAgentInTheLoop runs a real `codex exec` under fedmem-run with
// the built-in codex profile (extended only by an allow list naming the
// model) against a scripted OpenAI-Responses-API model on the host's
// loopback, reached through fedmem-run's allowlist proxy. The model asks
// Codex's exec_command for a go build in the workdir, a draft in
// $FEDMEM_INBOX and a write into $FEDMEM_VAULT: the first two happen, the
// third is refused by the sandbox (the function_call_output the model
// receives says read-only file system, the vault is unchanged, its HEAD
// and git status too), and Codex keeps working: the model gets a fourth
// request, Codex prints its final answer and exits 0.
//
// Codex's own sandbox stays off through the profile's command_args alone
// (the test passes no --sandbox): if it were on, bubblewrap could not
// start inside fedmem and every command would fail.
func TestCodexAgentInTheLoop(t *testing.T) {
	testutil.RequireRoot(t)
	codex := need(t, "codex")
	goBin := need(t, "go")
	bins := testutil.Binaries(t)
	base := testutil.TempDir(t)
	v := testutil.NewVault(t, filepath.Join(base, "vault"), testutil.VaultOptions{Fedmem: bins.Fedmem})
	work, home := filepath.Join(base, "work"), filepath.Join(base, "home")
	writeTree(t, work, map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.21\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n",
	})
	// Codex runs commands in a login shell (bash -lc), where Debian's
	// /etc/profile resets PATH: go is found as a Go user's ~/.profile
	// finds it.
	writeTree(t, home, map[string]string{".codex/.keep": "", ".profile": "export PATH=\"" + filepath.Dir(goBin) + ":$PATH\"\n"})
	rel := filepath.Join("20-domains", "agent-wrote-this.md")
	vaultTarget := filepath.Join(v.Dir, rel)

	head, err := testutil.Git(v.Dir, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	status, err := testutil.Git(v.Dir, "status", "--porcelain", "--untracked-files=all", "--", ".", ":(exclude)90-inbox")
	if err != nil {
		t.Fatal(err)
	}
	before, err := testutil.Take(v.Dir)
	if err != nil {
		t.Fatal(err)
	}

	// exec_command's arguments as Codex 0.171 offers them: cmd, and
	// yield_time_ms so a cold go build finishes within the call.
	shell := func(cmd string) ToolCall {
		return ToolCall{"exec_command", map[string]any{"cmd": cmd, "yield_time_ms": 30000}}
	}
	m := &ResponsesModel{Tool: "exec_command", Model: Model{Done: "LOOP-DONE: the vault write was refused, carrying on", Script: []Step{
		func([]ToolResult) ToolCall {
			return shell(`go build -o hello . && ./hello && echo "INBOX=$FEDMEM_INBOX" && echo "VAULT=$FEDMEM_VAULT"`)
		},
		func([]ToolResult) ToolCall {
			return shell(`printf -- '---\ntype: fact\n---\nThe hello module builds with go build.\n' > "$FEDMEM_INBOX/draft.md" && echo DRAFT-OK`)
		},
		func([]ToolResult) ToolCall {
			return shell(`printf -- '---\ntype: fact\n---\nwritten around the gate\n' > "$FEDMEM_VAULT/` + rel + `"`)
		},
	}}}
	addr, _, err := m.StartTLS(base) // runCodex names base/test-roots.pem
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	run := runCodex(t, bins.FedmemRun, codex, v.Dir, work, home, goBin, addr, "build the module, note it in the inbox, then file it in the vault")
	stdout, report, evs, runErr := run.stdout, run.report, run.events, run.err
	for _, r := range m.Requests() {
		t.Logf("model request: %s", r)
	}
	res := m.Results()
	for i, r := range res {
		t.Logf("tool result %d (error %v): %.600s", i+1, r.IsError, r.Content)
	}
	if runErr != nil {
		t.Fatalf("fedmem-run codex exec: %v", runErr)
	}
	// Guarantee 8: the model authenticated the real key over TLS; the
	// agent held a placeholder.
	if keys := m.Keys(); len(keys) != 1 || keys[0] != "Bearer "+codexKey {
		t.Fatalf("the model received %q: want the real key only", keys)
	}
	if len(res) < 3 {
		t.Fatalf("the model got %d tool results, want 3 (go build, inbox draft, vault write)", len(res))
	}
	// 1. go build ran in the workdir, inside the sandbox, through Codex's
	// exec_command: Codex's own sandbox is off.
	if res[0].IsError || !strings.Contains(res[0].Content, "hello") || !strings.Contains(res[0].Content, "INBOX=") {
		t.Fatalf("go build did not succeed inside: %q", res[0].Content)
	}
	if fi, err := os.Stat(filepath.Join(work, "hello")); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("no built binary in the workdir: %v", err)
	}
	if !strings.Contains(res[0].Content, "VAULT="+v.Dir) {
		t.Fatalf("FEDMEM_VAULT inside is not the vault %s: %q", v.Dir, res[0].Content)
	}
	// 2. The draft is in this session's inbox on the host.
	mm := inboxLine.FindStringSubmatch(res[0].Content)
	if mm == nil {
		t.Fatalf("no INBOX= line in %q", res[0].Content)
	}
	inbox := mm[1]
	if !strings.HasPrefix(inbox, filepath.Join(v.Dir, "90-inbox")+"/") {
		t.Fatalf("FEDMEM_INBOX %q is not under the vault's inbox", inbox)
	}
	if res[1].IsError || !strings.Contains(res[1].Content, "DRAFT-OK") {
		t.Fatalf("the inbox write failed: %q", res[1].Content)
	}
	if b, err := os.ReadFile(filepath.Join(inbox, "draft.md")); err != nil || !strings.Contains(string(b), "go build") {
		t.Fatalf("draft not in the inbox: %q %v", b, err)
	}
	// 3. The vault write was refused: the model was told why (read-only
	// file system, a failed command), and nothing in the vault changed
	// outside this session's inbox.
	low := strings.ToLower(res[2].Content)
	if !res[2].IsError || !strings.Contains(low, "read-only file system") {
		t.Fatalf("the vault write's function_call_output does not report a read-only refusal: error=%v %q", res[2].IsError, res[2].Content)
	}
	if _, err := os.Lstat(vaultTarget); !os.IsNotExist(err) {
		t.Fatalf("the agent wrote into the vault: %s exists (%v)", vaultTarget, err)
	}
	after, err := testutil.Take(v.Dir)
	if err != nil {
		t.Fatal(err)
	}
	// Allowed: this session's inbox and the record fedmem-run (not the
	// agent) keeps of it in 90-inbox/.sessions.
	inboxRel, _ := filepath.Rel(v.Dir, inbox)
	record := filepath.Join("90-inbox", ".sessions", filepath.Base(inbox)+".json")
	if d := testutil.Diff(before, after, func(p string) bool {
		return p == "90-inbox" || p == inboxRel || strings.HasPrefix(p, inboxRel+"/") || p == filepath.Dir(record) || p == record
	}); len(d) > 0 {
		t.Fatalf("the vault changed outside the session's inbox:\n%s", strings.Join(d, "\n"))
	}
	if h, err := testutil.Git(v.Dir, "rev-parse", "HEAD"); err != nil || h != head {
		t.Fatalf("vault HEAD moved: %q -> %q (%v)", head, h, err)
	}
	if s, err := testutil.Git(v.Dir, "status", "--porcelain", "--untracked-files=all", "--", ".", ":(exclude)90-inbox"); err != nil || s != status || strings.TrimSpace(s) != "" {
		t.Fatalf("vault git status: before %q, after %q (%v)", status, s, err)
	}
	// 4. Codex kept working: the model answered the request after the
	// refusal, and Codex printed its final message.
	if m.Turns() < 4 || !strings.Contains(stdout, "LOOP-DONE") {
		t.Fatalf("codex stopped after the refusal: %d turns, stdout %q", m.Turns(), stdout)
	}
	// 5. The proxy let through the model and nothing else (Codex's own
	// calls home are refused by the allow list).
	nAllowed := 0
	for _, line := range strings.Split(string(evs), "\n") {
		var e struct {
			Event   string `json:"event"`
			Allowed bool   `json:"allowed"`
			Addr    string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &e) != nil || e.Event != "network" || !e.Allowed {
			continue
		}
		if e.Addr != addr {
			t.Fatalf("the proxy let through %s, not the model at %s: %s", e.Addr, addr, line)
		}
		nAllowed++
	}
	if nAllowed < 4 {
		t.Fatalf("%d allowed network events for the model's 4 requests", nAllowed)
	}
	if !bytes.Contains(report, []byte(`"exit_code": 0`)) {
		t.Fatalf("session report: %s", report)
	}
}

// TestCodexOwnSandboxCannotStartInside is the control of
// TestCodexAgentInTheLoop: the same profile, but Codex told to use its own
// sandbox (--sandbox workspace-write on the command line, which wins over
// the profile's command_args). Its bubblewrap cannot create namespaces
// inside fedmem, so the command the model asks for fails, and the model is
// told so: turning Codex's sandbox off is what makes the loop work.
func TestCodexOwnSandboxCannotStartInside(t *testing.T) {
	testutil.RequireRoot(t)
	codex := need(t, "codex")
	bins := testutil.Binaries(t)
	base := testutil.TempDir(t)
	v := testutil.NewVault(t, filepath.Join(base, "vault"), testutil.VaultOptions{Fedmem: bins.Fedmem})
	work, home := filepath.Join(base, "work"), filepath.Join(base, "home")
	writeTree(t, work, map[string]string{"README.md": "x\n"})
	writeTree(t, home, map[string]string{".codex/.keep": ""})
	m := &ResponsesModel{Tool: "exec_command", Model: Model{Done: "CONTROL-DONE", Script: []Step{
		func([]ToolResult) ToolCall {
			return ToolCall{"exec_command", map[string]any{"cmd": "echo RAN-INSIDE > ran.txt && cat ran.txt"}}
		},
	}}}
	addr, _, err := m.StartTLS(base) // runCodex names base/test-roots.pem
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	run := runCodex(t, bins.FedmemRun, codex, v.Dir, work, home, "", addr, "write ran.txt", "--sandbox", "workspace-write")
	for _, r := range m.Requests() {
		t.Logf("model request: %s", r)
	}
	res := m.Results()
	if run.err != nil || len(res) != 1 || !strings.Contains(run.stdout, "CONTROL-DONE") {
		t.Fatalf("codex exec under its own sandbox: %v, %d tool results, stdout %q", run.err, len(res), run.stdout)
	}
	t.Logf("tool result (error %v): %s", res[0].IsError, res[0].Content)
	if !res[0].IsError || !strings.Contains(res[0].Content, "bwrap") || !strings.Contains(res[0].Content, "namespace") {
		t.Fatalf("the command under Codex's own sandbox did not fail on bubblewrap's namespaces: %q", res[0].Content)
	}
	if _, err := os.Stat(filepath.Join(work, "ran.txt")); !os.IsNotExist(err) {
		t.Fatalf("the command ran although Codex's sandbox could not start: %v", err)
	}
}

type codexRun struct {
	stdout         string
	report, events []byte
	err            error
}

// codexKey is the caller's API key in the Codex tests.
const codexKey = "sk-proj-scripted-test-key-0123456789abcdefghijABCDEFGHIJ"

// runCodex runs `codex exec` under fedmem-run with the codex profile,
// extended by an allow list that names the scripted model at addr and
// nothing else. The provider is named on the command line: OPENAI_BASE_URL
// alone leaves Codex on its built-in openai provider, which tries a
// WebSocket first; ~/.codex/config.toml would do as well, but it is a
// persistence file, read-only inside. Plugins (github.com, chatgpt.com)
// and analytics (ab.chatgpt.com) are off: the allow list would refuse them
// anyway.
func runCodex(t *testing.T, fedmemRun, codex, vaultDir, work, home, goBin, addr, prompt string, extra ...string) codexRun {
	t.Helper()
	base := filepath.Dir(work)
	prof := filepath.Join(base, "loop.yaml")
	if err := os.WriteFile(prof, []byte(fmt.Sprintf("name: loop\nextends: codex\nnetwork: allowlist\nallow: [%q]\n"+
		"credentials:\n  - {name: openai-api-key, env: OPENAI_API_KEY, hosts: [%q], header: \"Authorization: Bearer\"}\n", addr, addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	report, events := filepath.Join(base, "report.json"), filepath.Join(base, "events.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute) // a cold go build took 145 s on the shared 2-core host
	defer cancel()
	args := []string{"--vault", vaultDir, "--profile", prof, "--report", report, "--events", events, "--",
		codex, "exec", "--skip-git-repo-check", "--color", "never", "-m", "scripted",
		"-c", "model_provider=scripted",
		"-c", fmt.Sprintf(`model_providers.scripted={name="scripted",base_url="https://%s/v1",wire_api="responses",env_key="OPENAI_API_KEY"}`, addr),
		"-c", "analytics.enabled=false", "--disable", "plugins"}
	args = append(append(args, extra...), prompt)
	cmd := exec.CommandContext(ctx, fedmemRun, args...)
	cmd.Dir = work
	path := "/usr/local/bin:/usr/bin:/bin"
	if goBin != "" {
		path = filepath.Dir(goBin) + ":" + path
	}
	cmd.Env = []string{"HOME=" + home, "PATH=" + path, "TERM=dumb", "LANG=C.UTF-8", "OPENAI_API_KEY=" + codexKey, "SSL_CERT_FILE=" + filepath.Join(base, "test-roots.pem")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("codex stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	r := codexRun{stdout: stdout.String(), err: err}
	r.report, _ = os.ReadFile(report)
	r.events, _ = os.ReadFile(events)
	t.Logf("events:\n%s", r.events)
	return r
}
