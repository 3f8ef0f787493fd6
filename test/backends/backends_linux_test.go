package backends

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/fedmem/fedmem/test/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }

type setup struct {
	bins    testutil.Bins
	vault   *testutil.Vault
	workdir string
	home    string
	args    []string // fedmem-run's backend flags
}

func prepare(t *testing.T, backend string) *setup {
	t.Helper()
	testutil.RequireRoot(t)
	bins := testutil.Binaries(t)
	var sock string
	if backend == "containerd" {
		sock = testutil.Containerd(t)
	}
	testutil.RequireBackendTools(t, backend, bins.FedmemRun, sock)
	base := testutil.TempDir(t)
	s := &setup{bins: bins, workdir: filepath.Join(base, "work"), home: filepath.Join(base, "home")}
	s.vault = testutil.NewVault(t, filepath.Join(base, "vault"), testutil.VaultOptions{Fedmem: bins.Fedmem})
	// Everything of the vault writable by everyone: only the sandbox's
	// read-only mounts stand between the agent and it, so EROFS is the
	// one possible refusal.
	err := filepath.Walk(s.vault.Dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o666)
		if fi.IsDir() {
			mode = 0o777
		}
		return os.Chmod(p, mode)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{s.workdir, s.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if backend != "namespace" {
		s.args = []string{"--backend", backend}
	}
	if sock != "" {
		s.args = append(s.args, "--containerd-address", sock)
	}
	return s
}

func (s *setup) command(ctx context.Context, argv ...string) *exec.Cmd {
	args := append([]string{"--vault", s.vault.Dir, "--workdir", s.workdir, "--network", "none"}, s.args...)
	cmd := exec.CommandContext(ctx, s.bins.FedmemRun, append(append(args, "--"), argv...)...)
	cmd.Dir = s.workdir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + s.home, "LANG=C"}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

var backends = []string{"namespace", "runc", "containerd"}

// probe is what the agent tries; each line prints NAME=OUTCOME, the
// outcome of a write being the shell's error text (errno) or "ok".
const probe = `
w() { name=$1; shift; if out=$( ( "$@" ) 2>&1 ); then echo "$name=ok"; else echo "$name=${out##*: }"; fi; }
w vault-agent-md sh -c 'echo pwned >> "$FEDMEM_VAULT/00-global/AGENT.md"'
w vault-new sh -c 'echo x > "$FEDMEM_VAULT/10-projects/new.md"'
w vault-git sh -c 'echo x > "$FEDMEM_VAULT/.git/HEAD"'
w inbox sh -c 'echo "type: note" > "$FEDMEM_INBOX/draft.md"'
w etc sh -c 'echo x > /etc/fedmem-backend-probe'
w usr sh -c 'echo x > /usr/fedmem-backend-probe'
w tmp sh -c 'echo x > /tmp/private'
echo uid=$(id -u)
echo caps=$(grep CapEff /proc/self/status | tr -d '\t' | cut -d: -f2)
echo nnp=$(grep NoNewPrivs /proc/self/status | tr -d '\t' | cut -d: -f2)
echo seccomp=$(grep '^Seccomp:' /proc/self/status | tr -d '\t' | cut -d: -f2)
echo pid1=$(cat /proc/1/comm 2>&1 | head -c 40)
exit 7
`

// TestBackendsSameGuarantees: one real agent under each backend, the same
// expectations line by line.
func TestBackendsSameGuarantees(t *testing.T) {
	want := map[string]string{
		"vault-agent-md": "Read-only file system",
		"vault-new":      "Read-only file system",
		"vault-git":      "Read-only file system",
		"inbox":          "ok",
		"etc":            "Read-only file system",
		"usr":            "Read-only file system",
		"tmp":            "ok",
		"caps":           "0000000000000000",
		"nnp":            "1",
		"seccomp":        "2",
	}
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			s := prepare(t, b)
			agentMD, err := os.ReadFile(filepath.Join(s.vault.Dir, "00-global/AGENT.md"))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := s.command(ctx, "/bin/sh", "-c", probe)
			var so, se bytes.Buffer
			cmd.Stdout, cmd.Stderr = &so, &se
			code := exitCode(cmd.Run())
			if code != 7 {
				t.Fatalf("exit %d, want the agent's 7\nstdout:\n%s\nstderr:\n%s", code, so.String(), se.String())
			}
			got := map[string]string{}
			sc := bufio.NewScanner(&so)
			for sc.Scan() {
				if k, v, ok := strings.Cut(sc.Text(), "="); ok {
					got[k] = strings.TrimSpace(v)
				}
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: %q, want %q", k, got[k], v)
				}
			}
			if got["uid"] == "" || got["uid"] == "0" {
				t.Errorf("agent uid %q: a root caller's agent must not be uid 0", got["uid"])
			}
			// fedmem's pid 1 is not dumpable and runs as another uid:
			// hidepid=invisible hides it.
			if !strings.Contains(got["pid1"], "No such file") {
				t.Errorf("/proc/1/comm readable by the agent: %q", got["pid1"])
			}
			after, _ := os.ReadFile(filepath.Join(s.vault.Dir, "00-global/AGENT.md"))
			if !bytes.Equal(after, agentMD) {
				t.Errorf("AGENT.md changed")
			}
			for _, p := range []string{"/etc/fedmem-backend-probe", "/usr/fedmem-backend-probe", filepath.Join(s.vault.Dir, "10-projects/new.md")} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s exists on the host", p)
					os.Remove(p)
				}
			}
			drafts, _ := filepath.Glob(filepath.Join(s.vault.Dir, "90-inbox/2*/draft.md"))
			if len(drafts) != 1 {
				t.Errorf("inbox drafts on the host: %v, want one", drafts)
			}
		})
	}
}

// TestBackendsExitCodes: signals and fedmem's own codes pass through every
// backend alike.
func TestBackendsExitCodes(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			s := prepare(t, b)
			for _, c := range []struct {
				argv []string
				want int
			}{
				{[]string{"/bin/sh", "-c", "kill -TERM $$"}, 128 + 15},
				{[]string{"/bin/sh", "-c", "exit 0"}, 0},
				{[]string{"/nonexistent/agent"}, 127},
			} {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				out, err := s.command(ctx, c.argv...).CombinedOutput()
				cancel()
				if got := exitCode(err); got != c.want {
					t.Errorf("%v: exit %d, want %d\n%s", c.argv, got, c.want, out)
				}
			}
		})
	}
}

// TestBackendsTTY: the agent gets a private terminal (its own devpts),
// relayed to the caller's.
func TestBackendsTTY(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			s := prepare(t, b)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := s.command(ctx, "/bin/sh", "-c", `test -t 0 && test -t 1 && echo "TTY=$(tty)"; exit 5`)
			master, err := pty.Start(cmd)
			if err != nil {
				t.Fatal(err)
			}
			defer master.Close()
			var out bytes.Buffer
			done := make(chan struct{})
			go func() { _, _ = out.ReadFrom(master); close(done) }()
			code := exitCode(cmd.Wait())
			<-done
			if code != 5 {
				t.Errorf("exit %d, want 5\n%s", code, out.String())
			}
			if !strings.Contains(out.String(), "TTY=/dev/pts/0") {
				t.Errorf("agent's terminal: %q, want TTY=/dev/pts/0 (a private devpts)", out.String())
			}
		})
	}
}
