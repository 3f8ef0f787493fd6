package escape

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
)

// Red-team findings against issue 8 (guarantees 5 and 6). Each test asserts
// the secure outcome and fails while the breach exists.

// writeProbe tries to overwrite each argv path with a script and prints
// "PATH OK" or "PATH ERRNO" per path.
const writeProbe = `
import errno, os, sys
for p in sys.argv[1:]:
    try:
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write("#!/bin/sh\ntouch /var/tmp/PWNED-by-agent\n")
        print(p, "OK")
    except OSError as e:
        print(p, errno.errorcode.get(e.errno, str(e.errno)))
`

func probeLines(out []byte) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if i := strings.LastIndexByte(l, ' '); i > 0 {
			m[l[:i]] = l[i+1:]
		}
	}
	return m
}

// TestRedteamPlantClaudeBinaryPluginHooksStatusLine: under the claude profile the agent writes
// files the user's next unsandboxed `claude` executes: the native install's
// binary (~/.local/share/claude/versions/V, which ~/.local/bin/claude links
// to: home.writable .local/share/claude/), an enabled plugin's hooks
// (~/.claude/plugins/…/hooks/hooks.json) and the status-line script that
// settings.json names. Each must be read-only inside; the host files must
// stay unchanged.
func TestRedteamPlantClaudeBinaryPluginHooksStatusLine(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	bin := filepath.Join(e.home, ".local/share/claude/versions/2.0.0")
	hooks := filepath.Join(e.home, ".claude/plugins/cache/mk/plug/1.0/hooks/hooks.json")
	status := filepath.Join(e.home, ".claude/statusline.sh")
	for p, c := range map[string]string{bin: "#!/bin/sh\necho real claude\n", hooks: "{\"hooks\":{}}\n", status: "#!/bin/sh\necho ok\n",
		filepath.Join(e.home, ".claude/settings.json"): `{"enabledPlugins":{"plug@mk":true},"statusLine":{"type":"command","command":"~/.claude/statusline.sh"}}` + "\n"} {
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(c), 0o755))
	}
	must(t, os.MkdirAll(filepath.Join(e.home, ".local/bin"), 0o755))
	must(t, os.Symlink("../share/claude/versions/2.0.0", filepath.Join(e.home, ".local/bin/claude")))
	watched := []string{bin, hooks, status}
	before := map[string]string{}
	for _, p := range watched {
		before[p] = fingerprint(t, p)
	}
	r := e.run(t, []string{"--profile", "claude"}, append([]string{"python3", "-c", writeProbe}, watched...)...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	got := probeLines(r.stdout)
	for _, p := range watched {
		if !writeDenied[got[p]] {
			t.Errorf("BREACH %s: agent write %q, want one of %v (runs on the user's next claude outside)", p, got[p], keys(writeDenied))
		}
		if now := fingerprint(t, p); now != before[p] {
			t.Errorf("BREACH %s changed on the host", p)
		}
	}
}

// TestRedteamReadHomeCredentials: a root caller's 0700 home is attached
// idmapped (caller->agent), so under the default and ci profiles (network
// public / allowlist with api hosts) the agent reads every 0600 file the
// mask list does not name: Claude Code's and Codex's OAuth tokens, cargo's
// registry token, ~/.claude.json (MCP servers' env), browser cookies,
// Terraform tokens, shell history. None may be readable.
func TestRedteamReadHomeCredentials(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	must(t, os.Chmod(e.home, 0o700))
	creds := map[string]string{
		".claude/.credentials.json":               "CANARY-CLAUDE-OAUTH-1a",
		".codex/auth.json":                        "CANARY-CODEX-AUTH-2b",
		".cargo/credentials.toml":                 "CANARY-CARGO-TOKEN-3c",
		".claude.json":                            "CANARY-MCP-ENV-4d",
		".config/google-chrome/Default/Cookies":   "CANARY-COOKIE-5e",
		".terraform.d/credentials.tfrc.json":      "CANARY-TF-TOKEN-6f",
		".bash_history":                           "CANARY-HISTORY-7a",
		".local/share/fedmem/claude/.claude.json": "CANARY-OTHER-PROFILE-STORE-8b",
	}
	var args []string
	for rel, c := range creds {
		p := filepath.Join(e.home, rel)
		must(t, os.MkdirAll(filepath.Dir(p), 0o700))
		must(t, os.WriteFile(p, []byte(c+"\n"), 0o600))
		args = append(args, p)
	}
	for _, prof := range []string{"default", "ci"} {
		r := e.run(t, []string{"--profile", prof}, append([]string{"sh", "-c", `for f; do cat "$f"; done 2>/dev/null; exit 0`, "sh"}, args...)...)
		for rel, c := range creds {
			if strings.Contains(string(r.stdout), c) {
				t.Errorf("BREACH [%s] the agent read ~/%s (%s)", prof, rel, c)
			}
		}
	}
}

