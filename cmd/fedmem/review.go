package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/fedmem/fedmem/gate"
	"github.com/fedmem/fedmem/gate/review"
	"github.com/fedmem/fedmem/gate/validate"
)

func init() {
	subcommands = append(subcommands, newReviewCmd)
}

type reviewOptions struct {
	vault, state, socket string
	json                 bool
	reason               string
	filter               review.Filter
	yes                  bool
	// supersede and title: the reviewer's choice for a draft that
	// contradicts a note in force (approve).
	supersede bool
	title     string
	// stdin is where a batch's confirmation is read; terminal says whether
	// it is a terminal. Nil: the process's stdin and term.IsTerminal.
	stdin    io.Reader
	terminal func() bool
}

func (o *reviewOptions) socketPath() (string, error) {
	if o.socket != "" {
		return o.socket, nil
	}
	if o.vault == "" {
		return "", usageErrorf("give --vault DIR or --socket PATH")
	}
	return defaultSocket(o.vault, o.state)
}

// ask sends one request to the gate's review socket.
func (o *reviewOptions) ask(req review.Request) (*review.Response, error) {
	p, err := o.socketPath()
	if err != nil {
		return nil, err
	}
	resp, err := review.Ask(p, req)
	if err != nil && resp == nil && o.vault != "" {
		return nil, fmt.Errorf("%w\nstart the gate with: fedmem gate run --vault %s", err, o.vault)
	}
	return resp, err
}

