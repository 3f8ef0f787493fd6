package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedmem/fedmem/gate"
	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/repo"
)

// demoAgent is the hostile agent script the demo runs inside fedmem-run.
//
//go:embed demo/agent.sh
var demoAgent string

// demoMark is what the agent script writes wherever it can; the demo looks
// for it on the host afterwards.
const demoMark = "fedmem-demo-was-here"

// demoOtherSession is an inbox directory made before the run, standing for
// another agent's session: the demo agent must neither see nor change it.
const demoOtherSession = "demo-other-session"

// When the demo runs as root it sets the vault up as a real install would: a
// dedicated gate uid (no passwd entry needed) owns the vault, and the inbox
// belongs to an agents' group the gate is a member of, so the gate can claim
// drafts from session directories (mode 2770) that agents own.
//
// As root, fedmem-run never runs the agent as uid 0 (guarantee 5): the demo
// names its agent user with --agent-user, a uid whose primary group is the
// agents' group, as a profile's run_as would in a root install.
const (
	demoGateUID   = 64290
	demoAgentGID  = 64291
	demoAgentUID  = 64292
	demoAgentUser = "64292:64291"
)

// errDemoFailed says the demo found a protection that did not hold; the
// account printed before it says which.
var errDemoFailed = errors.New("demo failed: something that must be blocked was not (see above)")

type demoOptions struct {
	dir     string        // parent of the demo's temporary directory
	keep    bool          // keep the demo directory afterwards
	runBin  string        // fedmem-run; default: next to this binary
	timeout time.Duration // for the agent run
	noGate  bool          // skip the gate
	// self is the fedmem binary the gate runs from as root; "" means this
	// executable (tests set it: their executable is the test binary).
	self string
}

func init() {
	subcommands = append(subcommands, newDemoCmd)
}

