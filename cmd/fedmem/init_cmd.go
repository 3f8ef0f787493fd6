package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/repo"
)

func init() {
	subcommands = append(subcommands, newInitCmd)
}

type initOptions struct {
	gateUser      string
	agentGroup    string
	launcherGroup string
	reviewers     []string
	json          bool
	noGitSafe     bool
}

func newInitCmd() *cobra.Command {
	var o initOptions
	cmd := &cobra.Command{
		Use:   "init DIR",
		Short: "Create a memory vault, or check and repair an existing one",
		Long: `init creates a fedmem vault in DIR (made if missing; it must be empty or
already a vault): the folders of the federated-memory architecture, the agent
contract 00-global/AGENT.md, 00-global/RULES.md, a default gate policy
00-global/policy.yaml, a .gitignore that keeps drafts out of history, and a Git
repository (branch main) with one commit by fedmem-gate <gate@fedmem.invalid>.

Every path is owned by the gate user (default: you). Files are 0644, folders
0755, nothing in .git is writable by group or others. 90-inbox/ and
90-inbox/.sessions/ are mode 01777 (anyone may create a session folder, nobody
may remove or rename another's), or 03770 with --agent-group (only that group).
With --launcher-group G, 90-inbox/.sessions/ is the gate's, group G, mode
03770 and closed to others: only fedmem-run installed setgid G (make install
FEDMEM_LAUNCHER_GROUP=G) can write session records, which is what lets the
gate trust a session's origin for auto_promote (docs/gate.md, "Trust model").
Giving the vault to another user (--gate-user) needs root.

On an existing vault, init re-checks and repairs folders, owners and modes,
restores deleted contract files from HEAD, and commits only files missing from
the history. It says what it did.

Exit codes: 0 done (or nothing to do), 1 failed or refused (DIR not empty and
not a vault; an inbox entry not owned by the gate), 2 bad usage.`,
		Example: `  fedmem init ~/vault
  sudo fedmem init --gate-user fedmem-gate --agent-group agents /srv/vault
  sudo fedmem init --gate-user fedmem-gate --agent-group agents --launcher-group fedmem-launch /srv/vault
  sudo fedmem init --gate-user 64000 --json /srv/vault`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("init takes exactly one argument, the vault directory (got %d)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runInit(args[0], o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.gateUser, "gate-user", "", "owner of the vault: a user NAME, or a numeric UID (needs no passwd entry; its gid is the same number)")
	f.StringVar(&o.agentGroup, "agent-group", "", "group NAME or GID allowed to create sessions in 90-inbox/ (mode 03770); default: everyone (mode 01777)")
	f.StringVar(&o.launcherGroup, "launcher-group", "", "group NAME or GID fedmem-run is installed setgid to; owns 90-inbox/.sessions/ (mode 03770) so session records are provably the launcher's")
	f.StringSliceVar(&o.reviewers, "reviewer", nil, "reviewer written into a new policy.yaml (repeatable; default: $SUDO_USER, else you)")
	f.BoolVar(&o.json, "json", false, "print the result as JSON")
	f.BoolVar(&o.noGitSafe, "no-git-safe-directory", false, "as root with --gate-user: do not list the vault as a Git safe.directory for every user (in /etc/fedmem/gitconfig, included by /etc/gitconfig)")
	return cmd
}

func runInit(dir string, o initOptions, stdout, stderr io.Writer) error {
	var opts repo.InitOptions
	if o.gateUser != "" {
		g, err := vault.ResolveUser(o.gateUser)
		if err != nil {
			return usageErrorf("--gate-user: %w", err)
		}
		opts.Gate = &g
	}
	if o.agentGroup != "" {
		g, err := vault.ResolveGroup(o.agentGroup)
		if err != nil {
			return usageErrorf("--agent-group: %w", err)
		}
		opts.AgentGroup = &g
	}
	if o.launcherGroup != "" {
		g, err := vault.ResolveGroup(o.launcherGroup)
		if err != nil {
			return usageErrorf("--launcher-group: %w", err)
		}
		if g.GID == 0 {
			return usageErrorf("--launcher-group must be a dedicated group, not root's")
		}
		opts.LauncherGroup = &g
	}
	opts.Reviewers = o.reviewers
	if len(opts.Reviewers) == 0 {
		opts.Reviewers = defaultReviewers()
	}
	res, err := repo.Init(dir, opts)
	if err != nil {
		var refused *repo.RefusedError
		if errors.As(err, &refused) {
			return err
		}
		return fmt.Errorf("init %s: %w", dir, err)
	}
	// Root giving the vault to a gate user: every other user's git
	// would call it "dubious ownership" (gitsafe.go).
	if os.Geteuid() == 0 && res.Gate.UID != 0 && !o.noGitSafe {
		dir := res.Dir
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		if g, err := addGitSafeDirectory(dir); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("users other than the gate user cannot run git in %s (\"dubious ownership\"): safe.directory not added to %s: %v; each user can run: git config --global --add safe.directory %s", dir, g.File, err, dir))
		} else {
			res.GitSafeDirectory = g.File
		}
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "fedmem: warning: %s\n", w)
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	printInit(stdout, res)
	return nil
}

