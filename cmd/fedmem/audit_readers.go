package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
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

func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return strconv.Itoa(uid)
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
			printReaders(cmd.OutOrStdout(), cmd.ErrOrStderr(), a)
			return nil
		},
	}
	cmd.Flags().StringVar(&vaultDir, "vault", "", "the vault directory")
	cmd.Flags().StringVar(&state, "state", "", "the gate's state directory, if not the default")
	cmd.Flags().StringVar(&since, "since", "", "only reads at or after this time (RFC 3339, date, or duration such as 24h)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func printReaders(out, errw io.Writer, a readers.Answer) {
	for _, p := range a.Problems {
		fmt.Fprintln(errw, "warning:", oneLine(p))
	}
	if len(a.Readers) == 0 {
		fmt.Fprintf(out, "no recorded session opened %s\n", oneLine(a.Note))
	} else {
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SESSION\tPROFILE\tUSER\tFIRST OPENED\tCOMMIT\tBLOB\tWORKDIR")
		for _, r := range a.Readers {
			first := r.First
			if r.Maybe {
				first = "maybe (" + r.MaybeWhy + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s (%d)\t%s\t%s\t%s\t%s\n", oneLine(r.Session), oneLine(r.Profile), oneLine(userName(r.UID)), r.UID, oneLine(first), oneLine(short(r.Commit)), oneLine(short(r.Blob)), oneLine(r.Workdir))
		}
		tw.Flush()
	}
	if len(a.Unrecorded) > 0 {
		fmt.Fprintf(out, "%d session(s) have no read receipt and could have read it: %s\n", len(a.Unrecorded), oneLine(strings.Join(a.Unrecorded, ", ")))
	}
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
			printSessionView(cmd.OutOrStdout(), v)
			return nil
		},
	}
	cmd.Flags().StringVar(&vaultDir, "vault", "", "the vault directory")
	cmd.Flags().StringVar(&state, "state", "", "the gate's state directory, if not the default")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func printSessionView(out io.Writer, v *readers.View) {
	fmt.Fprintf(out, "session %s\n  profile %s, agent %s (uid %d), workdir %s\n  started %s, ended %s, vault commit %s\n",
		oneLine(v.Session.Session), oneLine(v.Profile), oneLine(userName(v.UID)), v.UID, oneLine(v.Workdir), oneLine(v.Started), oneLine(orDash(v.Ended)), oneLine(short(v.VaultHeadStart)))
	if v.Changed {
		fmt.Fprintln(out, "  warning: the record in 90-inbox/.sessions/ differs from the gate's stored copy (shown)")
	}
	for _, p := range v.Problems {
		fmt.Fprintln(out, "  warning:", oneLine(p))
	}
	rr := v.VaultReads
	switch {
	case rr == nil:
		fmt.Fprintln(out, "reads: no read receipt (the session has not ended, or fedmem-run is older)")
	case !rr.Recorded:
		fmt.Fprintf(out, "reads: not recorded: %s\n", oneLine(rr.Unavailable))
	default:
		if v.Unproven != "" {
			fmt.Fprintln(out, "reads CLAIMED by a record not proven to be fedmem-run's (not evidence of what the session read):")
		}
		fmt.Fprintf(out, "reads: %d vault file(s) opened, %d open(s) under .git, digest %s\n", rr.Count, rr.GitOpens, oneLine(rr.Digest))
		if rr.Truncated {
			fmt.Fprintf(out, "  (the first %d listed)\n", len(rr.Reads))
		}
		if rr.Lost || rr.Unattributed > 0 {
			fmt.Fprintf(out, "  incomplete: lost=%v, %d open(s) not named\n", rr.Lost, rr.Unattributed)
		}
		for _, r := range rr.Reads {
			fmt.Fprintf(out, "  %s  %s  %s\n", oneLine(r.First), oneLine(short(r.Blob)), oneLine(r.Path))
		}
	}
	if v.DecisionsUnread != "" {
		fmt.Fprintf(out, "drafts: the gate's decisions cannot be read: %s\n", oneLine(v.DecisionsUnread))
		return
	}
	fmt.Fprintf(out, "drafts: %d decided\n", len(v.Drafts))
	for _, d := range v.Drafts {
		line := fmt.Sprintf("  %s  %s", d.State, d.Draft)
		if d.Path != "" {
			line += " → " + d.Path
		}
		if d.Commit != "" {
			line += " (" + short(d.Commit) + ")"
		}
		if len(d.Rules) > 0 {
			line += " [" + strings.Join(d.Rules, ", ") + "]"
		}
		fmt.Fprintln(out, oneLine(line))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
