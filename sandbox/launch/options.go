package launch

import (
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/fedmem/fedmem/profiles/resolve"
	"github.com/fedmem/fedmem/sandbox"
)

// Options is one fedmem-run invocation as data.
type Options struct {
	// Vault, Profile, Workdir, Argv, Timeout and Network: see
	// resolve.Options.
	Vault, Profile, Workdir string
	Argv                    []string
	Timeout                 time.Duration
	Network                 string
	// AgentUser names the agent's host user for a root caller
	// (--agent-user USER|UID[:GROUP], GROUP a name or gid); never uid 0.
	AgentUser string
	// Report, when set, receives the JSON session report; Events, when
	// set, the session's events as JSON lines (appended).
	Report, Events string
	// FSDenials reports refused filesystem writes (--fs-denials); nil:
	// $FEDMEM_FS_DENIALS (0 or 1) in Environ, else on exactly when Events
	// is set. See FSDenials.
	FSDenials *bool
	// Explain prints the plan and layers instead of running (JSON with
	// ExplainJSON).
	Explain, ExplainJSON bool
	// Stdin, Stdout and Stderr are the agent's stdio. *os.File values that
	// are not terminals are handed to the agent as they are; terminals
	// (outside PTY mode) and other readers/writers are relayed through
	// pipes. nil: /dev/null for Stdin, io.Discard for the others.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Environ is the caller's environment the allow list picks from (nil:
	// os.Environ()).
	Environ []string
	// Backend runs the sandbox (nil: sandbox.Namespace).
	Backend sandbox.Backend
	// HoldSignalsToExit keeps the forwarded signals (SIGINT, SIGTERM, …)
	// held after Run returns, for a caller that exits right after (the
	// fedmem-run command): once the agent ran, the exit status is the
	// agent's, never the default action of a Ctrl-C that arrived as it
	// ended. Unset: they are released when Run returns.
	HoldSignalsToExit bool
	// Session fixes the session id (tests); empty: a fresh one.
	Session string
}

func (o *Options) resolveOptions() resolve.Options {
	return resolve.Options{
		Vault: o.Vault, Profile: o.Profile, Workdir: o.Workdir, Argv: o.Argv,
		Timeout: o.Timeout, Network: o.Network, Session: o.Session,
		AgentUser: o.AgentUser, Identity: chooseAgent,
	}
}

// chooseAgent is sandbox.ChooseAgent for this process: a root caller's
// agent is never uid 0 (run_as, --agent-user, SUDO_UID, fedmem-agent, else
// sandbox.DefaultAgentID).
func chooseAgent(runAs, agentUser string) (int, int, string, error) {
	return sandbox.ChooseAgent(os.Getuid(), os.Getgid(), sandbox.AgentChoice{
		RunAs: runAs, AgentUser: agentUser, SudoUID: os.Getenv("SUDO_UID"), SudoGID: os.Getenv("SUDO_GID"),
	}, lookupUser)
}

// lookupUser resolves a user name to its uid and primary gid.
func lookupUser(name string) (int, int, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, err
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return 0, 0, fmt.Errorf("user %s: uid %q", name, u.Uid)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return 0, 0, fmt.Errorf("user %s: gid %q", name, u.Gid)
	}
	return uid, gid, nil
}

// FSDenialsEnv overrides the default of --fs-denials: 0 or 1 (empty:
// unset).
const FSDenialsEnv = "FEDMEM_FS_DENIALS"

// fsDenials says whether the session reports refused filesystem writes,
// and why: the flag (--fs-denials) wins, then $FEDMEM_FS_DENIALS, then the
// default — on with --events (someone is watching), off without: every
// write call then stays in the kernel instead of making a round trip to
// the sandbox's pid 1 (docs/events.md, "Denials").
func (o *Options) fsDenials() (bool, string, error) {
	if o.FSDenials != nil {
		return *o.FSDenials, "--fs-denials", nil
	}
	environ := o.Environ
	if environ == nil {
		environ = os.Environ()
	}
	for i := len(environ) - 1; i >= 0; i-- {
		v, ok := strings.CutPrefix(environ[i], FSDenialsEnv+"=")
		if !ok || v == "" { // empty: unset
			continue
		}
		switch v {
		case "1":
			return true, "$" + FSDenialsEnv, nil
		case "0":
			return false, "$" + FSDenialsEnv, nil
		}
		return false, "", fmt.Errorf("$%s=%q: want 0 or 1", FSDenialsEnv, v)
	}
	if o.Events != "" {
		return true, "default with --events", nil
	}
	return false, "default without --events", nil
}
