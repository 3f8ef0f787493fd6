package demo

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/repo"
)

// Layout is where the demo's files live, and whether it runs in the
// two-user layout of a root install.
type Layout struct {
	Base     string // the demo's temporary directory
	Vault    string
	Work     string
	Home     string
	Report   string // fedmem-run's --report
	TwoUsers bool   // run as root: a gate uid owns the vault, the agent has its own uid
}

// NewLayout makes the demo's temporary directory under dir (default
// /var/tmp, else $TMPDIR) and names the paths in it. It warns on w when the
// directory lies under /tmp.
func NewLayout(dir string, w io.Writer) (Layout, error) {
	parent := dir
	if parent == "" {
		parent = "/var/tmp"
		if fi, err := os.Stat(parent); err != nil || !fi.IsDir() || writable(parent) != nil {
			parent = os.TempDir()
		}
	}
	// Not under /tmp by default: the sandbox has a private /tmp, and the
	// demo wants the paths to agree inside and out.
	if abs, err := filepath.Abs(parent); err == nil && vault.Within(filepath.Clean(abs), "/tmp") {
		fmt.Fprintf(w, "warning: %s is under /tmp, which the sandbox replaces with a private tmpfs: the vault will not be visible to the agent; pass --dir\n", parent)
	}
	base, err := os.MkdirTemp(parent, "fedmem-demo-")
	if err != nil {
		return Layout{}, fmt.Errorf("demo directory: %w", err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		return Layout{}, err
	}
	return Layout{
		Base:     base,
		Vault:    filepath.Join(base, "vault"),
		Work:     filepath.Join(base, "work"),
		Home:     filepath.Join(base, "home"),
		Report:   filepath.Join(base, "report.json"),
		TwoUsers: os.Geteuid() == 0,
	}, nil
}

// AgentArgs are fedmem-run's arguments before --report.
func (l Layout) AgentArgs() []string {
	args := []string{"--vault", l.Vault, "--workdir", l.Work}
	if l.TwoUsers {
		args = append(args, "--agent-user", AgentUser)
	}
	return args
}

// MakeVault runs `fedmem init` on l.Vault, commits the demo policy (naming
// reviewer) and makes another session's draft in the inbox.
func MakeVault(l Layout, reviewer string) (repo.Result, error) {
	var initOpts repo.InitOptions
	if l.TwoUsers {
		initOpts.Gate = &vault.Owner{UID: GateUID, GID: GateUID}
		initOpts.AgentGroup = &vault.Group{GID: AgentGID}
	} else {
		// Same-user mode: the launcher group is your own group, so the
		// session record is "proven" only against other users; it shows
		// the mechanism, not its strength (docs/gate.md, "Trust model").
		initOpts.LauncherGroup = &vault.Group{GID: os.Getegid()}
	}
	res, err := repo.Init(l.Vault, initOpts)
	if err != nil {
		return res, fmt.Errorf("fedmem init %s: %w", l.Vault, err)
	}
	if err := trustPolicy(l.Vault, reviewer, l.TwoUsers); err != nil {
		return res, fmt.Errorf("demo policy: %w", err)
	}
	other := filepath.Join(l.Vault, vault.InboxDir, OtherSession)
	if err := os.Mkdir(other, 0o700); err != nil {
		return res, err
	}
	// Like fedmem-run's session directories: the group (inherited from a
	// setgid inbox) lets the gate in.
	if err := os.Chmod(other, os.ModeSetgid|0o770); err != nil {
		return res, err
	}
	if err := os.WriteFile(filepath.Join(other, "draft.md"), []byte("---\ntype: Fact\ntitle: Another agent's draft\n---\n\nOnly that agent and the gate may see this.\n"), 0o644); err != nil {
		return res, err
	}
	return res, nil
}

// MakeWorkdir makes the agent's workdir (the agent user's in the two-user
// layout, as a run_as user's checkout would be).
func MakeWorkdir(l Layout) error {
	if err := os.Mkdir(l.Work, 0o755); err != nil {
		return err
	}
	if l.TwoUsers {
		if err := os.Chown(l.Work, AgentUID, AgentGID); err != nil {
			return err
		}
	}
	return nil
}

// MakeHome writes a home with things the sandbox must keep from the
// agent: a shell rc, a fake SSH key and fake AWS credentials.
func MakeHome(home string) error {
	files := map[string]string{
		".bashrc":             "# demo home of `fedmem demo`\n",
		".ssh/id_ed25519":     "-----BEGIN OPENSSH PRIVATE KEY-----\nFAKE DEMO KEY: the agent must not read this\n-----END OPENSSH PRIVATE KEY-----\n",
		".aws/credentials":    "[default]\n# FAKE DEMO CREDENTIALS: the agent must not read this\naws_access_key_id = AKIAFAKEFAKEFAKEFAKE\n",
		".config/demo/readme": "an ordinary config file the agent may read\n",
	}
	for rel, content := range files {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return err
		}
	}
	return os.Chmod(home, 0o755)
}