// defaultReviewers is the human behind the command: $SUDO_USER under sudo,
// else the caller.
func defaultReviewers() []string {
	if os.Getuid() == 0 {
		if u := os.Getenv("SUDO_USER"); u != "" && u != "root" {
			return []string{u}
		}
	}
	me := vault.CurrentOwner()
	if me.Name != "" {
		return []string{me.Name}
	}
	return []string{fmt.Sprint(me.UID)}
}

func printInit(w io.Writer, r repo.Result) {
	gate := fmt.Sprintf("uid %d, gid %d", r.Gate.UID, r.Gate.GID)
	if r.Gate.Name != "" {
		gate = r.Gate.Name + " (" + gate + ")"
	}
	inbox := "mode " + r.InboxMode + ": any user may create a session folder"
	if r.AgentGroup != nil {
		g := fmt.Sprint(r.AgentGroup.GID)
		if r.AgentGroup.Name != "" {
			g = r.AgentGroup.Name + " (gid " + g + ")"
		}
		inbox = "mode " + r.InboxMode + ": members of group " + g + " may create a session folder"
	}
	if r.Created {
		fmt.Fprintf(w, "Created fedmem vault %s\n", r.Dir)
	} else {
		fmt.Fprintf(w, "Checked fedmem vault %s\n", r.Dir)
	}
	fmt.Fprintf(w, "  gate user  %s\n", gate)
	fmt.Fprintf(w, "  inbox      %s/ %s\n", vault.InboxDir, inbox)
	if r.LauncherGroup != nil {
		g := fmt.Sprint(r.LauncherGroup.GID)
		if r.LauncherGroup.Name != "" {
			g = r.LauncherGroup.Name + " (gid " + g + ")"
		}
		fmt.Fprintf(w, "  sessions   %s/ group %s, mode 03770: only the setgid launcher writes session records\n", vault.SessionsDir, g)
	}
	if r.Commit != "" && r.Created {
		fmt.Fprintf(w, "  commit     %s by %s <%s> (%d files)\n", abbrev(r.Commit), repo.GateName, repo.GateEmail, len(r.Committed))
	} else if r.Commit != "" {
		fmt.Fprintf(w, "  commit     %s by %s <%s> (%s)\n", abbrev(r.Commit), repo.GateName, repo.GateEmail, strings.Join(r.Committed, ", "))
	} else {
		fmt.Fprintf(w, "  commit     none (HEAD %s)\n", abbrev(r.Head))
	}
	if !r.Created {
		if len(r.Actions) == 0 {
			fmt.Fprintln(w, "  repairs    none: everything was in place")
		} else {
			fmt.Fprintln(w, "  repairs:")
			for _, a := range r.Actions {
				fmt.Fprintf(w, "    %s: %s\n", a.Path, a.What)
			}
		}
	}
	if r.GitSafeDirectory != "" {
		fmt.Fprintf(w, "  git        every user may run git in the vault: safe.directory in %s\n", r.GitSafeDirectory)
	}
	if r.Created {
		fmt.Fprintf(w, "Agents read %s; run them with: fedmem-run --vault %s -- <agent>\n", vault.AgentContract, r.Dir)
	}
}

// abbrev shortens a commit id for humans.
func abbrev(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
