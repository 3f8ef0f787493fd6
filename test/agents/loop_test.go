package agents

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

var inboxLine = regexp.MustCompile(`INBOX=(/\S+)`)

// TestClaudeAgentInTheLoop runs real `claude -p` turns under fedmem-run
// against a scripted model on the host's loopback, reached through
// fedmem-run's allowlist proxy (the profile names the address). The model
// asks for a go build in the workdir, a draft in $FEDMEM_INBOX and a write
// into the vault: the first two happen, the third is refused by the
// sandbox (the file is absent and the tool result the model receives says
// read-only), and the agent keeps working (the model gets the next turn).
func TestClaudeAgentInTheLoop(t *testing.T) {
	testutil.RequireRoot(t)
	claude := need(t, "claude")
	goBin := need(t, "go")
	bins := testutil.Binaries(t)
	base := testutil.TempDir(t)
	v := testutil.NewVault(t, filepath.Join(base, "vault"), testutil.VaultOptions{Fedmem: bins.Fedmem})
	work, home := filepath.Join(base, "work"), filepath.Join(base, "home")
	writeTree(t, work, map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.21\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n",
	})
	writeTree(t, home, map[string]string{".claude/.keep": ""})
	vaultTarget := filepath.Join(v.Dir, "20-domains", "agent-wrote-this.md")

	m := &Model{Done: "LOOP-DONE: the vault write was refused, carrying on", Script: []Step{
		func([]ToolResult) ToolCall {
			return ToolCall{"Bash", map[string]any{"command": "go build -o hello . && ./hello && echo INBOX=$FEDMEM_INBOX", "description": "build"}}
		},
		func(prev []ToolResult) ToolCall {
			inbox := "/nonexistent-inbox"
			if len(prev) > 0 {
				if mm := inboxLine.FindStringSubmatch(prev[0].Content); mm != nil {
					inbox = mm[1]
				}
			}
			return ToolCall{"Write", map[string]any{"file_path": filepath.Join(inbox, "draft.md"), "content": "---\ntype: fact\n---\nThe hello module builds with go build.\n"}}
		},
		func([]ToolResult) ToolCall {
			return ToolCall{"Write", map[string]any{"file_path": vaultTarget, "content": "---\ntype: fact\n---\nwritten around the gate\n"}}
		},
	}}
	// The model over TLS (a test CA stands in for the public roots), and
	// the API key a credential for its address (guarantee 8): the agent
	// holds a placeholder, fedmem-run's proxy puts the real key on the
	// wire to the model only.
	addr, roots, err := m.StartTLS(base)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prof := filepath.Join(base, "loop.yaml")
	if err := os.WriteFile(prof, []byte(fmt.Sprintf("name: loop\nextends: claude\nnetwork: allowlist\nallow: [%q]\n"+
		"credentials:\n  - {name: anthropic-api-key, env: ANTHROPIC_API_KEY, hosts: [%q], header: x-api-key}\n", addr, addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(base, "report.json")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.FedmemRun, "--vault", v.Dir, "--profile", prof, "--report", report, "--",
		claude, "-p", "build the module, note it in the inbox, then file it in the vault",
		"--model", "claude-sonnet-4-5", "--dangerously-skip-permissions", "--output-format", "text")
	cmd.Dir = work
	cmd.Env = []string{
		"HOME=" + home, "PATH=" + filepath.Dir(goBin) + ":/usr/local/bin:/usr/bin:/bin", "TERM=dumb", "LANG=C.UTF-8",
		"ANTHROPIC_BASE_URL=https://" + addr, "ANTHROPIC_API_KEY=" + loopKey, "SSL_CERT_FILE=" + roots,
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1",
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	t.Logf("claude stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	res := m.Results()
	for i, r := range res {
		t.Logf("tool result %d (error %v): %.400s", i+1, r.IsError, r.Content)
	}
	if runErr != nil {
		t.Fatalf("fedmem-run claude -p: %v", runErr)
	}
	if len(res) < 3 {
		t.Fatalf("the model got %d tool results, want 3 (go build, inbox draft, vault write)", len(res))
	}
	// 1. go build ran in the workdir, inside the sandbox.
	if res[0].IsError || !strings.Contains(res[0].Content, "hello") || !strings.Contains(res[0].Content, "INBOX=") {
		t.Fatalf("go build did not succeed inside: %q", res[0].Content)
	}
	if fi, err := os.Stat(filepath.Join(work, "hello")); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("no built binary in the workdir: %v", err)
	}
	// 2. The draft is in this session's inbox on the host.
	inbox := inboxLine.FindStringSubmatch(res[0].Content)[1]
	if !strings.HasPrefix(inbox, filepath.Join(v.Dir, "90-inbox")+"/") {
		t.Fatalf("FEDMEM_INBOX %q is not under the vault's inbox", inbox)
	}
	if b, err := os.ReadFile(filepath.Join(inbox, "draft.md")); err != nil || !strings.Contains(string(b), "go build") {
		t.Fatalf("draft not in the inbox: %q %v (tool result: %q)", b, err, res[1].Content)
	}
	if res[1].IsError {
		t.Fatalf("the inbox write was reported as an error: %q", res[1].Content)
	}
	// 3. The vault write was refused: absent on the host, and the agent was
	// told why.
	if _, err := os.Lstat(vaultTarget); !os.IsNotExist(err) {
		t.Fatalf("the agent wrote into the vault: %s exists (%v)", vaultTarget, err)
	}
	low := strings.ToLower(res[2].Content)
	if !res[2].IsError || !(strings.Contains(low, "read-only") || strings.Contains(low, "erofs")) {
		t.Fatalf("the vault write's tool result does not report a read-only refusal: error=%v %q", res[2].IsError, res[2].Content)
	}
	// 4. The agent kept working: the model answered the turn after the
	// refusal, and Claude printed its final text.
	if m.Turns() < 4 || !strings.Contains(stdout.String(), "LOOP-DONE") {
		t.Fatalf("the agent stopped after the refusal: %d turns, stdout %q", m.Turns(), stdout.String())
	}
	if b, err := os.ReadFile(report); err != nil || !bytes.Contains(b, []byte(`"exit_code": 0`)) {
		t.Fatalf("session report: %s %v", b, err)
	}
	// 5. The model authenticated the real key, and nothing else.
	if keys := m.Keys(); len(keys) != 1 || keys[0] != loopKey {
		t.Fatalf("the model received the keys %q: want the real one only (the agent holds a placeholder)", keys)
	}
}

// loopKey is the caller's API key in the loop test.
const loopKey = "sk-ant-api03-scripted-test-key-0123456789abcdefghijABCDEFGHIJ"

func need(t *testing.T, tool string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("FEDMEM_REQUIRE_CLIENTS") == "1" {
			t.Fatalf("%s not installed and FEDMEM_REQUIRE_CLIENTS=1", tool)
		}
		t.Skipf("%s not installed", tool)
	}
	return p
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}
