package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/mounts/host"
	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/sandbox"
	"github.com/fedmem/fedmem/sandbox/netproxy"
	"github.com/fedmem/fedmem/vault"
)

type options struct {
	vault, profile, workdir, report string
	explain, jsonOut                bool
	timeout                         time.Duration
	events                          string
	network                         string
	argv                            []string
}

const usage = `fedmem-run [flags] [--] CMD [ARGS…]

Runs CMD in a sandbox: the vault is read-only as a whole, the session's
inbox ($FEDMEM_INBOX = VAULT/90-inbox/<session>/) is the only writable vault
path, the workdir is writable (unless it lies inside the vault), home is
read-only with secrets masked, /tmp is private, and the agent holds no
capability, runs with no_new_privs, a seccomp filter and Landlock.

Exit status: the agent's; 125 fedmem error (bad profile, missing vault,
sandbox could not be built or verified); 126 CMD cannot be executed;
127 CMD not found; 128+n CMD killed by signal n.`

func run(args []string, stdin, stdout, stderr *os.File) int {
	// The standard library's flag package, not cobra: this binary starts
	// twice per launch, and flag stops at the first non-flag argument,
	// which is exactly "everything after CMD belongs to CMD".
	var o options
	f := flag.NewFlagSet("fedmem-run", flag.ContinueOnError)
	f.SetOutput(stderr)
	f.Usage = func() {} // help goes to stdout, a usage error to stderr: see below
	f.StringVar(&o.vault, "vault", os.Getenv("FEDMEM_VAULT"), "vault directory (default $FEDMEM_VAULT)")
	f.StringVar(&o.profile, "profile", "", "profile name or YAML file (default: the built-in named after CMD, else \"default\")")
	f.StringVar(&o.workdir, "workdir", "", "working directory, writable unless inside the vault (default: current directory)")
	f.StringVar(&o.report, "report", "", "write a JSON session report to FILE")
	f.BoolVar(&o.explain, "explain", false, "print the mount plan and layers, then exit")
	f.BoolVar(&o.jsonOut, "json", false, "with --explain: print the plan as JSON")
	f.StringVar(&o.network, "network", "", "none, allowlist or host: may only tighten the profile's network")
	f.StringVar(&o.events, "events", "", "append the session's events (start, layers, limits hit, exit) to FILE as JSON lines")
	f.DurationVar(&o.timeout, "timeout", 0, "kill the whole sandbox after this long (exit 124); may only shorten the profile's limits.wall_time")
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: %s\n\nFlags (one or two dashes):\n", usage)
			f.SetOutput(stdout)
			f.PrintDefaults()
			return 0
		}
		// flag printed what was wrong.
		fmt.Fprintln(stderr, "usage: fedmem-run [flags] [--] CMD [ARGS…] (fedmem-run --help lists the flags)")
		return sandbox.ExitFedmemError
	}
	o.argv = f.Args()
	code, err := execute(&o, stdin, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "fedmem-run: %v\n", err)
		if code == 0 {
			code = sandbox.ExitCodeOf(err)
		}
	}
	return code
}

// report is the JSON session report (fields are only ever added).
type report struct {
	Session        string          `json:"session"`
	Profile        string          `json:"profile"`
	ProfileHash    string          `json:"profile_hash"`
	Vault          string          `json:"vault"`
	Inbox          string          `json:"inbox"`
	Workdir        string          `json:"workdir"`
	Command        []string        `json:"command"`
	UID            int             `json:"uid"`
	Started        time.Time       `json:"started"`
	DurationMS     int64           `json:"duration_ms"`
	VaultHeadStart string          `json:"vault_head_start"`
	VaultHeadEnd   string          `json:"vault_head_end"`
	InboxFiles     []inboxFile     `json:"inbox_files"`
	InboxTruncated bool            `json:"inbox_truncated,omitempty"`
	ExitCode       int             `json:"exit_code"`
	LimitsHit      []string        `json:"limits_hit,omitempty"`
	Signal         int             `json:"signal,omitempty"`
	Error          *sandbox.Error  `json:"error,omitempty"`
	Layers         *sandbox.Layers `json:"layers"`
	Warnings       []string        `json:"warnings,omitempty"`
}

type inboxFile struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	Type string `json:"type"`
}

