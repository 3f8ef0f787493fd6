package readers

import (
	"fmt"
	"io"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/fedmem/fedmem/gate/validate"
)

// The text forms of `fedmem audit readers` and `fedmem audit session`:
// every field a record or a draft could carry goes through
// validate.OneLine, so a session id or a path cannot drive the terminal.

// WriteText writes a for a reader: the sessions that opened its note, the
// "maybe" ones with why, and the sessions with no receipt; warnings go to
// errw.
func (a Answer) WriteText(out, errw io.Writer) {
	oneLine := validate.OneLine
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

// WriteText writes v for a reader: the record, the read receipt and the
// session's drafts with the gate's decision on each.
func (v *View) WriteText(out io.Writer) {
	oneLine := validate.OneLine
	fmt.Fprintf(out, "session %s\n  profile %s, agent %s (uid %d), workdir %s\n  started %s, ended %s, vault commit %s\n",
		oneLine(v.Session.Session), oneLine(v.Profile), oneLine(userName(v.UID)), v.UID, oneLine(v.Workdir), oneLine(v.Started), oneLine(orDash(v.Ended)), oneLine(short(v.VaultHeadStart)))
	if v.Changed {
		fmt.Fprintln(out, "  warning: the record in 90-inbox/.sessions/ differs from the gate's stored copy (shown)")
	}
	for _, p := range v.Problems {
		fmt.Fprintln(out, "  warning:", oneLine(p))
	}
	v.writeReads(out)
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

func (v *View) writeReads(out io.Writer) {
	oneLine := validate.OneLine
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
}

func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return strconv.Itoa(uid)
}

// short is an object id's first 12 characters, or "(none)".
func short(id string) string {
	if id == "" {
		return "(none)"
	}
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
