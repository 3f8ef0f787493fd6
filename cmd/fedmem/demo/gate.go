package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/fedmem/fedmem/gate"
	"github.com/fedmem/fedmem/vault"
)

// GateStep prints section 7 and, with o.Gate, runs one pass of the gate; it
// reports whether the gate failed the demo.
func GateStep(ctx context.Context, w io.Writer, o Options, l Layout, headBefore string) (failed bool) {
	switch {
	case !o.Gate:
		fmt.Fprintf(w, "\n7. The gate\n   skipped (--no-gate): the drafts stay in the inbox.\n")
	case l.TwoUsers:
		fmt.Fprintf(w, "\n7. The gate, as its own user: `fedmem gate once --vault %s` run as uid %d (groups %d)\n", l.Vault, GateUID, AgentGID)
	default:
		fmt.Fprintf(w, "\n7. The gate, in the agent's own uid: `fedmem gate once --allow-same-user --vault %s`\n", l.Vault)
	}
	if o.Gate {
		if err := RunGate(ctx, w, o.Self, l, headBefore); err != nil {
			fmt.Fprintf(w, "   gate failed: %v\n", err)
			return true
		}
	}
	return false
}

// RunGate runs one pass of the gate over the vault and shows each decision
// and the commits it made. As root it runs `fedmem gate once --json` as the
// demo's gate uid, from a copy of self in the demo directory (the original
// may lie where that uid cannot reach); otherwise it runs the gate in this
// process in same-user mode and says what that gives up.
func RunGate(ctx context.Context, w io.Writer, self string, l Layout, headBefore string) error {
	var s *gate.Summary
	if l.TwoUsers {
		var err error
		if s, err = gateAsUser(ctx, self, l.Base, l.Vault); err != nil {
			return err
		}
	} else {
		g, err := gate.Open(gate.Options{Vault: l.Vault, AllowSameUser: true})
		if err != nil {
			return err
		}
		defer g.Close()
		if s, err = g.Once(); err != nil {
			return err
		}
	}
	PrintGateSummary(w, s)
	if err := printGateCommits(w, l.Vault, headBefore, s); err != nil {
		return err
	}
	if len(s.Errors) > 0 {
		return fmt.Errorf("%d gate error(s)", len(s.Errors))
	}
	return nil
}

// PrintGateSummary prints the gate pass's counts and decisions.
func PrintGateSummary(w io.Writer, s *gate.Summary) {
	fmt.Fprintf(w, "   one pass of the gate: %d promoted, %d pending review, %d rejected", s.Promoted, s.Pending, s.Rejected)
	if s.Deferred > 0 {
		fmt.Fprintf(w, ", %d deferred", s.Deferred)
	}
	fmt.Fprintln(w)
	for _, d := range s.Decisions {
		fmt.Fprintf(w, "   %-9s %s/%s", d.State, d.Session, d.Draft)
		if d.Path != "" {
			fmt.Fprintf(w, " -> %s", d.Path)
		}
		if d.Commit != "" {
			fmt.Fprintf(w, " (commit %s)", short(d.Commit))
		}
		fmt.Fprintln(w)
		for _, r := range d.Reasons {
			fmt.Fprintf(w, "             %s\n", r)
		}
	}
	for _, warn := range s.Warnings {
		fmt.Fprintf(w, "   note: %s\n", warn)
	}
	for _, e := range s.Errors {
		fmt.Fprintf(w, "   error: %s\n", e)
	}
}

// printGateCommits shows the gate's commits since headBefore and the
// frontmatter of each promoted note as committed.
func printGateCommits(w io.Writer, v, headBefore string, s *gate.Summary) error {
	head, err := vault.ReadHead(v)
	if err != nil {
		return err
	}
	if head == headBefore {
		fmt.Fprintf(w, "   no commit (nothing promoted)\n")
		return nil
	}
	log, err := git(v, "log", "--format=%h %an <%ae>: %s", headBefore+".."+head)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   commits by the gate:\n%s", indent(log, "     "))
	for _, d := range s.Decisions {
		if d.State != gate.StatePromoted || d.Path == "" {
			continue
		}
		body, err := git(v, "show", head+":"+d.Path)
		if err != nil {
			return err
		}
		fm := frontmatter(body)
		fmt.Fprintf(w, "   %s as committed (provenance written by the gate, not the draft):\n%s", d.Path, indent(fm, "     | "))
	}
	return nil
}

// gateAsUser runs `fedmem gate once --json` as the demo's gate uid with the
// agents' group, and decodes its summary.
func gateAsUser(ctx context.Context, self, base, v string) (*gate.Summary, error) {
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	b, err := os.ReadFile(self)
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(base, "fedmem")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "gate", "once", "--vault", v, "--json")
	cmd.Dir = base
	cmd.Env = append(WithoutEnv(os.Environ(), "HOME"), "HOME="+base)
	cmd.SysProcAttr = credential(GateUID, GateUID, AgentGID)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var s gate.Summary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		return nil, fmt.Errorf("fedmem gate once as uid %d: %v; output %q; stderr:\n%s", GateUID, errors.Join(runErr, err), firstLines(stdout.String(), 5), indent(lastLines(stderr.String(), 10), "     "))
	}
	// Exit status 1 means something was left undecided: the summary's
	// errors say what, and RunGate reports them.
	return &s, nil
}