func execute(o *options, stdin, stdout, stderr *os.File) (int, error) {
	if len(o.argv) == 0 && !o.explain {
		return sandbox.ExitFedmemError, errors.New("no command given (usage: fedmem-run [flags] [--] CMD [ARGS…])")
	}
	profName := o.profile
	if profName == "" {
		profName = "default"
		if len(o.argv) > 0 {
			base := filepath.Base(o.argv[0])
			for _, b := range profiles.Builtins() {
				if b == base {
					profName = b
				}
			}
		}
	}
	prof, profHash, err := profiles.Load(profName)
	if err != nil {
		return sandbox.ExitFedmemError, err
	}
	if err := tighten(prof, o); err != nil {
		return sandbox.ExitFedmemError, err
	}
	if o.vault == "" {
		return sandbox.ExitFedmemError, errors.New("no vault: pass --vault DIR or set FEDMEM_VAULT")
	}
	vaultDir, err := vault.Resolve(o.vault)
	if err != nil {
		return sandbox.ExitFedmemError, err
	}
	wd := o.workdir
	if wd == "" {
		if wd, err = os.Getwd(); err != nil {
			return sandbox.ExitFedmemError, err
		}
	}
	if wd, err = host.RealDir(wd); err != nil {
		return sandbox.ExitFedmemError, fmt.Errorf("workdir: %w", err)
	}
	uid, gid, err := runAs(prof.RunAs)
	if err != nil {
		return sandbox.ExitFedmemError, err
	}
	home, err := host.Home(uid)
	if err != nil {
		return sandbox.ExitFedmemError, err
	}
	session, err := newSessionID()
	if err != nil {
		return sandbox.ExitFedmemError, err
	}
	plan, err := mounts.Build(prof, mounts.Input{
		Vault: vaultDir, Session: session, Workdir: wd, Home: home,
		Exists:     host.Exists,
		ExtraMasks: host.CredentialPaths(uid),
	})
	if err != nil {
		return sandbox.ExitFedmemError, err
	}
	if o.explain {
		return 0, explain(stdout, o.jsonOut, prof, profHash, plan)
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(stderr, "fedmem-run: warning: %s\n", w)
	}
	// Writable home paths the profile names must exist to be bound.
	for _, m := range plan.Mounts {
		if m.Create {
			if err := createOwned(m.Source, m.Dir, uid, gid); err != nil {
				return sandbox.ExitFedmemError, fmt.Errorf("profile %s: create %s: %w", prof.Name, m.Source, err)
			}
		}
	}
	started := time.Now()
	rep := &report{
		Session: session, Profile: prof.Name, ProfileHash: profHash, Vault: vaultDir,
		Inbox: plan.Inbox, Workdir: wd, Command: o.argv, UID: uid, Started: started.UTC(),
		Warnings: plan.Warnings,
	}
	rep.VaultHeadStart, _ = vault.ReadHead(vaultDir)
	if err := checkInboxReachable(vaultDir, uid, gid); err != nil {
		return sandbox.ExitFedmemError, err
	}
	if err := createInbox(vaultDir, plan.Inbox, uid, gid); err != nil {
		return sandbox.ExitFedmemError, err
	}
	writeSessionRecord(vaultDir, rep, stderr)

	tty := prof.TTY == "auto" && term.IsTerminal(int(stdin.Fd())) && term.IsTerminal(int(stdout.Fd()))
	spec := &sandbox.Spec{
		Plan: plan, Argv: o.argv, Env: agentEnv(prof, plan, home), Dir: wd,
		UID: uid, GID: gid, TTY: tty, Stdin: stdin, Stdout: stdout, Stderr: stderr,
		Hostname:        "fedmem",
		RequireLandlock: slices.Contains(prof.Require, "landlock"),
		RequireSeccomp:  slices.Contains(prof.Require, "seccomp"),
		Limits: sandbox.Limits{
			WallTime:   time.Duration(prof.Limits.WallTime),
			Pids:       prof.Limits.Pids,
			Memory:     int64(prof.Limits.Memory),
			FileSize:   int64(prof.Limits.FileSize),
			OpenFiles:  prof.Limits.OpenFiles,
			InboxBytes: int64(prof.Limits.InboxBytes),
		},
	}

	ev, err := openEvents(o.events, session)
	if err != nil {
		return sandbox.ExitFedmemError, err
	}
	defer ev.close()
	spec.Event = ev.emit
	if prof.Network == profiles.NetworkAllowlist {
		pol := &netproxy.Policy{}
		for _, a := range prof.Allow {
			r, err := netproxy.ParseRule(a)
			if err != nil {
				return sandbox.ExitFedmemError, fmt.Errorf("profile %s: %w", prof.Name, err)
			}
			pol.Rules = append(pol.Rules, r)
		}
		px := &netproxy.Proxy{Policy: pol, OnDecision: func(d netproxy.Decision) {
			ev.emit("network", map[string]any{"method": d.Method, "host": d.Host, "port": d.Port, "allowed": d.Allowed, "addr": d.Addr, "reason": d.Reason})
			if !d.Allowed {
				fmt.Fprintf(stderr, "fedmem-run: network: refused %s %s:%d: %s\n", d.Method, d.Host, d.Port, d.Reason)
			}
		}}
		spec.Proxy = px
	}
	ev.emit("start", map[string]any{"profile": prof.Name, "profile_hash": profHash, "vault": vaultDir, "inbox": plan.Inbox,
		"workdir": wd, "command": o.argv, "uid": uid, "warnings": plan.Warnings})
	if !tty {
		// Never hand the agent the user's terminal: a terminal on any stdio
		// fd is replaced by a pipe that we relay.
		restore := detachTerminals(spec)
		defer restore()
	}
	res, runErr := sandbox.Namespace{}.Run(context.Background(), spec)
	rep.DurationMS = time.Since(started).Milliseconds()
	rep.VaultHeadEnd, _ = vault.ReadHead(vaultDir)
	rep.InboxFiles, rep.InboxTruncated = listInbox(plan.Inbox)
	code := 0
	if res != nil {
		rep.Layers = &res.Layers
		rep.ExitCode, rep.Signal = res.ExitCode, res.Signal
		rep.LimitsHit = res.LimitsHit
		code = res.ExitCode
		for _, l := range res.LimitsHit {
			fmt.Fprintf(stderr, "fedmem-run: limit hit: %s\n", l)
		}
	}
	if runErr != nil {
		code = sandbox.ExitCodeOf(runErr)
		rep.ExitCode = code
		var se *sandbox.Error
		if errors.As(runErr, &se) {
			rep.Error = se
		}
	}
	writeSessionRecord(vaultDir, rep, stderr)
	ev.emit("exit", map[string]any{"exit_code": rep.ExitCode, "signal": rep.Signal, "duration_ms": rep.DurationMS,
		"vault_head_end": rep.VaultHeadEnd, "inbox_files": len(rep.InboxFiles), "error": rep.Error})
	if o.report != "" {
		if err := writeJSON(o.report, rep); err != nil {
			fmt.Fprintf(stderr, "fedmem-run: report: %v\n", err)
		}
	}
	return code, runErr
}