func newDemoCmd() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a hostile agent against a fresh demo vault and show what was blocked",
		Long: `demo creates a fresh vault, a workdir and a demo home (with a fake
~/.ssh key) in a temporary directory, then runs fedmem-run with a hostile
agent script that tries to write to the vault's notes, its contract, .git,
other sessions' inboxes, /etc, ~/.bashrc and ~/.ssh, and drops three drafts in
its inbox (a good note, one with a forged "status: approved", one with a
planted AWS key). It then checks from outside that the vault and the host are
unchanged, prints the session report, and runs one pass of the gate (what
"fedmem gate once" does) to show which drafts are promoted, held for review
or rejected, and why. Agent and gate run as the same user here, so the gate
runs in its same-user mode ("fedmem gate once --allow-same-user").

Exit status 0 means every attempt that must be blocked was blocked.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), o, !o.noGate, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", "", "parent directory for the demo files (default /var/tmp, else $TMPDIR)")
	cmd.Flags().BoolVar(&o.keep, "keep", false, "keep the demo vault, workdir and report afterwards")
	cmd.Flags().StringVar(&o.runBin, "fedmem-run", "", "path of fedmem-run (default: next to this binary, else $PATH)")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 2*time.Minute, "time limit for the agent run")
	cmd.Flags().BoolVar(&o.noGate, "no-gate", false, "do not run the gate after the agent")
	return cmd
}

// demoResult is one line the agent script reported.
type demoResult struct {
	expect, outcome, label, detail string
}

// demoReport is the part of fedmem-run's --report the demo shows.
type demoReport struct {
	Session        string          `json:"session"`
	Profile        string          `json:"profile"`
	ProfileHash    string          `json:"profile_hash"`
	VaultHeadStart string          `json:"vault_head_start"`
	VaultHeadEnd   string          `json:"vault_head_end"`
	ExitCode       int             `json:"exit_code"`
	DurationMS     int64           `json:"duration_ms"`
	Layers         json.RawMessage `json:"layers"`
	InboxFiles     []struct {
		Path string `json:"path"`
		Size int64  `json:"size"`
		Type string `json:"type"`
	} `json:"inbox_files"`
	Warnings []string `json:"warnings"`
}

func runDemo(ctx context.Context, o demoOptions, withGate bool, w io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	runBin, err := findFedmemRun(o.runBin)
	if err != nil {
		return err
	}
	parent := o.dir
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
		return fmt.Errorf("demo directory: %w", err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(base)
	}
	v := filepath.Join(base, "vault")
	work := filepath.Join(base, "work")
	home := filepath.Join(base, "home")
	report := filepath.Join(base, "report.json")

	// 1. A fresh vault, another session's draft, a workdir and a demo home.
	twoUsers := os.Geteuid() == 0
	var initOpts repo.InitOptions
	if twoUsers {
		initOpts.Gate = &vault.Owner{UID: demoGateUID, GID: demoGateUID}
		initOpts.AgentGroup = &vault.Group{GID: demoAgentGID}
	} else {
		// Same-user mode: the launcher group is your own group, so the
		// session record is "proven" only against other users; it shows
		// the mechanism, not its strength (docs/gate.md, "Trust model").
		initOpts.LauncherGroup = &vault.Group{GID: os.Getegid()}
	}
	res, err := repo.Init(v, initOpts)
	if err != nil {
		return fmt.Errorf("fedmem init %s: %w", v, err)
	}
	if err := demoTrustPolicy(v, twoUsers); err != nil {
		return fmt.Errorf("demo policy: %w", err)
	}
	other := filepath.Join(v, vault.InboxDir, demoOtherSession)
	if err := os.Mkdir(other, 0o700); err != nil {
		return err
	}
	// Like fedmem-run's session directories: the group (inherited from a
	// setgid inbox) lets the gate in.
	if err := os.Chmod(other, os.ModeSetgid|0o770); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(other, "draft.md"), []byte("---\ntype: Fact\ntitle: Another agent's draft\n---\n\nOnly that agent and the gate may see this.\n"), 0o644); err != nil {
		return err
	}
	if err := makeDemoHome(home); err != nil {
		return err
	}
	if err := os.Mkdir(work, 0o755); err != nil {
		return err
	}
	if twoUsers {
		// The workdir is the agent user's, as a run_as user's checkout would be.
		if err := os.Chown(work, demoAgentUID, demoAgentGID); err != nil {
			return err
		}
	}

	headBefore, err := vault.ReadHead(v)
	if err != nil {
		return err
	}
	before, err := snapshot(v)
	if err != nil {
		return err
	}
	hostFiles := []string{"/etc/passwd", filepath.Join(home, ".bashrc"), filepath.Join(home, ".ssh", "id_ed25519"), filepath.Join(home, ".aws", "credentials")}
	hostBefore := hashFiles(hostFiles)
	planted := []string{"/etc/fedmem-demo-pwned", "/usr/local/bin/fedmem-demo-pwned", filepath.Join(home, ".ssh", "authorized_keys")}
	plantedBefore := existing(planted)

	fmt.Fprintf(w, "fedmem demo: a hostile agent against a fresh vault\n\n")
	fmt.Fprintf(w, "  vault    %s (HEAD %s, gate user %s)\n", v, short(headBefore), ownerName(res.Gate))
	if twoUsers {
		fmt.Fprintf(w, "  inbox    %s/ group %d, mode %s: agents (in that group) create sessions; the gate (uid %d, also a member) claims drafts\n", vault.InboxDir, demoAgentGID, res.InboxMode, demoGateUID)
		fmt.Fprintf(w, "  agent    uid %d, group %d (fedmem-run --agent-user %s: started by root, the agent never runs as uid 0)\n", demoAgentUID, demoAgentGID, demoAgentUser)
	}
	fmt.Fprintf(w, "  policy   auto_promote trusts sessions of the built-in profile %q for type Fact; everything else waits for a reviewer\n", demoTrustedProfile)
	fmt.Fprintf(w, "  workdir  %s\n", work)
	fmt.Fprintf(w, "  home     %s (a demo home with a fake ~/.ssh key and ~/.aws credentials)\n", home)
	agentArgs := []string{"--vault", v, "--workdir", work}
	if twoUsers {
		agentArgs = append(agentArgs, "--agent-user", demoAgentUser)
	}
	fmt.Fprintf(w, "  running  %s %s --report %s -- /bin/sh -c <demo agent script>\n\n", runBin, strings.Join(agentArgs, " "), report)

	agentEnv := append(withoutEnv(os.Environ(), "HOME", "FEDMEM_VAULT", "FEDMEM_INBOX", "FEDMEM_SESSION"), "HOME="+home)
	explainMounts(ctx, w, runBin, agentArgs, work, agentEnv, twoUsers)

	// 2. The agent.
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	cmd := exec.CommandContext(rctx, runBin, append(agentArgs, "--report", report, "--", "/bin/sh", "-c", demoAgent, "fedmem-demo-agent")...)
	cmd.Dir = work
	cmd.Env = agentEnv
	if twoUsers {
		// Root launches; the agent user's primary group is the agents'
		// group: that is what lets it reach its session in 90-inbox/
		// (mode 03770), which root creates for it.
		cmd.SysProcAttr = gateCredential(0, 0, demoAgentGID)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = nil
	runErr := cmd.Run()
	results := parseDemoOutput(stdout.Bytes())
	if runErr != nil {
		fmt.Fprintf(w, "fedmem-run failed: %v\n%s\n", runErr, indent(stderr.String(), "  | "))
		if len(results) == 0 {
			return fmt.Errorf("fedmem-run did not run the agent: %w", runErr)
		}
	}

	failed := false
	var blocked, leaked, allowed, info []demoResult
	for _, r := range results {
		switch {
		case r.expect == "blocked" && r.outcome == "failed":
			blocked = append(blocked, r)
		case r.expect == "blocked":
			leaked = append(leaked, r)
		case r.expect == "allowed":
			allowed = append(allowed, r)
		default:
			info = append(info, r)
		}
	}

	fmt.Fprintf(w, "1. What the agent is (as it sees itself)\n")
	for _, r := range info {
		fmt.Fprintf(w, "   %-28s %s\n", r.label, r.detail)
	}

	fmt.Fprintf(w, "\n2. Attempts that must fail: %d blocked, %d NOT blocked\n", len(blocked), len(leaked))
	for _, r := range leaked {
		failed = true
		fmt.Fprintf(w, "   NOT BLOCKED  %s\n                %s\n", r.label, r.detail)
	}
	for _, r := range blocked {
		fmt.Fprintf(w, "   blocked  %s\n            %s\n", r.label, r.detail)
	}
	if len(blocked)+len(leaked) == 0 {
		failed = true
		fmt.Fprintf(w, "   the agent reported no attempt at all (stdout: %q)\n", firstLines(stdout.String(), 3))
	}

	fmt.Fprintf(w, "\n3. What it was allowed to do\n")
	for _, r := range allowed {
		mark := "ok    "
		if r.outcome != "ok" {
			mark = "FAILED"
			failed = true
		}
		fmt.Fprintf(w, "   %s %s  %s\n", mark, r.label, r.detail)
	}

	var rep demoReport
	repBytes, repErr := os.ReadFile(report)
	if repErr == nil {
		repErr = json.Unmarshal(repBytes, &rep)
	}
	session := rep.Session
	if session == "" {
		session = sessionFromInfo(info)
	}

	fmt.Fprintf(w, "\n4. What landed in the inbox (%s/%s/)\n", vault.InboxDir, session)
	if session != "" && vault.ValidSessionID(session) {
		ents, err := os.ReadDir(vault.InboxPath(v, session))
		if err != nil {
			fmt.Fprintf(w, "   cannot list it: %v\n", err)
		}
		for _, e := range ents {
			fi, err := e.Info()
			if err != nil {
				continue
			}
			fmt.Fprintf(w, "   %-40s %6d bytes  %s\n", e.Name(), fi.Size(), fileKind(fi.Mode()))
		}
	} else {
		failed = true
		fmt.Fprintf(w, "   no session id in the report (%v)\n", repErr)
	}

	// 5. The vault and the host, checked from outside.
	fmt.Fprintf(w, "\n5. The vault outside the inbox, checked from outside the sandbox\n")
	headAfter, err := vault.ReadHead(v)
	if err != nil {
		return err
	}
	if headAfter == headBefore {
		fmt.Fprintf(w, "   HEAD           %s before and after: unchanged\n", short(headBefore))
	} else {
		failed = true
		fmt.Fprintf(w, "   HEAD           CHANGED: %s -> %s\n", short(headBefore), short(headAfter))
	}
	status, err := gitStatus(v)
	switch {
	case err != nil:
		failed = true
		fmt.Fprintf(w, "   git status     %v\n", err)
	case status == "":
		fmt.Fprintf(w, "   git status     clean\n")
	default:
		failed = true
		fmt.Fprintf(w, "   git status     NOT CLEAN:\n%s", indent(status, "                  "))
	}
	after, err := snapshot(v)
	if err != nil {
		return err
	}
	diffs := diffSnapshots(before, after, session)
	if len(diffs) == 0 {
		fmt.Fprintf(w, "   files          %d files and folders compared (content, mode, owner, size, mtime): identical\n", len(before))
	} else {
		failed = true
		fmt.Fprintf(w, "   files          %d CHANGED:\n", len(diffs))
		for _, d := range diffs {
			fmt.Fprintf(w, "                  %s\n", d)
		}
	}
	hostAfter := hashFiles(hostFiles)
	hostChanged := false
	for _, f := range hostFiles {
		if hostBefore[f] != hostAfter[f] {
			hostChanged = true
			fmt.Fprintf(w, "   host           %s CHANGED\n", f)
		}
	}
	plantedAfter := existing(planted)
	for _, f := range planted {
		if plantedAfter[f] && !plantedBefore[f] {
			hostChanged = true
			fmt.Fprintf(w, "   host           %s was CREATED\n", f)
		}
	}
	if hostChanged {
		failed = true
	} else {
		fmt.Fprintf(w, "   host           /etc/passwd, ~/.bashrc, ~/.ssh and ~/.aws unchanged; nothing planted\n")
	}

	fmt.Fprintf(w, "\n6. Session report (%s)\n", report)
	if repErr != nil {
		failed = true
		fmt.Fprintf(w, "   no report: %v\n", repErr)
	} else {
		fmt.Fprintf(w, "   session %s, profile %s (%s), agent exit %d, %d ms\n", rep.Session, rep.Profile, short(rep.ProfileHash), rep.ExitCode, rep.DurationMS)
		fmt.Fprintf(w, "   vault HEAD at start %s, at end %s\n", short(rep.VaultHeadStart), short(rep.VaultHeadEnd))
		for _, f := range rep.InboxFiles {
			fmt.Fprintf(w, "   drafted %s (%d bytes, %s)\n", f.Path, f.Size, f.Type)
		}
		if len(rep.Layers) > 0 {
			var buf bytes.Buffer
			if json.Compact(&buf, rep.Layers) == nil {
				fmt.Fprintf(w, "   layers %s\n", buf.String())
			}
		}
		for _, s := range rep.Warnings {
			fmt.Fprintf(w, "   warning: %s\n", s)
		}
	}

	// 7. The gate.
	switch {
	case !withGate:
		fmt.Fprintf(w, "\n7. The gate\n   skipped (--no-gate): the drafts stay in the inbox.\n")
	case twoUsers:
		fmt.Fprintf(w, "\n7. The gate, as its own user: `fedmem gate once --vault %s` run as uid %d (groups %d)\n", v, demoGateUID, demoAgentGID)
	default:
		fmt.Fprintf(w, "\n7. The gate, in the agent's own uid: `fedmem gate once --allow-same-user --vault %s`\n", v)
	}
	if withGate {
		if err := demoGate(ctx, w, o.self, base, v, headBefore, twoUsers); err != nil {
			failed = true
			fmt.Fprintf(w, "   gate failed: %v\n", err)
		}
	}

	fmt.Fprintln(w)
	if o.keep {
		fmt.Fprintf(w, "The demo files are kept in %s\n", base)
	}
	if failed {
		return errDemoFailed
	}
	fmt.Fprintf(w, "RESULT: every write outside the session's inbox was blocked; the vault and the host are unchanged.\n")
	return nil
}

// demoGate runs one pass of the gate over the vault and shows each
// decision and the commits it made. As root it runs `fedmem gate once
// --json` as the demo's gate uid, from a copy of this binary in the demo
// directory (the original may lie where that uid cannot reach); otherwise it
// runs the gate in this process in same-user mode and says what that gives
// up.
func demoGate(ctx context.Context, w io.Writer, self, base, v, headBefore string, twoUsers bool) error {
	var s *gate.Summary
	if twoUsers {
		var err error
		if s, err = gateAsUser(ctx, self, base, v); err != nil {
			return err
		}
	} else {
		g, err := gate.Open(gate.Options{Vault: v, AllowSameUser: true})
		if err != nil {
			return err
		}
		defer g.Close()
		if s, err = g.Once(); err != nil {
			return err
		}
	}
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
	head, err := vault.ReadHead(v)
	if err != nil {
		return err
	}
	if head != headBefore {
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
	} else {
		fmt.Fprintf(w, "   no commit (nothing promoted)\n")
	}
	if len(s.Errors) > 0 {
		return fmt.Errorf("%d gate error(s)", len(s.Errors))
	}
	return nil
}