// TestRedteamNestedRepoFsmonitor: the agent creates a repository in a
// subdirectory of the workdir with core.fsmonitor set; files are the
// caller's on disk (idmapped), so the user's next `git status` there (or
// an editor's repository scan of the workspace) runs the agent's command
// on the host. docs/threat-model.md lists it as not covered.
func TestRedteamNestedRepoFsmonitor(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	canary := filepath.Join(e.base, "NESTED-PWNED")
	r := e.run(t, nil, "sh", "-c", `git init -q sub && git -C sub config core.fsmonitor "touch `+canary+`; false"; echo rc=$?`)
	t.Logf("agent: %s%s", r.stdout, r.stderr)
	testutil.Git(filepath.Join(e.workdir, "sub"), "status")
	if _, err := os.Stat(canary); err == nil {
		t.Errorf("BREACH: the host's git status in workdir/sub ran the agent's core.fsmonitor")
	}
	// Why: fedmem-run moved the repository made during the session aside
	// after it (sandbox/guard/nestedrepo_linux.go) and said so in an event.
	q := filepath.Join(e.workdir, "sub", ".git.fedmem-quarantined-"+r.session)
	if _, err := os.Lstat(q); err != nil {
		t.Errorf("sub/.git was not quarantined as %s: %v", q, err)
	}
	if _, err := os.Lstat(filepath.Join(e.workdir, "sub", ".git")); err == nil {
		t.Errorf("sub/.git is still there")
	}
}

// TestRedteamPlantHooksPathTarget: the user's (read-only) .git/config
// sets core.hooksPath = .githooks, a common pattern; the hooks directory it
// names lies in the writable workdir and is not held, so the agent plants
// pre-commit and the user's next commit runs it.
func TestRedteamPlantHooksPathTarget(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	for _, a := range [][]string{{"init", "-q"}, {"config", "core.hooksPath", ".githooks"}} {
		if out, err := testutil.Git(e.workdir, a...); err != nil {
			t.Fatalf("git %v: %v %s", a, err, out)
		}
	}
	must(t, os.MkdirAll(filepath.Join(e.workdir, ".githooks"), 0o755))
	hook := filepath.Join(e.workdir, ".githooks", "pre-commit")
	r := e.run(t, nil, "python3", "-c", writeProbe, hook)
	if got := probeLines(r.stdout)[hook]; !writeDenied[got] {
		t.Errorf("BREACH %s (core.hooksPath target): agent write %q, want one of %v", hook, got, keys(writeDenied))
	}
}

// TestRedteamInboxParallelFlood: 8 parallel writer processes create 64 KiB
// files in the inbox as fast as they can under limits.inbox_bytes 100KiB.
// Polled four times a second the watcher let ~9 MB reach the vault's disk
// before the kill; event-driven it kills within a few events. No bound on
// what lands is free of timing (the writers run while fedmem-run reads
// its events: cap + writers x file_size is what one round costs, measured
// and logged, not promised), so the test asserts what holds however
// loaded the machine is: the session ends by inbox_bytes, and what stays
// on disk is bounded far below what the flood writes unchecked (8 writers
// for the 60 s wall time: gigabytes). The bound is 16 MiB: the overshoot is
// the writers' progress between the crossing write and their death, i.e.
// scheduling, and was 0.13-4.5 MB on this 2-core host (one 4.46 MB run
// under containerd in a quiet CI, up to 19 MB with three busy loops beside
// it), logged every run. The kill went to pid 1 alone then, and the
// writers ran until the dying init got a CPU; it now reaches every process
// of the session's cgroup from fedmem-run (cgroups.Session.Kill): 20 runs
// at load 10-12 (cgroup v1, namespace backend) went from median 1.9 MB,
// max 24.5 MB (one over 16 MiB) to 0.135 MB, max 0.20 MB. A bound free of
// timing needs a size-capped inbox file system (docs/threat-model.md,
// limits); until then this is a measurement.
func TestRedteamInboxParallelFlood(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	const writers, fileSize, inboxCap = 8, 64 << 10, 100 << 10
	prof := limitsProfile(t, e, "  inbox_bytes: 100KiB\n  file_size: 64KiB\n  wall_time: 60s\n")
	flood := `
import os, sys
inbox = os.environ["FEDMEM_INBOX"]; data = b"x" * 65536
def w(k):
    i = 0
    while True:
        fd = os.open("%s/f%d-%d" % (inbox, k, i), os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, data); os.close(fd); i += 1
kids = []
for k in range(int(sys.argv[1])):
    pid = os.fork()
    if pid == 0:
        w(k)
    kids.append(pid)
for p in kids:
    os.waitpid(p, 0)
`
	r := e.run(t, []string{"--profile", prof}, "python3", "-c", flood, fmt.Sprint(writers))
	if r.session == "" {
		t.Fatalf("no session in the report: exit %d\n%s", r.code, r.stderr)
	}
	if r.code != 137 || !slices.Contains(hits(r), "inbox_bytes") {
		t.Fatalf("exit %d limits_hit %v notes %s; want 137 and inbox_bytes\n%s", r.code, hits(r), notes(r), r.stderr)
	}
	var used int64
	filepath.Walk(filepath.Join(e.vault.Dir, "90-inbox", r.session), func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				used += max(st.Blocks*512, st.Size)
			}
		}
		return nil
	})
	t.Logf("on disk after the session: %d bytes; cap %d, cap + writers x file_size %d", used, inboxCap, inboxCap+writers*fileSize)
	if used > 16<<20 {
		t.Errorf("the inbox holds %d bytes on disk after the session, over 16 MiB (cap %d)", used, inboxCap)
	}
}
