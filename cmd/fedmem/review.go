package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/fedmem/fedmem/gate"
	"github.com/fedmem/fedmem/gate/validate"
)

func init() {
	subcommands = append(subcommands, newReviewCmd)
}

type reviewOptions struct {
	vault, state, socket string
	json                 bool
	reason               string
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

func newReviewCmd() *cobra.Command {
	var o reviewOptions
	cmd := &cobra.Command{
		Use:   "review",
		Short: "List, show, approve or reject drafts the gate held for review",
		Long: `review talks to a running gate (fedmem gate run) over its unix socket. The
gate checks who you are from the kernel (SO_PEERCRED) against the policy's
reviewers; nothing you type can change that. Approving records
verified: human:<you> in the note and Fedmem-Reviewer: <you> in the commit.

ID may be the full id or any unique prefix (at least 4 characters) of the id
or of its random tail (the part after the last '-'): "fedmem review approve
a1b2". A prefix matching several drafts is refused with the candidates.`,
		Args: cobra.NoArgs,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.vault, "vault", "", "the vault directory (finds the socket next to it)")
	pf.StringVar(&o.state, "state", "", "the gate's state directory, if not the default")
	pf.StringVar(&o.socket, "socket", "", "the review socket path")
	pf.BoolVar(&o.json, "json", false, "print the response as JSON")
	do := func(cmd *cobra.Command, req gate.ReviewRequest) error {
		p, err := o.socketPath()
		if err != nil {
			return err
		}
		resp, err := gate.AskReview(p, req)
		if err != nil {
			return err
		}
		printReview(cmd.OutOrStdout(), req.Op, resp, o.json)
		return nil
	}
	list := &cobra.Command{Use: "list", Short: "List held drafts", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return do(cmd, gate.ReviewRequest{Op: "list"}) }}
	show := &cobra.Command{Use: "show ID", Short: "Show a held draft and why it was held", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error { return do(cmd, gate.ReviewRequest{Op: "show", ID: a[0]}) }}
	var supersede bool
	var title string
	approve := &cobra.Command{Use: "approve ID [--supersede | --title TITLE]", Short: "Promote a held draft", Args: cobra.ExactArgs(1),
		Long: `Promote a held draft. A draft whose title or subject names a note in force
(or a withheld one) is never promoted beside it: choose --supersede (the note
in force is deprecated, superseded_by the new one, in the same commit),
--title (promote it under another title), or reject it. Without a choice the
approval fails and names the note.`,
		RunE: func(cmd *cobra.Command, a []string) error {
			return do(cmd, gate.ReviewRequest{Op: "approve", ID: a[0], Supersede: supersede, Title: title})
		}}
	approve.Flags().BoolVar(&supersede, "supersede", false, "deprecate the note(s) in force the draft contradicts, in the promotion's commit")
	approve.Flags().StringVar(&title, "title", "", "promote the draft under this title instead (retitle)")
	reject := &cobra.Command{Use: "reject ID --reason TEXT", Short: "Reject a held draft (remembered)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if o.reason == "" {
				return usageErrorf("reject needs --reason TEXT")
			}
			return do(cmd, gate.ReviewRequest{Op: "reject", ID: a[0], Reason: o.reason})
		}}
	reject.Flags().StringVar(&o.reason, "reason", "", "why (recorded and shown to the agent)")
	cmd.AddCommand(list, show, approve, reject, newReviewReverifyCmd(&o))
	return cmd
}

// visible makes a held draft safe to print on a reviewer's terminal: control
// characters (other than newline and tab) and every invisible or reordering
// code point the gate flags are shown as <U+XXXX>, so a draft cannot hide
// text or drive the terminal.
func visible(s string) string {
	var b strings.Builder
	for _, r := range s {
		_, inv := validate.Invisible(r)
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || inv || r == utf8.RuneError:
			fmt.Fprintf(&b, "<U+%04X>", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func printReview(w io.Writer, op string, r *gate.ReviewResponse, asJSON bool) {
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
			fmt.Fprintf(w, "%s  %s/%q  %s  risk %s  origin %s\n", d.ID, d.Session, d.Draft, d.Path, d.Risk, orUnknown(d.Origin))
		}
	case "show":
		d := r.Decision
		fmt.Fprintf(w, "id:      %s\nstate:   %s\nsession: %s\norigin:  %s\ndraft:   %q\nsha256:  %s\npath:    %s\nrisk:    %s\n", d.ID, d.State, d.Session, orUnknown(d.Origin), d.Draft, d.SHA256, d.Path, d.Risk)
		for _, f := range d.Reasons {
			fmt.Fprintf(w, "  %s\n", f.String())
		}
		if r.Draft != "" {
			fmt.Fprintf(w, "\n%s", visible(r.Draft))
		}
	default:
		d := r.Decision
		fmt.Fprintf(w, "%s %s by %s", d.ID, d.State, r.Reviewer)
		if d.Commit != "" {
			fmt.Fprintf(w, ": %s @ %s", d.Path, d.Commit)
		}
		fmt.Fprintln(w)
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