// explainMounts prints the mount table `fedmem-run --explain` shows for the
// run about to start (its session id differs: explain makes its own). It is
// informative only; a failure is reported and the demo goes on.
func explainMounts(ctx context.Context, w io.Writer, runBin string, args []string, work string, env []string, twoUsers bool) {
	cmd := exec.CommandContext(ctx, runBin, append(append([]string{}, args...), "--explain", "--", "/bin/sh")...)
	cmd.Dir = work
	cmd.Env = env
	if twoUsers {
		cmd.SysProcAttr = gateCredential(0, 0, demoAgentGID)
	}
	out, err := cmd.Output()
	if err != nil {
		fmt.Fprintf(w, "0. (fedmem-run --explain failed: %v)\n\n", err)
		return
	}
	var table []string
	in := false
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "KIND") {
			in = true
		}
		if in && strings.TrimSpace(line) == "" {
			break
		}
		if in {
			table = append(table, strings.TrimRight(line, " "))
		}
	}
	if len(table) == 0 {
		return
	}
	fmt.Fprintf(w, "0. The sandbox it runs in (fedmem-run --explain; the session directory name differs per run)\n%s\n", indent(strings.Join(table, "\n"), "   "))
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
	cmd.Env = append(withoutEnv(os.Environ(), "HOME"), "HOME="+base)
	cmd.SysProcAttr = gateCredential(demoGateUID, demoGateUID, demoAgentGID)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var s gate.Summary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		return nil, fmt.Errorf("fedmem gate once as uid %d: %v; output %q; stderr:\n%s", demoGateUID, errors.Join(runErr, err), firstLines(stdout.String(), 5), indent(lastLines(stderr.String(), 10), "     "))
	}
	// Exit status 1 means something was left undecided: the summary's
	// errors say what, and demoGate reports them.
	return &s, nil
}

