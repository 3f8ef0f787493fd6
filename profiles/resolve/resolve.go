package resolve

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/mounts/host"
	"github.com/fedmem/fedmem/mounts/pin"
	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/vault"
)

// Options is what the caller asks for. The zero value of each field means
// "the default": see each field.
type Options struct {
	// Vault is the vault directory. Empty: an error, unless Placeholder is
	// set (explain without a vault).
	Vault string
	// Placeholder stands for the vault when Vault is empty.
	Placeholder string
	// Profile is a built-in name or a YAML file. Empty: the built-in named
	// after Argv[0] if there is one, else "default".
	Profile string
	// Workdir is the agent's working directory. Empty: the current one.
	Workdir string
	// Argv is the agent's command (may be empty for explain).
	Argv []string
	// Timeout and Network come from the command line and may only tighten
	// the profile (limits.wall_time, network).
	Timeout time.Duration
	Network string
	// Session is the session id. Empty: a fresh one.
	Session string
	// Caller plans for the calling user even when the profile names
	// run_as (`fedmem profile explain` shows the caller's plan).
	Caller bool
	// AgentUser is fedmem-run --agent-user (root callers only).
	AgentUser string
	// Identity picks the agent's host uid and gid from the profile's
	// run_as and AgentUser (sandbox.ChooseAgent: never uid 0 for a root
	// caller). nil: run_as or the caller (RunAs).
	Identity func(runAs, agentUser string) (uid, gid int, source string, err error)
}

// Session is one resolved session.
type Session struct {
	ID          string
	Profile     *profiles.Profile
	ProfileHash string
	// ProfileSource is the file the profile came from ("builtin:NAME" for
	// a built-in); ProfileSourceKind: project, user, system, builtin or
	// file (profiles.SourceKind).
	ProfileSource, ProfileSourceKind string
	// Warnings are the profile's warnings (profiles.Check) and the plan's.
	Warnings []string
	// ProfileWarnings is how many of Warnings, from the first, are the
	// profile's own (profiles.Check): for a built-in, the same on every
	// run (fedmem-run keeps those off the user's terminal).
	ProfileWarnings int
	Vault           string
	// Placeholder: Vault is Options.Placeholder, not a real vault.
	Placeholder bool
	Workdir     string
	Home        string
	// UID and GID are the agent's host ids; IdentitySource says what chose
	// them (run_as, agent-user, sudo, fedmem-agent, default, caller).
	UID, GID       int
	IdentitySource string
	// OwnerUID and OwnerGID own the writable paths on disk: the caller (the
	// invoking user under sudo), or the named user for run_as and
	// --agent-user. Writable binds owned by them are idmapped to the agent.
	OwnerUID, OwnerGID int
	Plan               *mounts.Plan
	// Argv0 is the agent's command ("" for explain without one).
	Argv0 string
	// Links is the view of the host's links the plan was judged on
	// (mounts.Links): the homes, the caller's PATH, the writable sources
	// and every path the plan resolved. The launcher judges the same
	// paths on it again before it changes anything on the host.
	Links *mounts.Links
}

// ProfileSearch is the profile search path of a session in workdir (""
// for the current directory): WORKDIR/.fedmem/profiles, the caller's
// ~/.config/fedmem/profiles, /etc/fedmem/profiles (profiles.SearchPath).
func ProfileSearch(workdir string) []profiles.SearchDir {
	if workdir == "" {
		workdir, _ = os.Getwd()
	} else if abs, err := filepath.Abs(workdir); err == nil {
		workdir = abs
	}
	home, _ := os.UserHomeDir()
	return profiles.SearchPath(workdir, home)
}

// ProfileName is the profile used for argv when none is named: the built-in
// named after the command, else "default".
func ProfileName(named string, argv []string) string {
	if named != "" {
		return named
	}
	if len(argv) > 0 {
		base := filepath.Base(argv[0])
		for _, b := range profiles.Builtins() {
			if b == base {
				return b
			}
		}
	}
	return "default"
}

