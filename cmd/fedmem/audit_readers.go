package main

import (
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedmem/fedmem/gate"
	"github.com/fedmem/fedmem/gate/readers"
)

// auditVault resolves --vault (required) and --state (default: the gate's).
func auditVault(vaultDir, state string) (string, string, error) {
	if vaultDir == "" {
		return "", "", usageErrorf("give --vault DIR")
	}
	abs, err := filepath.Abs(vaultDir)
	if err != nil {
		return "", "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	if state == "" {
		state = gate.DefaultStateDir(abs)
	}
	return abs, state, nil
}

// parseSince reads --since: an RFC 3339 time, a date (UTC midnight), or a
// duration back from now ("24h", "90m").
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usageErrorf("--since %q: give an RFC 3339 time (2026-01-02T15:04:05Z), a date (2026-01-02) or a duration back from now (24h)", s)
}

func newAuditReadersCmd() *cobra.Command {
	var vaultDir, state, since string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "readers NOTE --vault DIR [--since T] [--json]",
		Short: "List the sessions that opened a note (read receipts)",
		Long: `readers lists, oldest first, the sessions whose read receipt names NOTE (a
path relative to the vault, or an absolute path inside it): the session, its
profile, the agent's user, the workdir, when it first opened the note, and the
vault commit it saw with the note's blob id there. The receipts are the ones
fedmem-run recorded from outside the sandbox (docs/threat-model.md, "Read
receipts"), from the session records in 90-inbox/.sessions/ and the copies the
gate stores in its state. A session whose receipt was cut or lost events is
listed as "maybe"; sessions with no receipt at all (an unprivileged caller's)
are named after the list: they could have read it.

--since T keeps reads at or after T (RFC 3339, a date, or a duration back
from now such as 24h).

Exit codes: 0 listed (also when nobody read it); 1 the records cannot be read;
2 bad usage.`,
		Example: `  fedmem audit readers 10-projects/acme/api.md --vault ~/vault
  fedmem audit readers ~/vault/20-domains/tls.md --vault ~/vault --since 24h --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			abs, st, err := auditVault(vaultDir, state)
			if err != nil {
				return err
			}
			t, err := parseSince(since, time.Now())
			if err != nil {
				return err
			}
			note, err := readers.NotePath(abs, args[0])
			if err != nil {
				return usageErrorf("%v", err)
			}
			sessions, problems, err := readers.Load(abs, st)
			if err != nil {
				return err
			}
			a := readers.Readers(sessions, note, t)
			a.Problems = append(problems, a.Problems...)
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(a)
			}
			a.WriteText(cmd.OutOrStdout(), cmd.ErrOrStderr())
			return nil
		},
	}
	cmd.Flags().StringVar(&vaultDir, "vault", "", "the vault directory")
	cmd.Flags().StringVar(&state, "state", "", "the gate's state directory, if not the default")
	cmd.Flags().StringVar(&since, "since", "", "only reads at or after this time (RFC 3339, date, or duration such as 24h)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func newAuditSessionCmd() *cobra.Command {
	var vaultDir, state string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "session SESSION --vault DIR [--json]",
		Short: "Show what one session read and wrote",
		Long: `session shows one session: its record (profile, agent user, workdir, start
and end, the vault commit it saw), its read receipt (every vault file it opened,
with the blob id and when) and its drafts with the gate's decision on each
(promoted with the commit, pending review, or rejected with the rules). The
decisions are in the gate's state directory: as another user, they are said to
be unreadable.

Exit codes: 0 shown; 1 no such session, or the records cannot be read; 2 bad
usage.`,
		Example: `  fedmem audit session 20260102T150405-ab12cd --vault ~/vault`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			abs, st, err := auditVault(vaultDir, state)
			if err != nil {
				return err
			}
			v, err := readers.Show(abs, st, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(v)
			}
			v.WriteText(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().StringVar(&vaultDir, "vault", "", "the vault directory")
	cmd.Flags().StringVar(&state, "state", "", "the gate's state directory, if not the default")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