// demoTrustedProfile is the profile fedmem-run picks for the demo agent;
// the demo policy trusts it (by its built-in hash).
const demoTrustedProfile = "default"

// demoTrustPolicy commits a policy that lets the demo's session promote an
// ordinary Fact on its own (a trusted profile, evidence that resolves), so
// the demo shows both a promotion from a trusted origin and drafts held for
// a reviewer. The commit is made as the gate user.
func demoTrustPolicy(v string, twoUsers bool) error {
	pol := "version: 1\nreviewers: [\"" + defaultReviewers()[0] + "\"]\nauto_promote:\n  profiles: [" + demoTrustedProfile + "]\n  types: [Fact]\n  max_per_session: 5\n"
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
			if err := os.Chown(f, demoGateUID, demoGateUID); err != nil {
				return err
			}
		}
	}
	args := [][]string{{"add", vault.PolicyFile, "10-projects/fedmem/sandbox.md"}, {"-c", "user.name=" + repo.GateName, "-c", "user.email=" + repo.GateEmail, "commit", "-q", "-m", "demo policy: trust the default profile for Facts"}}
	for _, a := range args {
		cmd := exec.Command("git", append([]string{"-c", "safe.directory=*", "-C", v}, a...)...)
		cmd.Env = append(withoutEnv(os.Environ(), "HOME"), "HOME="+v, "GIT_CONFIG_NOSYSTEM=1")
		if twoUsers {
			if err := os.Chown(p, demoGateUID, demoGateUID); err != nil {
				return err
			}
			cmd.SysProcAttr = gateCredential(demoGateUID, demoGateUID, demoAgentGID)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v: %s", a, err, out)
		}
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func findFedmemRun(flagPath string) (string, error) {
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

// makeDemoHome writes a home with things the sandbox must keep from the
// agent: a shell rc, a fake SSH key and fake AWS credentials.
func makeDemoHome(home string) error {
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

func parseDemoOutput(b []byte) []demoResult {
	var out []demoResult
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 5)
		if len(f) != 5 || f[0] != "FEDMEM-DEMO" {
			continue
		}
		out = append(out, demoResult{expect: f[1], outcome: f[2], label: f[3], detail: f[4]})
	}
	return out
}

func sessionFromInfo(info []demoResult) string {
	for _, r := range info {
		if _, s, ok := strings.Cut(r.detail, "session="); ok {
			return strings.Fields(s + " ")[0]
		}
	}
	return ""
}

// fsEntry is what the demo compares for each path of the vault.
type fsEntry struct {
	mode     fs.FileMode
	uid, gid int
	size     int64
	mtime    time.Time
	sum      string // content hash of regular files, target of symlinks
}

// snapshot records every path of the vault (including .git).
func snapshot(root string) (map[string]fsEntry, error) {
	m := map[string]fsEntry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		e := fsEntry{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime()}
		e.uid, e.gid = fileOwner(fi)
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s := sha256.Sum256(b)
			e.sum = hex.EncodeToString(s[:])
		case fi.Mode()&fs.ModeSymlink != 0:
			e.sum, _ = os.Readlink(p)
		}
		m[filepath.ToSlash(rel)] = e
		return nil
	})
	return m, err
}