// Resolve loads and checks the profile, applies the tightening flags and
// computes the plan. A profile that `fedmem profile check` calls invalid is
// refused here too, with the same messages (file, line, rule).
func Resolve(o Options) (*Session, error) {
	// One view of the host's links for the whole plan: the PATH entries,
	// the homes, the writable sources and the plan's own paths share
	// their folders, each looked up once (nothing below changes a link).
	links := mounts.NewLinks()
	// What the plan reads of the host whatever the profile — the mount
	// table, the homes of /etc/passwd — is read while the profile loads.
	facts := make(chan hostFacts, 1)
	go func() { facts <- hostFacts{host.ReadMountTable(), host.HomesIn(links)} }()
	name := ProfileName(o.Profile, o.Argv)
	search := ProfileSearch(o.Workdir)
	prof, hash, warns, err := profiles.LoadCheckedFrom(name, search)
	if err != nil {
		return nil, err
	}
	if err := Tighten(prof, o.Timeout, o.Network); err != nil {
		return nil, err
	}
	s := &Session{Profile: prof, ProfileHash: hash, Warnings: warns, ProfileWarnings: len(warns),
		ProfileSource: prof.Source, ProfileSourceKind: profiles.SourceKind(prof.Source, search)}
	if len(o.Argv) > 0 {
		s.Argv0 = o.Argv[0]
	}
	switch {
	case o.Vault != "":
		if s.Vault, err = vault.Resolve(o.Vault); err != nil {
			return nil, err
		}
	case o.Placeholder != "":
		s.Vault, s.Placeholder = o.Placeholder, true
	default:
		return nil, errors.New("no vault: pass --vault DIR or set FEDMEM_VAULT")
	}
	wd := o.Workdir
	if wd == "" {
		if wd, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	if s.Workdir, err = host.RealDir(wd); err != nil {
		return nil, fmt.Errorf("workdir: %w", err)
	}
	// What the plan is about to judge, pinned at once (mounts/pin): the
	// backends bind only this folder.
	wdSeen, err := pin.Identify(s.Workdir)
	if err != nil {
		return nil, &pin.Error{Path: s.Workdir, Detail: fmt.Sprintf("resolved, then not reachable without a link: %v", err)}
	}
	switch {
	case o.Caller:
		s.UID, s.GID, s.IdentitySource = os.Getuid(), os.Getgid(), "caller (plan only)"
	case o.Identity != nil:
		if s.UID, s.GID, s.IdentitySource, err = o.Identity(prof.RunAs, o.AgentUser); err != nil {
			return nil, err
		}
	default:
		if o.AgentUser != "" {
			return nil, errors.New("--agent-user: no identity chooser")
		}
		if s.UID, s.GID, err = RunAs(prof.RunAs); err != nil {
			return nil, err
		}
		s.IdentitySource = "caller"
		if prof.RunAs != "" {
			s.IdentitySource = "run_as"
		}
	}
	s.OwnerUID, s.OwnerGID = Owner(s.UID, s.GID, s.IdentitySource)
	if s.Home, err = host.Home(s.OwnerUID); err != nil {
		return nil, err
	}
	s.ID = o.Session
	if s.ID == "" {
		if s.ID, err = NewSessionID(); err != nil {
			return nil, err
		}
	}
	s.Links = links
	resolvConf, _ := links.EvalSymlinks("/etc/resolv.conf")
	scanEntries := prof.Limits.ScanEntries
	if scanEntries == 0 {
		scanEntries = host.DefaultScanEntries
	}
	scanner := host.NewScanner(scanEntries, host.DefaultScanTime)
	hf := <-facts
	mt := hf.mountTable
	var vw *mounts.View
	switch {
	case prof.Vault.View != profiles.ViewInForce:
	case s.Placeholder:
		// No vault to judge: the plan says the view is judged when a
		// session starts.
		vw = &mounts.View{Mode: profiles.ViewInForce, Source: mounts.ViewPlaceholder}
	default:
		if vw, err = mounts.LoadView(s.Vault, time.Now()); err != nil {
			return nil, err
		}
		if vw.Source == mounts.ViewFromScan {
			s.Warnings = append(s.Warnings, fmt.Sprintf("vault.view: in-force: %s; fedmem-run read the frontmatter of all %d notes itself (slower; `fedmem gate once` writes the manifest)", vw.Stale, vw.Scanned))
		}
	}
	s.Plan, err = mounts.Build(prof.PlanRequest(), mounts.Input{
		View:  vw,
		Vault: s.Vault, Session: s.ID, Workdir: s.Workdir, Home: s.Home,
		Exists:     host.Exists,
		ExtraMasks: host.CredentialPaths(s.OwnerUID),
		RealPath:   links.RealPath,
		ResolvConf: resolvConf,
		ReadFile:   host.ReadConfig,
		List:       host.List,
		Readlink:   os.Readlink,
		Specials:   scanner.Specials,
		PathDirs:   filepath.SplitList(os.Getenv("PATH")),
		Links:      host.Links,
		Homes:      hf.homes,
		Aliases:    mt.Aliases,
		Mirrors:    mt.Mirrors(),
		PasswdHome: host.PasswdHome(s.OwnerUID),
	})
	if err != nil {
		return nil, err
	}
	if err := noteHostReadOnly(s.Plan, mt); err != nil {
		return nil, err
	}
	if err := pin.RecordIn(s.Plan, map[string]mounts.Source{s.Workdir: wdSeen}, links); err != nil {
		return nil, err
	}
	s.Warnings = append(s.Warnings, s.Plan.Warnings...)
	if err := checkAllowed(s, search, o.Caller); err != nil {
		return nil, err
	}
	return s, nil
}

// hostFacts are what Resolve reads of the host beside the profile.
type hostFacts struct {
	mountTable *host.MountTable
	homes      []string
}

// noteHostReadOnly records the host's read-only mounts under the plan's
// writable roots (mounts.NoteHostReadOnly), read from this process's mount
// table: the host's, where fedmem-run starts (mt, the plan's own reading of
// it; read again when that one could not be). Outside Linux there is no
// sandbox to verify (the admin CLI only plans there).
func noteHostReadOnly(pl *mounts.Plan, mt *host.MountTable) error {
	if runtime.GOOS != "linux" || mt.NoteHostReadOnly(pl) {
		return nil
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("host mount table: %w", err)
	}
	defer f.Close()
	return mounts.NoteHostReadOnly(pl, f)
}

// checkAllowed refuses a profile built from a file an agent could have
// written (a project's .fedmem/profiles, or inside a path this session may
// write) whose content the caller has not allowed (profiles.CheckAllowed).
// For a plan only (Caller: `fedmem profile explain`) it is a warning, so
// the plan can be read before the file is allowed.
func checkAllowed(s *Session, search []profiles.SearchDir, planOnly bool) error {
	var writable []string
	for _, m := range s.Plan.Mounts {
		if m.Kind == mounts.BindRW && m.Source != "" {
			writable = append(writable, m.Source)
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = s.Home
	}
	store := profiles.AllowStore(home)
	// The store itself must be out of the agent's reach: ~/.config/fedmem
	// of the sandbox's home is held read-only (profiles.HomePersist).
	if why := profiles.NeedsAllow(store, writable); why != "" && !underFedmemConfig(store, s.Home) {
		return &profiles.LoadError{Profile: s.Profile.Name, Err: fmt.Errorf("allow store %s: %s (rule: the allow store lies where no agent can write)", store, why)}
	}
	err = profiles.CheckAllowed(s.Profile, search, writable, store)
	if err != nil && planOnly {
		s.Warnings = append(s.Warnings, err.Error()+" (fedmem-run refuses it)")
		return nil
	}
	return err
}

func underFedmemConfig(p, home string) bool {
	dir := filepath.Join(home, ".config", "fedmem")
	if r, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(r, filepath.Base(p))
	}
	return strings.HasPrefix(p, dir+"/")
}

// Owner is who owns the agent's writable paths on disk, for an agent
// uid:gid chosen by source: the named user for run_as and --agent-user,
// the invoking user for sudo (SUDO_UID/SUDO_GID), else the caller — root
// for a root caller's fedmem-agent or default uid, whose writable binds
// are then idmapped to the agent.
func Owner(uid, gid int, source string) (int, int) {
	switch source {
	case "run_as", "agent-user":
		return uid, gid
	case "sudo":
		if u, err := strconv.Atoi(os.Getenv("SUDO_UID")); err == nil && u == uid {
			if g, err := strconv.Atoi(os.Getenv("SUDO_GID")); err == nil {
				return u, g
			}
			return uid, gid
		}
	}
	return os.Getuid(), os.Getgid()
}

// networkRank orders network modes from the tightest; a flag may only move
// down this list.
var networkRank = map[string]int{
	profiles.NetworkNone:      0,
	profiles.NetworkAllowlist: 1,
	profiles.NetworkPublic:    2,
	profiles.NetworkHost:      3,
}

// Tighten applies the command-line flags that may only tighten a profile,
// and refuses any value that would loosen it (a security team's profile is
// not undone from the command line).
func Tighten(p *profiles.Profile, timeout time.Duration, network string) error {
	if timeout < 0 {
		return errors.New("--timeout must be positive")
	}
	if timeout > 0 {
		if p.Limits.WallTime != 0 && timeout > time.Duration(p.Limits.WallTime) {
			return fmt.Errorf("--timeout %v would loosen profile %s (limits.wall_time %v): refused", timeout, p.Name, time.Duration(p.Limits.WallTime))
		}
		p.Limits.WallTime = profiles.Duration(timeout)
	}
	if network != "" {
		want, ok := networkRank[network]
		if !ok {
			return fmt.Errorf("--network %q: want none, allowlist, public or host", network)
		}
		if want > networkRank[p.Network] {
			return fmt.Errorf("--network %s would loosen profile %s (network: %s): refused", network, p.Name, p.Network)
		}
		if network == profiles.NetworkAllowlist && len(p.Allow) == 0 && p.Preset == "" {
			return fmt.Errorf("--network allowlist: profile %s has no allow list and no egress preset (nothing would be reachable; use --network none)", p.Name)
		}
		p.Network = network
	}
	return nil
}

// RunAs resolves a profile's run_as ("" = the caller; NAME, UID or
// UID:GID) to host ids.
func RunAs(spec string) (int, int, error) {
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
		grp, err := vault.ResolveGroup(g)
		if err != nil {
			return 0, 0, fmt.Errorf("run_as %q: %w", spec, err)
		}
		gid = grp.GID
	}
	if uid != os.Getuid() && os.Geteuid() != 0 {
		return 0, 0, fmt.Errorf("run_as %q: only root can run an agent as another user", spec)
	}
	return uid, gid, nil
}

// NewSessionID returns a fresh session id: UTC time and 32 random bits.
func NewSessionID() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:]), nil
}