// tighten applies the command-line flags that may only tighten a profile,
// and refuses any value that would loosen it (a security team's profile is
// not undone from the command line).
func tighten(p *profiles.Profile, o *options) error {
	if o.timeout < 0 {
		return errors.New("--timeout must be positive")
	}
	if o.timeout > 0 {
		if p.Limits.WallTime != 0 && o.timeout > time.Duration(p.Limits.WallTime) {
			return fmt.Errorf("--timeout %v would loosen profile %s (limits.wall_time %v): refused", o.timeout, p.Name, time.Duration(p.Limits.WallTime))
		}
		p.Limits.WallTime = profiles.Duration(o.timeout)
	}
	if o.network != "" {
		rank := map[string]int{profiles.NetworkNone: 0, profiles.NetworkAllowlist: 1, profiles.NetworkHost: 2}
		want, ok := rank[o.network]
		if !ok {
			return fmt.Errorf("--network %q: want none, allowlist or host", o.network)
		}
		if want > rank[p.Network] {
			return fmt.Errorf("--network %s would loosen profile %s (network: %s): refused", o.network, p.Name, p.Network)
		}
		p.Network = o.network
	}
	return nil
}

// runAs resolves the profile's run_as ("" = the caller; NAME, UID or UID:GID).
func runAs(spec string) (int, int, error) {
	uid, gid := os.Getuid(), os.Getgid()
	if spec == "" {
		return uid, gid, nil
	}
	u, g, hasG := strings.Cut(spec, ":")
	if n, err := strconv.Atoi(u); err == nil {
		uid = n
		gid = n
	} else {
		pw, err := user.Lookup(u)
		if err != nil {
			return 0, 0, fmt.Errorf("run_as %q: %w", spec, err)
		}
		uid, _ = strconv.Atoi(pw.Uid)
		gid, _ = strconv.Atoi(pw.Gid)
	}
	if hasG {
		n, err := strconv.Atoi(g)
		if err != nil {
			return 0, 0, fmt.Errorf("run_as %q: gid must be numeric", spec)
		}
		gid = n
	}
	if uid != os.Getuid() && os.Geteuid() != 0 {
		return 0, 0, fmt.Errorf("run_as %q: only root can run an agent as another user", spec)
	}
	return uid, gid, nil
}