// diffSnapshots lists what changed in the vault, except what the session
// may change: its own inbox directory and the session records fedmem-run
// writes, and the size/mtime of 90-inbox/ that gains those entries.
func diffSnapshots(before, after map[string]fsEntry, session string) []string {
	allowed := func(p string) bool {
		own := vault.InboxDir + "/" + session
		return (session != "" && (p == own || strings.HasPrefix(p, own+"/"))) ||
			p == vault.SessionsDir || strings.HasPrefix(p, vault.SessionsDir+"/")
	}
	var diffs []string
	for p, b := range before {
		a, ok := after[p]
		switch {
		case allowed(p):
		case !ok:
			diffs = append(diffs, p+": removed")
		case p == vault.InboxDir:
			if a.mode != b.mode || a.uid != b.uid || a.gid != b.gid {
				diffs = append(diffs, p+": mode or owner changed")
			}
		case a != b && !freshened(p, b, a):
			diffs = append(diffs, fmt.Sprintf("%s: changed (%s)", p, describeChange(b, a)))
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok && !allowed(p) {
			diffs = append(diffs, p+": created")
		}
	}
	sort.Strings(diffs)
	return diffs
}

// freshened: Git's split index names its shared part by the hash of its
// content (.git/sharedindex.<sha1>) and every git command that reads the
// index bumps that file's mtime (freshen_shared_index, so that
// splitIndex.sharedIndexExpire never removes one in use) — the `git status`
// of the check above does. A change of mtime alone there is Git's, not the
// agent's; any other change still counts.
func freshened(p string, b, a fsEntry) bool {
	if !strings.HasPrefix(p, ".git/sharedindex.") {
		return false
	}
	b.mtime, a.mtime = time.Time{}, time.Time{}
	return a == b
}

func describeChange(b, a fsEntry) string {
	var what []string
	if a.mode != b.mode {
		what = append(what, fmt.Sprintf("mode %v -> %v", b.mode, a.mode))
	}
	if a.uid != b.uid || a.gid != b.gid {
		what = append(what, fmt.Sprintf("owner %d:%d -> %d:%d", b.uid, b.gid, a.uid, a.gid))
	}
	if a.sum != b.sum || a.size != b.size {
		what = append(what, "content")
	}
	if !a.mtime.Equal(b.mtime) {
		what = append(what, "mtime")
	}
	return strings.Join(what, ", ")
}

// gitStatus is `git status --porcelain` of the vault outside the inbox,
// without taking the index lock (GIT_OPTIONAL_LOCKS=0), so that checking
// changes nothing.
func gitStatus(v string) (string, error) {
	return git(v, "status", "--porcelain", "--untracked-files=all", "--", ".", ":(exclude)"+vault.InboxDir)
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*", "-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

func hashFiles(paths []string) map[string]string {
	m := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			m[p] = "error: " + err.Error()
			continue
		}
		s := sha256.Sum256(b)
		m[p] = hex.EncodeToString(s[:])
	}
	return m
}

func existing(paths []string) map[string]bool {
	m := map[string]bool{}
	for _, p := range paths {
		_, err := os.Lstat(p)
		m[p] = err == nil
	}
	return m
}

func writable(dir string) error {
	f, err := os.CreateTemp(dir, ".fedmem-demo-probe-")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			if k == n {
				drop = true
			}
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

func ownerName(o vault.Owner) string {
	if o.Name != "" {
		return fmt.Sprintf("%s (uid %d)", o.Name, o.UID)
	}
	return fmt.Sprintf("uid %d", o.UID)
}

func short(id string) string {
	if id == "" {
		return "(none)"
	}
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func indent(s, prefix string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix) + "\n"
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSocket != 0:
		return "socket"
	}
	return m.Type().String()
}

// frontmatter returns the YAML frontmatter block of a note, with its
// delimiters, or the first lines when there is none.
func frontmatter(note string) string {
	lines := strings.Split(note, "\n")
	if len(lines) > 0 && lines[0] == "---" {
		for i := 1; i < len(lines) && i < 60; i++ {
			if lines[i] == "---" {
				return strings.Join(lines[:i+1], "\n")
			}
		}
	}
	return firstLines(note, 12)
}