// PrintSetup prints what the demo set up and the fedmem-run command it is
// about to run.
func PrintSetup(w io.Writer, l Layout, res repo.Result, runBin string, agentArgs []string, headBefore string) {
	fmt.Fprintf(w, "fedmem demo: a hostile agent against a fresh vault\n\n")
	fmt.Fprintf(w, "  vault    %s (HEAD %s, gate user %s)\n", l.Vault, short(headBefore), ownerName(res.Gate))
	if l.TwoUsers {
		fmt.Fprintf(w, "  inbox    %s/ group %d, mode %s: agents (in that group) create sessions; the gate (uid %d, also a member) claims drafts\n", vault.InboxDir, AgentGID, res.InboxMode, GateUID)
		fmt.Fprintf(w, "  agent    uid %d, group %d (fedmem-run --agent-user %s: started by root, the agent never runs as uid 0)\n", AgentUID, AgentGID, AgentUser)
	}
	fmt.Fprintf(w, "  policy   auto_promote trusts sessions of the built-in profile %q for type Fact; everything else waits for a reviewer\n", TrustedProfile)
	fmt.Fprintf(w, "  workdir  %s\n", l.Work)
	fmt.Fprintf(w, "  home     %s (a demo home with a fake ~/.ssh key and ~/.aws credentials)\n", l.Home)
	fmt.Fprintf(w, "  running  %s %s --report %s -- /bin/sh -c <demo agent script>\n\n", runBin, strings.Join(agentArgs, " "), l.Report)
}

// FindRun returns fedmem-run: flagPath if set, else the one next to this
// executable, else the one on $PATH.
func FindRun(flagPath string) (string, error) {
	if flagPath != "" {
		return flagPath, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "fedmem-run")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("fedmem-run"); err == nil {
		return p, nil
	}
	return "", errors.New("fedmem-run not found next to fedmem nor in $PATH (run `make build`, or pass --fedmem-run PATH)")
}

// trustPolicy commits a policy that lets the demo's session promote an
// ordinary Fact on its own (a trusted profile, evidence that resolves), so
// the demo shows both a promotion from a trusted origin and drafts held for
// a reviewer. The commit is made as the gate user.
func trustPolicy(v, reviewer string, twoUsers bool) error {
	pol := "version: 1\nreviewers: [\"" + reviewer + "\"]\nauto_promote:\n  profiles: [" + TrustedProfile + "]\n  types: [Fact]\n  max_per_session: 5\n"
	if !twoUsers {
		pol += fmt.Sprintf("  launcher_group: \"%d\"\n", os.Getegid())
	}
	p := filepath.Join(v, filepath.FromSlash(vault.PolicyFile))
	if err := os.WriteFile(p, []byte(pol), 0o644); err != nil {
		return err
	}
	// The note the good draft cites: in force, written by a human, about
	// the draft's subject (the agent contract is not evidence).
	src := filepath.Join(v, "10-projects", "fedmem", "sandbox.md")
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(src, []byte("---\ntype: Fact\ntitle: fedmem-run vault read-only sandbox\n---\nAn agent under fedmem-run writes only its session inbox.\n"), 0o644); err != nil {
		return err
	}
	if twoUsers {
		for _, f := range []string{filepath.Dir(src), src} {
			if err := os.Chown(f, GateUID, GateUID); err != nil {
				return err
			}
		}
	}
	args := [][]string{{"add", vault.PolicyFile, "10-projects/fedmem/sandbox.md"}, {"-c", "user.name=" + repo.GateName, "-c", "user.email=" + repo.GateEmail, "commit", "-q", "-m", "demo policy: trust the default profile for Facts"}}
	for _, a := range args {
		cmd := exec.Command("git", append([]string{"-c", "safe.directory=*", "-C", v}, a...)...)
		cmd.Env = append(WithoutEnv(os.Environ(), "HOME"), "HOME="+v, "GIT_CONFIG_NOSYSTEM=1")
		if twoUsers {
			if err := os.Chown(p, GateUID, GateUID); err != nil {
				return err
			}
			cmd.SysProcAttr = credential(GateUID, GateUID, AgentGID)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v: %s", a, err, out)
		}
	}
	return nil
}

func writable(dir string) error {
	f, err := os.CreateTemp(dir, ".fedmem-demo-probe-")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}
