package clients

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }

func need(t *testing.T, tool string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("FEDMEM_REQUIRE_CLIENTS") == "1" {
			t.Fatalf("%s not installed and FEDMEM_REQUIRE_CLIENTS=1 (npm install -g @anthropic-ai/claude-code @openai/codex; apt-get install tmux)", tool)
		}
		t.Skipf("%s not installed", tool)
	}
	return p
}

// tmux runs tmux against the test's private server (-L sock): the default
// server is shared by every run on the machine, and its session names
// resolve by prefix, so another run's kill-session could end this one.
func tmux(sock string, args ...string) *exec.Cmd {
	return exec.Command("tmux", append([]string{"-L", sock}, args...)...)
}

// screen polls a tmux pane until want appears or the deadline passes.
// want may name alternatives separated by " | ": a client whose first
// screen is one of two (Codex offline: see TestCodexUnderCodexProfile).
func screen(t *testing.T, sock, session, want string, within time.Duration) string {
	t.Helper()
	var last string
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		out, err := tmux(sock, "capture-pane", "-t", session, "-p").Output()
		if err != nil {
			t.Fatalf("tmux capture-pane: %v", err)
		}
		last = string(out)
		for _, w := range strings.Split(want, " | ") {
			if strings.Contains(last, w) {
				return last
			}
		}
	}
	t.Fatalf("%q never appeared on the screen; last screen:\n%s", want, last)
	return ""
}

// runClient starts client under fedmem-run in tmux, waits for want on its
// first screen and for saved(home) to hold (the client has written its
// state through the profile's writable home paths), ends it with Ctrl-C
// unless it ended by itself, and checks saved again after it is gone.
func runClient(t *testing.T, client, want string, saved func(home string) error) {
	testutil.RequireRoot(t)
	need(t, "tmux")
	need(t, client)
	bins := testutil.Binaries(t)
	base := testutil.TempDir(t)
	v := testutil.NewVault(t, filepath.Join(base, "vault"), testutil.VaultOptions{Fedmem: bins.Fedmem})
	work, home := filepath.Join(base, "work"), filepath.Join(base, "home")
	for _, d := range []string{work, home, filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("PRIVATE-KEY-MATERIAL"), 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := testutil.Take(v.Dir)
	if err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(base, "report.json")
	session := "fedmem-client-" + client
	sock := fmt.Sprintf("fedmem-clients-%d-%d", os.Getpid(), time.Now().UnixNano())
	// The pane's shell ignores SIGINT from the start (a Ctrl-C sent just as
	// the client ends by itself must not end the pane before FEDMEM-EXIT is
	// printed); the client's subshell puts it back to the default first.
	shell := "trap '' INT; cd " + work + " && (trap - INT; HOME=" + home + " exec " + bins.FedmemRun + " " + strings.Join(testutil.BackendArgs(), " ") + " --vault " + v.Dir + " --report " + report +
		" -- " + client + "); echo FEDMEM-EXIT=$?; sleep 600"
	if out, err := tmux(sock, "new-session", "-d", "-s", session, "-x", "120", "-y", "40", shell).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { tmux(sock, "kill-server").Run() })
	scr := screen(t, sock, session, want, 60*time.Second)
	t.Logf("%s drew:\n%s", client, scr)
	// Let the client finish its start-up — until it has saved its state or
	// ended by itself (without network both may) — then end it from its
	// terminal: Ctrl-C reaches it through the pty.
	for end := time.Now().Add(45 * time.Second); time.Now().Before(end) && !strings.Contains(scr, "FEDMEM-EXIT=") && saved(home) != nil; time.Sleep(time.Second) {
		out, _ := tmux(sock, "capture-pane", "-t", session, "-p").Output()
		scr = string(out)
	}
	for i := 0; i < 4 && !strings.Contains(scr, "FEDMEM-EXIT="); i++ {
		tmux(sock, "send-keys", "-t", session, "C-c").Run()
		time.Sleep(time.Second)
		out, _ := tmux(sock, "capture-pane", "-t", session, "-p").Output()
		scr = string(out)
	}
	screen(t, sock, session, "FEDMEM-EXIT=", 20*time.Second)
	if err := saved(home); err != nil {
		t.Fatalf("%s: %v", client, err)
	}
	after, err := testutil.Take(v.Dir)
	if err != nil {
		t.Fatal(err)
	}
	// fedmem-run itself creates the session directory in 90-inbox/ (its
	// mtime and link count change) and the session record.
	inInbox := func(rel string) bool { return rel == "90-inbox" || strings.HasPrefix(rel, "90-inbox/") }
	if d := testutil.Diff(before, after, inInbox); len(d) > 0 {
		t.Fatalf("%s changed the vault outside the inbox:\n%s", client, strings.Join(d, "\n"))
	}
	if b, err := os.ReadFile(filepath.Join(home, ".ssh", "id_ed25519")); err != nil || string(b) != "PRIVATE-KEY-MATERIAL" {
		t.Fatalf("the secret changed on the host: %q %v", b, err)
	}
	testutil.RequireReportBackend(t, report)
}

func TestClaudeCodeUnderClaudeProfile(t *testing.T) {
	runClient(t, "claude", "Claude Code", func(home string) error {
		// The profile points CLAUDE_CONFIG_DIR at the writable ~/.claude,
		// where Claude Code saves its state (tmp file + rename).
		b, err := os.ReadFile(filepath.Join(home, ".claude", ".claude.json"))
		if err != nil || !strings.Contains(string(b), "firstStartTime") {
			return fmt.Errorf("claude did not save its state in ~/.claude/.claude.json: %q %v", b, err)
		}
		return nil
	})
}

// TestCodexUnderCodexProfile: Codex draws its first screen under the
// codex profile and keeps its state through the writable ~/.codex. With
// no network and no login, Codex 0.171 draws either its prompt ("Ask
// Codex to do anything") or its sign-in choice ("Sign in with ChatGPT"):
// about one start in four the second, on the same binaries and home (seen
// by hand, four starts in a row; the .ci/run runs at 176b950 and 8e3965e
// failed on it). Either is Codex running in the sandbox.
func TestCodexUnderCodexProfile(t *testing.T) {
	runClient(t, "codex", "Ask Codex to do anything | Sign in with ChatGPT", func(home string) error {
		if fi, err := os.Stat(filepath.Join(home, ".codex")); err != nil || !fi.IsDir() {
			return fmt.Errorf("codex did not create ~/.codex through the writable bind: %v", err)
		}
		return nil
	})
}