func newSessionID() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:]), nil
}

// checkInboxReachable refuses, with a message that says what to do, a
// vault whose inbox the agent's uid cannot enter. Root would pass any
// access check out here, but not inside the sandbox's user namespace, where
// it holds no capability over the gate's files.
func checkInboxReachable(vaultDir string, uid, gid int) error {
	dir := filepath.Join(vaultDir, vault.InboxDir)
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("inbox %s: %w", dir, err)
	}
	groups, _ := unix.Getgroups()
	if uid != os.Getuid() {
		groups = nil // run_as: only the target's primary group counts
	}
	member := int(st.Gid) == gid || slices.Contains(groups, int(st.Gid))
	ok := (int(st.Uid) == uid && st.Mode&0o300 == 0o300) ||
		(int(st.Uid) != uid && member && st.Mode&0o030 == 0o030) ||
		(int(st.Uid) != uid && !member && st.Mode&0o003 == 0o003)
	if !ok {
		return fmt.Errorf("inbox %s (owner %d, group %d, mode %04o): uid %d cannot create its session directory there; agents of this vault must be in group %d (see `fedmem init --agent-group`; root too, or use a profile with run_as)",
			dir, st.Uid, st.Gid, st.Mode&0o7777, uid, st.Gid)
	}
	return nil
}

// createInbox makes the session's inbox directory, owned by the agent's uid,
// mode 2770: its group is the inbox's (90-inbox is setgid when the vault has
// an agent group), so a gate user in that group can move drafts out and
// write receipts; nobody else on the host can look in.
func createInbox(vaultDir, inbox string, uid, gid int) error {
	if err := os.Mkdir(inbox, 0o700); err != nil {
		return fmt.Errorf("create session inbox %s: %w (can this user write %s/%s? see `fedmem init --agent-group`)", inbox, err, vaultDir, vault.InboxDir)
	}
	if os.Geteuid() == 0 && uid != os.Geteuid() {
		// Keep the group the directory inherited; give it to the agent.
		if err := os.Lchown(inbox, uid, -1); err != nil {
			return fmt.Errorf("chown %s: %w", inbox, err)
		}
	}
	if err := unix.Chmod(inbox, 0o2770); err != nil {
		return fmt.Errorf("chmod %s: %w", inbox, err)
	}
	return nil
}

func createOwned(p string, dir bool, uid, gid int) error {
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	if dir {
		if err := os.Mkdir(p, 0o700); err != nil {
			return err
		}
	} else {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		f.Close()
	}
	if os.Geteuid() == 0 {
		return os.Lchown(p, uid, gid)
	}
	return nil
}

// writeSessionRecord stores the enforcer's facts about the session where the
// agent cannot reach them (the sandbox hides every entry of the inbox but
// the session's own directory); the gate takes provenance from it.
func writeSessionRecord(vaultDir string, rep *report, stderr io.Writer) {
	dir := filepath.Join(vaultDir, vault.SessionsDir)
	if _, err := os.Stat(dir); err != nil {
		if err := os.Mkdir(dir, 0o1777); err != nil {
			fmt.Fprintf(stderr, "fedmem-run: warning: no session record (%v); the gate will treat the drafts as from an unknown agent\n", err)
			return
		}
		// Sticky like /tmp: a user cannot replace another's record. (The
		// raw mode: os.Chmod would drop the 01000 bit.)
		_ = unix.Chmod(dir, 0o1777)
	}
	if err := writeJSON(filepath.Join(dir, rep.Session+".json"), rep); err != nil {
		fmt.Fprintf(stderr, "fedmem-run: warning: session record: %v\n", err)
	}
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// listInbox lists what the agent left in its inbox, without following links
// and bounded in count.
func listInbox(inbox string) ([]inboxFile, bool) {
	const max = 10000
	var out []inboxFile
	truncated := false
	_ = filepath.WalkDir(inbox, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == inbox {
			return nil
		}
		if len(out) >= max {
			truncated = true
			return filepath.SkipAll
		}
		rel, _ := filepath.Rel(inbox, p)
		f := inboxFile{Path: rel, Type: "file"}
		if info, err := d.Info(); err == nil {
			f.Size = info.Size()
			switch m := info.Mode(); {
			case m.IsDir():
				f.Type = "dir"
			case m&fs.ModeSymlink != 0:
				f.Type = "symlink"
			case !m.IsRegular():
				f.Type = "special"
			}
		}
		out = append(out, f)
		return nil
	})
	return out, truncated
}

