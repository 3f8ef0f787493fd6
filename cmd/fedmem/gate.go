package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedmem/fedmem/gate"
	"github.com/fedmem/fedmem/gate/logsafe"
	"github.com/fedmem/fedmem/gate/review"
)

func init() {
	subcommands = append(subcommands, newGateCmd)
}

type gateOptions struct {
	vault         string
	state         string
	json          bool
	allowSameUser bool
	interval      time.Duration
	socket        string
	signKey       string
	spares        int
}

func (o *gateOptions) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.vault, "vault", "", "the vault directory (required)")
	f.StringVar(&o.state, "state", "", "the gate's private state directory (default: .<vault-name>.fedmem-gate next to the vault)")
	f.BoolVar(&o.allowSameUser, "allow-same-user", false, "handle sessions run by the gate's own uid (single-user machines; weaker guarantees)")
	f.StringVar(&o.signKey, "sign-key", "", "sign the gate's commits with this private key (OpenSSH or armored OpenPGP, no passphrase); `fedmem audit verify --pubkey` checks them")
}

func (o *gateOptions) open(stderr io.Writer) (*gate.Gate, error) {
	if o.vault == "" {
		return nil, usageErrorf("--vault DIR is required")
	}
	return gate.Open(gate.Options{
		Vault:         o.vault,
		StateDir:      o.state,
		AllowSameUser: o.allowSameUser,
		SignKey:       o.signKey,
		Spares:        o.spares,
		Logger:        slog.New(logsafe.Handler(slog.NewJSONHandler(stderr, nil))),
	})
}

func newGateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gate",
		Short: "Validate drafts from the inbox and promote, hold or reject them",
		Long: `The gate runs as the vault's owner (the gate user). It claims every draft in
90-inbox/<session>/, validates it, and promotes it with a Git commit, holds it
for human review, or rejects it with reasons. Agents read the outcome in
90-inbox/<session>/.receipts/<draft>.json. See docs/gate.md.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newGateOnceCmd(), newGateRunCmd(), newGateSweepCmd(), newGateStatusCmd())
	return cmd
}

func newGateOnceCmd() *cobra.Command {
	var o gateOptions
	cmd := &cobra.Command{
		Use:   "once --vault DIR",
		Short: "Handle every pending draft, print a summary and exit",
		Long: `once handles everything waiting in the inbox (and finishes anything an
interrupted gate left half done), prints one line per decision and a summary,
and exits.

Exit codes: 0 every draft reached a decision; 1 something was left (a draft
still being written, a refused session, an error); 2 bad usage.`,
		Example: `  fedmem gate once --vault /srv/vault
  fedmem gate once --vault ~/vault --allow-same-user --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g, err := o.open(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer g.Close()
			s, err := g.Once()
			if err != nil {
				return err
			}
			printSummary(cmd.OutOrStdout(), cmd.ErrOrStderr(), s, o.json)
			if !s.Handled() {
				return &exitError{Code: exitFailure, Err: fmt.Errorf("%d draft(s) deferred, %d error(s)", s.Deferred, len(s.Errors))}
			}
			return nil
		},
	}
	o.flags(cmd)
	cmd.Flags().BoolVar(&o.json, "json", false, "print the summary as JSON")
	return cmd
}

func printSummary(stdout, stderr io.Writer, s *gate.Summary, asJSON bool) {
	for _, w := range s.Warnings {
		fmt.Fprintf(stderr, "fedmem: warning: %s\n", w)
	}
	for _, e := range s.Errors {
		fmt.Fprintf(stderr, "fedmem: %s\n", e)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s)
		return
	}
	for _, d := range s.Decisions {
		where := d.Path
		if d.Commit != "" {
			where += " @ " + d.Commit[:12]
		}
		fmt.Fprintf(stdout, "%-8s %s/%s %s\n", d.State, d.Session, quoteName(d.Draft), where)
		if d.State != gate.StatePromoted {
			for _, r := range d.Reasons {
				if r.Severity != "info" {
					fmt.Fprintf(stdout, "  %s/%s:%d: %s: %s (%s)\n", d.Session, quoteName(d.Draft), r.Line, r.Severity, r.Message, r.Rule)
				}
			}
		}
	}
	fmt.Fprintf(stdout, "%d promoted, %d pending, %d rejected, %d deferred\n", s.Promoted, s.Pending, s.Rejected, s.Deferred)
}

func newGateRunCmd() *cobra.Command {
	var o gateOptions
	cmd := &cobra.Command{
		Use:   "run --vault DIR",
		Short: "Run the gate: watch the inbox, serve the review socket",
		Long: `run handles drafts as they arrive (inotify on the inbox, plus a rescan every
--interval), and serves the review socket (default <state>/review.sock) for
fedmem review. Logs are JSON lines on stderr. SIGTERM or SIGINT lets the pass
in progress finish, then exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g, err := o.open(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer g.Close()
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			sock := o.socket
			if sock == "" {
				sock = filepath.Join(g.StateDir(), review.SocketName)
			}
			errc := make(chan error, 1)
			go func() { errc <- g.ServeReview(ctx, sock) }()
			log := slog.New(logsafe.Handler(slog.NewJSONHandler(cmd.ErrOrStderr(), nil))) // pass warnings and errors name drafts
			log.Info("gate running", "state", g.StateDir(), "socket", sock)
			err = g.Run(ctx, o.interval, func(s *gate.Summary, err error) {
				if err != nil {
					log.Error("pass failed", "err", err)
					return
				}
				for _, w := range s.Warnings {
					log.Warn(w)
				}
				for _, e := range s.Errors {
					log.Error(e)
				}
				if len(s.Decisions) > 0 || s.Deferred > 0 {
					log.Info("pass", "promoted", s.Promoted, "pending", s.Pending, "rejected", s.Rejected, "deferred", s.Deferred)
				}
			})
			stop()
			if serr := <-errc; serr != nil && err == nil {
				err = serr
			}
			log.Info("gate stopped")
			return err
		},
	}
	o.flags(cmd)
	cmd.Flags().DurationVar(&o.interval, "interval", 10*time.Second, "rescan the inbox at least this often")
	cmd.Flags().StringVar(&o.socket, "socket", "", "review socket path (default <state>/review.sock)")
	cmd.Flags().IntVar(&o.spares, "spares", 4096, "empty files to keep made while idle, for a burst's receipts, decisions and notes (<state>/spare; 0: none)")
	return cmd
}

// defaultSocket is where fedmem review looks without --socket.
func defaultSocket(vaultDir, state string) (string, error) {
	if state != "" {
		return filepath.Join(state, review.SocketName), nil
	}
	abs, err := filepath.Abs(vaultDir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return filepath.Join(gate.DefaultStateDir(abs), review.SocketName), nil
}

// quoteName prints a draft name as is when it is plain, quoted otherwise
// (names come from agents and may hold control characters).
func quoteName(n string) string {
	for _, r := range n {
		if r < 0x20 || r == 0x7f || r == ' ' || r == '"' || r == 0xFFFD || r > 0x7e {
			return strconv.Quote(n)
		}
	}
	return n
}