func newReviewCmd() *cobra.Command {
	o := &reviewOptions{}
	cmd := &cobra.Command{
		Use:   "review",
		Short: "List, show, approve or reject drafts the gate held for review",
		Long: `review talks to a running gate (fedmem gate run) over its unix socket. The
gate checks who you are from the kernel (SO_PEERCRED) against the policy's
reviewers; nothing you type can change that. Approving records
verified: human:<you> in the note and Fedmem-Reviewer: <you> in the commit.

ID may be the full id or any unique prefix (at least 4 characters) of the id
or of its random tail (the part after the last '-'): "fedmem review approve
a1b2"; review list shows the shortest unique one. A prefix matching several
drafts is refused with the candidates.

approve and reject decide a batch when given several ids or a filter
(--session, --profile, --type, --risk, or --all): they show what the filter
selected and its count and ask before deciding; --yes skips the question
(and is required when stdin is not a terminal). Each draft is its own
decision and, when approved, its own commit; a draft that cannot be decided
(decided meanwhile by another reviewer, no longer valid) is reported and the
command exits 1.

On a terminal, fedmem review with no subcommand opens the interactive
review: the held drafts on the left (/ filters them), the gate's view of the
selected one on the right (what show prints), and keys to approve (a),
approve superseding what it contradicts (s), reject with a reason (r), skip
(n) and quit (q). docs/gate.md lists them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !o.isTerminal() || !term.IsTerminal(int(os.Stdout.Fd())) {
				cmd.SetOut(cmd.ErrOrStderr())
				_ = cmd.Help()
				return usageErrorf("a subcommand is required (list, show, approve, reject, reverify); on a terminal, fedmem review alone opens the interactive review")
			}
			return runTUI(o)
		},
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.vault, "vault", "", "the vault directory (finds the socket next to it)")
	pf.StringVar(&o.state, "state", "", "the gate's state directory, if not the default")
	pf.StringVar(&o.socket, "socket", "", "the review socket path")
	pf.BoolVar(&o.json, "json", false, "print the response as JSON")
	do := func(cmd *cobra.Command, req review.Request) error {
		resp, err := o.ask(req)
		if err != nil {
			return err
		}
		printReview(cmd.OutOrStdout(), req.Op, resp, o.json)
		return nil
	}
	list := &cobra.Command{Use: "list", Short: "List held drafts", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return do(cmd, review.Request{Op: "list"}) }}
	show := &cobra.Command{Use: "show ID", Short: "Show a held draft and why it was held", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error { return do(cmd, review.Request{Op: "show", ID: a[0]}) }}
	approve := &cobra.Command{Use: "approve [ID...] [--session S] [--profile P] [--type T] [--risk R] [--all] [--yes] [--supersede | --title TITLE]",
		Short: "Promote held drafts: one id, several, or what a filter selects",
		Long: `Promote held drafts. A draft whose title or subject names a note in force
(or a withheld one) is never promoted beside it: choose --supersede (the note
in force is deprecated, superseded_by the new one, in the same commit),
--title (promote it under another title; one id only), or reject it. Without
a choice the approval fails and names the note.`,
		Example: `  fedmem review --vault ~/vault approve a1b2
  fedmem review --vault ~/vault approve a1b2 c3d4 e5f6
  fedmem review --vault ~/vault approve --session 20261201T101500.1Z-9f3e0a1b2c3d --yes
  fedmem review --vault ~/vault approve --profile ci --type Fact --risk low
  fedmem review --vault ~/vault approve a1b2 --supersede`,
		RunE: func(cmd *cobra.Command, a []string) error { return o.decide(cmd, "approve", a) }}
	approve.Flags().BoolVar(&o.supersede, "supersede", false, "deprecate the note(s) in force the draft contradicts, in the promotion's commit")
	approve.Flags().StringVar(&o.title, "title", "", "promote the draft under this title instead (retitle; one id)")
	reject := &cobra.Command{Use: "reject [ID...] [filters] --reason TEXT",
		Short: "Reject held drafts (remembered): one id, several, or what a filter selects",
		RunE: func(cmd *cobra.Command, a []string) error {
			if o.reason == "" {
				return usageErrorf("reject needs --reason TEXT")
			}
			return o.decide(cmd, "reject", a)
		}}
	reject.Flags().StringVar(&o.reason, "reason", "", "why (recorded and shown to the agent)")
	for _, c := range []*cobra.Command{approve, reject} {
		f := c.Flags()
		f.StringVar(&o.filter.Session, "session", "", "only drafts of this session")
		f.StringVar(&o.filter.Profile, "profile", "", "only drafts of sessions the gate proved ran under this profile")
		f.StringVar(&o.filter.Type, "type", "", "only drafts of this type (Fact, Decision, …)")
		f.StringVar(&o.filter.Risk, "risk", "", "only drafts of this risk (low, medium, high)")
		f.BoolVar(&o.filter.All, "all", false, "every held draft (when no other filter is given)")
		f.BoolVar(&o.yes, "yes", false, "decide a batch without asking (required when stdin is not a terminal)")
	}
	cmd.AddCommand(list, show, approve, reject, newReviewReverifyCmd(o))
	return cmd
}

// decide approves or rejects what the reviewer named. One id and no filter
// is a single review, as before batches; anything else is a batch: the gate
// resolves the selection (op select), the reviewer sees it and confirms,
// and the gate then decides exactly the full ids that were shown.
func (o *reviewOptions) decide(cmd *cobra.Command, op string, ids []string) error {
	out := cmd.OutOrStdout()
	if len(ids) == 0 && !o.filter.Criteria() {
		return usageErrorf("%s needs an ID, several IDs, or a filter (--session, --profile, --type, --risk, --all)", op)
	}
	if o.filter.All && (o.filter.Session != "" || o.filter.Profile != "" || o.filter.Type != "" || o.filter.Risk != "") {
		return usageErrorf("--all selects every held draft: give it alone, or filters without it")
	}
	if len(ids) == 1 && !o.filter.Criteria() {
		resp, err := o.ask(review.Request{Op: op, ID: ids[0], Reason: o.reason, Supersede: o.supersede, Title: o.title})
		if err != nil {
			return err
		}
		printReview(out, op, resp, o.json)
		return nil
	}
	if o.title != "" {
		return usageErrorf("--title names one note: give it with one id, not a batch")
	}
	if o.supersede {
		// A batch shows ids, paths and risks, not the notes an approval
		// would retire: superseding is decided one draft at a time.
		return usageErrorf("--supersede retires a note in force: give it with one id (fedmem review show ID names the note), not a batch")
	}
	f := o.filter
	sel, err := o.ask(review.Request{Op: "select", IDs: ids, Filter: &f})
	if err != nil {
		return err
	}
	verb := map[string]string{"approve": "approve (promote)", "reject": "reject"}[op]
	if !o.json || !o.yes {
		w := out
		if o.json {
			w = cmd.ErrOrStderr()
		}
		fmt.Fprintf(w, "%d held draft(s) to %s:\n", len(sel.Decisions), verb)
		for _, d := range sel.Decisions {
			fmt.Fprintf(w, "  %s\n", listLine(d, sel.Short))
		}
	}
	if !o.yes {
		if !o.isTerminal() {
			return usageErrorf("%d drafts selected and stdin is not a terminal: add --yes to %s them", len(sel.Decisions), op)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "%s these %d draft(s)? [y/N] ", op, len(sel.Decisions))
		line, _ := bufio.NewReader(o.input()).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			fmt.Fprintln(cmd.ErrOrStderr(), "nothing decided")
			return &exitError{Code: 1, Err: errors.New("not confirmed")}
		}
	}
	full := make([]string, len(sel.Decisions))
	for i, d := range sel.Decisions {
		full[i] = d.ID
	}
	resp, err := o.ask(review.Request{Op: op, IDs: full, Reason: o.reason, Supersede: o.supersede})
	if resp == nil {
		return err
	}
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(resp)
	} else {
		for _, it := range resp.Batch {
			if it.Error != "" {
				fmt.Fprintf(out, "%s not decided: %s\n", shortOf(it.ID, sel.Short), visible(it.Error))
				continue
			}
			printDecided(out, it.Decision, resp.Reviewer, sel.Short)
		}
		failed := review.BatchFailed(resp.Batch)
		fmt.Fprintf(out, "%d of %d draft(s) %sed by %s", len(resp.Batch)-failed, len(full), strings.TrimSuffix(op, "e"), resp.Reviewer)
		if failed > 0 {
			fmt.Fprintf(out, "; %d not decided", failed)
		}
		fmt.Fprintln(out)
	}
	return err
}

func (o *reviewOptions) input() io.Reader {
	if o.stdin != nil {
		return o.stdin
	}
	return os.Stdin
}

func (o *reviewOptions) isTerminal() bool {
	if o.terminal != nil {
		return o.terminal()
	}
	return term.IsTerminal(int(os.Stdin.Fd()))
}

// shortOf is the unique short id the gate gave id, the full id without one.
func shortOf(id string, s map[string]string) string {
	if v := s[id]; v != "" {
		return v
	}
	return id
}

// listLine is one held draft in a list: short id, session, name, target,
// type, risk and the origin the gate proved.
func listLine(d gate.Decision, s map[string]string) string {
	return fmt.Sprintf("%-12s %s/%s  %s  %s  risk %s  origin %s", shortOf(d.ID, s), d.Session, visible(d.Draft), d.Path, orUnknown(d.Type), orUnknown(d.Risk), orUnknown(d.Origin))
}

func printDecided(w io.Writer, d *gate.Decision, reviewer string, s map[string]string) {
	fmt.Fprintf(w, "%s %s by %s", shortOf(d.ID, s), d.State, reviewer)
	if d.Commit != "" {
		fmt.Fprintf(w, ": %s @ %s", d.Path, d.Commit)
	}
	fmt.Fprintln(w)
}

// visible makes a held draft safe to print on a reviewer's terminal: control
// characters (other than newline and tab) and every invisible or reordering
// code point the gate flags are shown as <U+XXXX>, so a draft cannot hide
// text or drive the terminal.
func visible(s string) string { return validate.Visible(s) }

func printReview(w io.Writer, op string, r *review.Response, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(r)
		return
	}
	switch op {
	case "list":
		if len(r.Decisions) == 0 {
			fmt.Fprintln(w, "nothing held for review")
		}
		for _, d := range r.Decisions {
			fmt.Fprintln(w, listLine(d, r.Short))
		}
	case "show":
		d := r.Decision
		fmt.Fprintf(w, "id:      %s\nstate:   %s\nsession: %s\norigin:  %s\ndraft:   %s\nsha256:  %s\npath:    %s\nrisk:    %s\n", d.ID, d.State, d.Session, orUnknown(d.Origin), visible(d.Draft), d.SHA256, d.Path, d.Risk)
		for _, f := range d.Reasons {
			fmt.Fprintf(w, "  %s\n", visible(f.String()))
		}
		if c := r.Context; c != nil {
			printShowContext(w, c)
		}
		if r.Draft != "" {
			fmt.Fprintf(w, "\n--- the draft as the agent wrote it ---\n%s", visible(r.Draft))
		}
	default:
		printDecided(w, r.Decision, r.Reviewer, nil)
	}
}

// orUnknown shows the gate's proven origin of a session (decisions recorded
// before origins were, say "unknown").
func orUnknown(o string) string {
	if o == "" {
		return "unknown"
	}
	return o
}

// printShowContext prints what the gate computed for a reviewer: the
// session as proven, where an approval writes, the diffs against notes in
// force it touches, and the sources' state. Every string from the vault or
// the draft goes through visible.
func printShowContext(w io.Writer, c *review.ShowContext) {
	p := c.Provenance
	fmt.Fprintf(w, "\nprovenance (%s): %s\n", visible(p.Origin), p.Meaning)
	if p.Why != "" {
		fmt.Fprintf(w, "  not proven: %s\n", visible(p.Why))
	}
	if p.Profile != "" {
		fmt.Fprintf(w, "  profile: %s  hash %s\n", visible(p.Profile), p.ProfileHash)
	}
	if p.User != "" || p.UID != 0 {
		fmt.Fprintf(w, "  agent:   %s (uid %d)\n", orUnknown(p.User), p.UID)
	}
	if len(p.Command) > 0 {
		fmt.Fprintf(w, "  command: %s\n", oneLine(strings.Join(p.Command, " ")))
	}
	if p.Workdir != "" {
		fmt.Fprintf(w, "  workdir: %s\n", visible(p.Workdir))
	}
	if p.Started != "" {
		fmt.Fprintf(w, "  started: %s  ended: %s  vault HEAD at start: %s\n", p.Started, orUnknown(p.Ended), orUnknown(p.VaultHead))
	}
	if c.Target != "" {
		fmt.Fprintf(w, "approving writes: %s\n", visible(c.Target))
	}
	for _, s := range c.Sources {
		state := "in force"
		switch {
		case s.Problem != "":
			state = s.Problem
		case !s.InForce:
			state = "not in force (" + s.Status + ")"
		}
		fmt.Fprintf(w, "source: %s  %s  %s\n", visible(s.Path), orUnknown(s.Blob), state)
	}
	if len(c.Sources) == 0 {
		fmt.Fprintln(w, "sources: none cited")
	}
	for _, v := range c.Verifiers {
		fmt.Fprintf(w, "verifier: %s  %s  %s\n", visible(v.Name), v.Outcome, oneLine(v.Detail))
	}
	if pv := c.Previous; pv != nil {
		by := ""
		if pv.Reviewer != "" {
			by = " by " + visible(pv.Reviewer)
			if pv.Reason != "" {
				by += ": " + oneLine(pv.Reason)
			}
		}
		fmt.Fprintf(w, "\nresubmitted: replaces %s (%s%s, first seen %s); what changed since:\n%s", pv.ID, pv.State, by, pv.FirstSeen.UTC().Format(time.RFC3339), visible(pv.Diff))
	}
	for _, n := range c.Related {
		fmt.Fprintf(w, "\n%s %s (%s):\n%s", n.Relation, visible(n.Path), n.Status, visible(n.Diff))
	}
	if len(c.Related) == 0 && c.Rendered != "" {
		fmt.Fprintf(w, "\n--- the note as approving would commit it (no note in force at that path, superseded or contradicted) ---\n%s", visible(c.Rendered))
	}
	if c.Problem != "" {
		fmt.Fprintf(w, "context incomplete: %s\n", visible(c.Problem))
	}
}

// oneLine is visible with newlines and tabs shown as \n and \t, for a
// field that must stay on its line.
func oneLine(s string) string { return validate.OneLine(s) }