func agentEnv(p *profiles.Profile, pl *mounts.Plan, home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "FEDMEM_") {
			continue
		}
		for _, pat := range p.Env.Pass {
			if pat == k || (strings.HasSuffix(pat, "*") && strings.HasPrefix(k, strings.TrimSuffix(pat, "*"))) {
				env = append(env, kv)
				break
			}
		}
	}
	for k, v := range p.Env.Set {
		env = append(env, k+"="+strings.ReplaceAll(v, "${HOME}", home))
	}
	env = append(env, "HOME="+home, "FEDMEM_VAULT="+pl.Vault, "FEDMEM_INBOX="+pl.Inbox, "FEDMEM_SESSION="+pl.Session)
	if p.Network == profiles.NetworkAllowlist {
		// The only way out: the allowlist proxy, relayed by the sandbox's
		// pid 1 on its own loopback. Caller proxy settings do not apply.
		proxy := fmt.Sprintf("http://127.0.0.1:%d", sandbox.ProxyPort)
		kept := env[:0]
		for _, kv := range env {
			k, _, _ := strings.Cut(kv, "=")
			switch strings.ToUpper(k) {
			case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY":
				continue
			}
			kept = append(kept, kv)
		}
		env = append(kept, "HTTP_PROXY="+proxy, "HTTPS_PROXY="+proxy, "http_proxy="+proxy, "https_proxy="+proxy, "ALL_PROXY="+proxy, "all_proxy="+proxy)
	}
	if !hasKey(env, "PATH") {
		env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin")
	}
	return env
}

func hasKey(env []string, k string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, k+"=") {
			return true
		}
	}
	return false
}

func explain(w io.Writer, asJSON bool, p *profiles.Profile, hash string, pl *mounts.Plan) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"profile": p.Name, "profile_hash": hash, "plan": pl, "layers": sandbox.DescribeLayers(pl), "allow": p.Allow, "limits": p.Limits})
	}
	fmt.Fprintf(w, "profile %s (sha256 %s)\nvault   %s\ninbox   %s\nworkdir %s\nnetwork %s\n", p.Name, hash[:12], pl.Vault, pl.Inbox, pl.Workdir, pl.Network)
	if len(p.Allow) > 0 {
		fmt.Fprintf(w, "allow   %s (through fedmem-run's proxy)\n", strings.Join(p.Allow, ", "))
	}
	if len(pl.Visible) > 0 {
		fmt.Fprintf(w, "visible %s (nothing else of the vault exists inside)\n", strings.Join(pl.Visible, ", "))
	}
	var lim []string
	if l := p.Limits; l != (profiles.Limits{}) {
		if l.WallTime > 0 {
			lim = append(lim, "wall_time="+time.Duration(l.WallTime).String())
		}
		for _, x := range []struct {
			k string
			v int64
		}{{"pids", int64(l.Pids)}, {"memory", int64(l.Memory)}, {"file_size", int64(l.FileSize)}, {"open_files", int64(l.OpenFiles)}, {"inbox_bytes", int64(l.InboxBytes)}} {
			if x.v > 0 {
				lim = append(lim, fmt.Sprintf("%s=%d", x.k, x.v))
			}
		}
		fmt.Fprintf(w, "limits  %s\n", strings.Join(lim, " "))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tTARGET\tSOURCE\tWHY")
	for _, m := range pl.Mounts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Kind, m.Target, m.Source, m.Why)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nlayers:")
	for _, l := range sandbox.DescribeLayers(pl) {
		fmt.Fprintf(w, "  %s\n", l)
	}
	for _, warn := range pl.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	return nil
}
