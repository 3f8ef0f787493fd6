package profiles

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/mounts/request"
)

// Network modes (their names are mounts/request's, which the plan reads).
const (
	// NetworkHost shares the host's network namespace: the agent reaches
	// every service on the host's loopback and the cloud metadata endpoint.
	// Only by name in a profile; `fedmem profile check` warns about it.
	NetworkHost = request.NetworkHost
	// NetworkNone: the sandbox's own network namespace, loopback only.
	NetworkNone = request.NetworkNone
	// NetworkAllowlist: the sandbox's own network namespace; out only
	// through fedmem-run's proxy, to the allow list's host:port pairs.
	NetworkAllowlist = request.NetworkAllowlist
	// NetworkPublic: the sandbox's own network namespace; out only through
	// fedmem-run's proxy, to any public address (never loopback, private,
	// link-local, metadata, multicast or the host's own addresses). The
	// default.
	NetworkPublic = request.NetworkPublic
)

// Proxied reports whether a network mode reaches out through fedmem-run's
// proxy (allowlist and public).
func Proxied(mode string) bool { return mode == NetworkAllowlist || mode == NetworkPublic }

// Profile is one agent profile after `extends:` has been resolved.
type Profile struct {
	// Source is where the profile was read from: a file path, or
	// "builtin:NAME" (LoadFrom). Not part of the profile's text.
	Source      string `yaml:"-" json:"-"`
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	Extends     string `yaml:"extends,omitempty" json:"extends,omitempty"`
	// Network is the mode (NetworkNone, NetworkAllowlist, NetworkPublic,
	// NetworkHost); Preset the egress preset network: allowlist reaches
	// (presets.go). In YAML both are `network:` (networkSpec).
	Network     string      `yaml:"-" json:"network"`
	Preset      string      `yaml:"-" json:"preset,omitempty"`
	NetworkYAML networkSpec `yaml:"network,omitempty" json:"-"`
	// Backend builds the sandbox: namespace (the default), runc or
	// containerd (sandbox.NewBackend); fedmem-run --backend overrides it.
	Backend string `yaml:"backend,omitempty" json:"backend,omitempty"`
	// Allow lists what network: allowlist reaches: host, host:port,
	// *.domain[:port] or an IP literal (see AllowEntry).
	Allow    []string `yaml:"allow,omitempty" json:"allow,omitempty"`
	Home     Home     `yaml:"home,omitempty" json:"home"`
	Env      Env      `yaml:"env,omitempty" json:"env"`
	RunAs    string   `yaml:"run_as,omitempty" json:"run_as,omitempty"`
	TTY      string   `yaml:"tty,omitempty" json:"tty"` // auto|never
	Require  []string `yaml:"require,omitempty" json:"require,omitempty"`
	Writable []string `yaml:"writable,omitempty" json:"writable,omitempty"` // extra absolute paths, rw
	Limits   Limits   `yaml:"limits,omitempty" json:"limits"`
	Vault    Vault    `yaml:"vault,omitempty" json:"vault"`
	// UnixSockets are host pathname unix sockets the agent may reach; every
	// other socket under /run and /var/run is hidden (docs/profiles.md).
	UnixSockets []string `yaml:"unix_sockets,omitempty" json:"unix_sockets,omitempty"`
	// SocketFamilies are address families socket(2) may name besides unix,
	// inet, inet6 and netlink, which every session has (see SocketFamily).
	SocketFamilies []SocketFamily `yaml:"socket_families,omitempty" json:"socket_families,omitempty"`
	// AcceptRisks names weakenings the profile accepts knowingly, e.g.
	// keep-groups (see RiskKeepGroups).
	AcceptRisks []string `yaml:"accept_risks,omitempty" json:"accept_risks,omitempty"`
	// State lists persistent, writable paths under $HOME (caches, module
	// stores, an agent's state file): see State.
	State []State `yaml:"state,omitempty" json:"state,omitempty"`
	// CommandArgs are arguments inserted after a named command (see
	// CommandArgs).
	CommandArgs CommandArgs `yaml:"command_args,omitempty" json:"command_args,omitempty"`
	// Instructions says what becomes of the files the user's next agent
	// reads as instructions (InstructionFiles: CLAUDE.md, AGENTS.md…) in
	// the writable folders: "report" (the default: the agent may change
	// them, fedmem-run names each one it changed after the session) or
	// "read-only" (held like a persistence family). A child profile cannot
	// loosen a parent's read-only.
	Instructions string `yaml:"instructions,omitempty" json:"instructions,omitempty"`
	// Workdir says how the agent's writes reach the workdir: "direct" (or
	// empty, the default: a writable bind, what it writes is there at once) or
	// "propose" (an overlay in the sandbox, capped at
	// limits.workdir_bytes: nothing reaches the real tree while the agent
	// runs; after it fedmem-run writes the change set as a Git branch, or
	// a patch for a workdir outside Git, for the user to apply). See
	// docs/profiles.md, "Workdir proposals".
	Workdir string `yaml:"workdir,omitempty" json:"workdir,omitempty"`
	// Credentials are the caller's secrets the agent uses through
	// placeholders (see Credential).
	Credentials []Credential `yaml:"credentials,omitempty" json:"credentials,omitempty"`

	// Files are the files (not built-ins) the profile was built from, with
	// the sha256 of the bytes read (LoadFrom; CheckAllowed).
	Files []SourceFile `yaml:"-" json:"-"`
}

// Values of Profile.Instructions.
const (
	InstructionsReport   = "report"
	InstructionsReadOnly = "read-only"
)

// Values of Profile.Workdir.
const (
	WorkdirDirect  = "direct"
	WorkdirPropose = "propose"
)

// Propose reports whether the profile's workdir is a proposal.
func (p *Profile) Propose() bool { return p.Workdir == WorkdirPropose }

// RiskKeepGroups, in accept_risks, lets an unprivileged caller's agent keep
// the caller's supplementary groups where fedmem-run cannot drop them.
const RiskKeepGroups = request.RiskKeepGroups

// Vault says which part of the vault the agent sees.
type Vault struct {
	// Visible lists vault folders (relative paths such as "00-global" or
	// "30-clients/acme"); when set, nothing else of the vault exists
	// inside the sandbox — not other folders, not .git. The session inbox
	// is always there. Empty: the whole vault, read-only.
	Visible []string `yaml:"visible,omitempty" json:"visible,omitempty"`
	// Receipts says whether fedmem-run records which vault files the
	// agent opens (the report's vault_reads): on (the default: recorded
	// where the caller can, said where it cannot), required (a session
	// whose reads cannot be recorded is refused), off.
	Receipts string `yaml:"receipts,omitempty" json:"receipts,omitempty"`
	// View says which notes exist inside the sandbox: all (the whole
	// vault, .git included: the default) or in-force (only the notes in
	// force: withheld, deprecated, superseded, draft and stale notes are
	// absent, folder pages list only what is shown, .git and 99-archive/
	// are absent; docs/profiles.md).
	View string `yaml:"view,omitempty" json:"view,omitempty"`
}

// Vault view settings (vault.view).
const (
	ViewAll     = "all"
	ViewInForce = "in-force"
)

// Read receipt settings (vault.receipts).
const (
	ReceiptsOn       = "on"
	ReceiptsOff      = "off"
	ReceiptsRequired = "required"
)

// Limits are hard limits of a session. Zero means none.
type Limits struct {
	WallTime Duration `yaml:"wall_time,omitempty" json:"wall_time,omitempty"`
	Pids     int      `yaml:"pids,omitempty" json:"pids,omitempty"`
	FileSize Size     `yaml:"file_size,omitempty" json:"file_size,omitempty"`
	Memory   Size     `yaml:"memory,omitempty" json:"memory,omitempty"`
	// CPU is cores of CPU time for the whole sandbox ("1.5"), enforced by
	// the cgroup cpu controller (cpu.max, or v1 cfs quota).
	CPU       float64 `yaml:"cpu,omitempty" json:"cpu,omitempty"`
	OpenFiles int     `yaml:"open_files,omitempty" json:"open_files,omitempty"`
	// InboxBytes caps the total size of what the session writes to its
	// inbox; fedmem-run ends the session when it is passed.
	InboxBytes Size `yaml:"inbox_bytes,omitempty" json:"inbox_bytes,omitempty"`
	// TmpBytes caps each of the sandbox's private /tmp and /dev/shm (tmpfs
	// size=, in memory): a write past it fails with ENOSPC. Default
	// DefaultTmpBytes.
	TmpBytes Size `yaml:"tmp_bytes,omitempty" json:"tmp_bytes,omitempty"`
	// WorkdirBytes caps, with workdir: propose, what the agent's writes to
	// the workdir may take (the overlay's upper layer is a tmpfs of this
	// size, in memory): a write past it fails with ENOSPC. Default
	// DefaultWorkdirBytes.
	WorkdirBytes Size `yaml:"workdir_bytes,omitempty" json:"workdir_bytes,omitempty"`
	// ScanEntries bounds the start-time scan for unix sockets and FIFOs in
	// the workdir, writable paths and home entries (directory entries read
	// in all; default 500000): a larger tree refuses the session rather
	// than leave a socket unchecked (docs/profiles.md).
	ScanEntries int `yaml:"scan_entries,omitempty" json:"scan_entries,omitempty"`
	// CgroupOptional: where fedmem-run cannot make a session cgroup (an
	// unprivileged caller without a delegated cgroup, no hierarchy with the
	// controller), run without the memory and cpu limits and with pids as
	// RLIMIT_NPROC (or none for a uid-0 agent), and
	// say so in the report, instead of refusing. The built-in profiles set
	// it for their default limits; a profile that sets memory or pids
	// itself must say cgroup_optional: true again to keep it.
	CgroupOptional bool `yaml:"cgroup_optional,omitempty" json:"cgroup_optional,omitempty"`
	// OptionalMemory and OptionalPids say which limits cgroup_optional
	// covers after extends: those of the profile that said it, and those
	// inherited with it — never a limit a child sets without saying it.
	OptionalMemory bool `yaml:"-" json:"-"`
	OptionalPids   bool `yaml:"-" json:"-"`
	OptionalCPU    bool `yaml:"-" json:"-"`
}

// DefaultTmpBytes is limits.tmp_bytes when a profile says nothing.
const DefaultTmpBytes Size = 1 << 30

// DefaultWorkdirBytes is limits.workdir_bytes when a proposing profile
// says nothing.
const DefaultWorkdirBytes Size = 1 << 30

// Duration is a time.Duration written as "90s", "30m", "2h".
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &valueError{n, "expected a duration like 90s, 30m or 2h, got " + nodeWords(n)}
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil || v <= 0 {
		return &valueError{n, fmt.Sprintf("%q is not a positive duration like 90s, 30m or 2h", n.Value)}
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration back as text.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// MarshalJSON writes the duration as text ("2h0m0s"), as in YAML.
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Duration(d).String() + `"`), nil
}

// Size is a byte count written as bytes or with a KiB/MiB/GiB (or KB/MB/GB,
// K/M/G) suffix.
type Size int64

// ParseSize reads a size.
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a positive size like 512KiB, 100MiB or 1GiB", s)
	}
	return Size(n * mult), nil
}

// UnmarshalYAML parses a size.
func (z *Size) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &valueError{n, "expected a size like 512KiB, 100MiB or 1GiB, got " + nodeWords(n)}
	}
	v, err := ParseSize(n.Value)
	if err != nil {
		return &valueError{n, err.Error()}
	}
	*z = v
	return nil
}

// Home modes (Home.Mode).
const (
	// HomeAllowlist (the default): $HOME is an empty read-only tmpfs that
	// holds only what the profile names — home.show read-only, home.writable
	// and state writable, unix_sockets listed under it. The rest of the
	// caller's home does not exist inside: no secret to mask, no socket of
	// the user's (docker, podman, lima, an editor's server) to reach.
	HomeAllowlist = string(request.HomeAllowlist)
	// HomeRO shows the whole home read-only with the secrets masked (the
	// model before the allow-list): every other file is readable and every
	// unix socket the agent's uid may write answers it. A weakening:
	// `fedmem profile check` warns about it.
	HomeRO = string(request.HomeRO)
	// HomeHidden: an empty read-only directory; no writable path, no state.
	HomeHidden = string(request.HomeHidden)
)

// Home says how the user's home directory appears inside the sandbox.
type Home struct {
	// Mode is HomeAllowlist (the default), HomeRO or HomeHidden.
	Mode string `yaml:"mode,omitempty" json:"mode"`
	// Show lists paths relative to $HOME (or starting with ~/) that the
	// agent sees read-only in an allowlist home: the user's .gitconfig, the
	// commands in ~/.local/bin, a toolchain. A missing one is skipped.
	Show []string `yaml:"show,omitempty" json:"show,omitempty"`
	// Writable lists paths relative to $HOME the agent may write (a trailing
	// slash marks a directory; it is created if missing).
	Writable []string `yaml:"writable,omitempty" json:"writable,omitempty"`
	// Mask lists extra secret paths relative to $HOME, added to DefaultMasks.
	Mask []string `yaml:"mask,omitempty" json:"mask,omitempty"`
}

// Env says which environment variables reach the agent.
type Env struct {
	// Pass lists variable names (or NAME_* prefixes) copied from the caller.
	Pass []string `yaml:"pass,omitempty" json:"pass,omitempty"`
	// Set fixes variables to values; "${HOME}" in a value is replaced by
	// the agent's home directory.
	Set map[string]string `yaml:"set,omitempty" json:"set,omitempty"`
}

// DefaultMasks are secret paths under $HOME hidden from every agent.
var DefaultMasks = []string{
	".ssh", ".gnupg", ".aws", ".kube", ".netrc", ".docker", ".config/gcloud",
	".azure", ".password-store", ".config/gh", ".git-credentials", ".npmrc",
	".pypirc", ".vault-token", ".local/share/keyrings",
}

//go:embed builtin/*.yaml
var builtinFS embed.FS

// ErrUnknown is returned for a profile name that is neither built in nor a file.
var ErrUnknown = errors.New("unknown profile")

// Builtins lists the names of the embedded profiles.
func Builtins() []string {
	ents, _ := builtinFS.ReadDir("builtin")
	var names []string
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// LoadError is a profile that could not be found, read, parsed or
// validated (Load). Its text is the cause's: file, line and rule.
type LoadError struct {
	Profile string
	Err     error
}

func (e *LoadError) Error() string { return e.Err.Error() }
func (e *LoadError) Unwrap() error { return e.Err }

// Load resolves a profile by built-in name or file path, following extends.
// It returns the resolved profile and a hash of every source it was built
// from. Errors are *LoadError. Names are not looked up in any search path
// (LoadFrom): a built-in name is the built-in.
func Load(nameOrFile string) (*Profile, string, error) {
	return LoadFrom(nameOrFile, nil)
}

// LoadFrom is Load with a search path for profile names (SearchPath): a
// bare NAME is NAME.yaml in the first of search that has it (checked by
// trustedProfileFile), else the built-in. `extends: NAME` is looked up the
// same way, skipping files already in the chain, so a project's
// claude.yaml may say `extends: claude` to build on the next claude (the
// user's, the system's or the built-in).
func LoadFrom(nameOrFile string, search []SearchDir) (*Profile, string, error) {
	h := sha256.New()
	l := &loader{search: search, seen: map[string]bool{}}
	p, src, err := l.load(nameOrFile, "", h)
	if err != nil {
		return nil, "", &LoadError{nameOrFile, err}
	}
	p.setDefaults()
	p.NetworkYAML = networkSpec{Mode: p.Network, Preset: p.Preset} // as `profile show` writes it
	if err := p.Validate(); err != nil {
		return nil, "", &LoadError{nameOrFile, fmt.Errorf("profile %s: %w", nameOrFile, err)}
	}
	p.Source, p.Files = src, l.files
	return p, hex.EncodeToString(h.Sum(nil)), nil
}

type loader struct {
	search []SearchDir
	seen   map[string]bool // sources already in the extends chain
	files  []SourceFile    // files read, for CheckAllowed
}

// load reads the profile ref and its extends chain. from is the source of
// the profile whose `extends:` named ref ("" for the profile asked for).
func (l *loader) load(ref, from string, h io.Writer) (*Profile, string, error) {
	src, data, err := l.read(ref, from)
	if err != nil {
		return nil, "", err
	}
	if l.seen[src] {
		return nil, "", fmt.Errorf("profile %s: extends cycle", ref)
	}
	l.seen[src] = true
	l.files = appendSourceFile(l.files, src, data)
	h.Write(data)
	p, err := Parse(src, data)
	if err != nil {
		return nil, "", err
	}
	if p.Extends == "" {
		return p, src, nil
	}
	parent, _, err := l.load(p.Extends, src, h)
	if err != nil {
		return nil, "", err
	}
	return merge(parent, p), src, nil
}

// isName: a bare profile name (no path separator, no dot) — looked up in
// the search path and the built-ins; anything else is a file path.
func isName(nameOrFile string) bool { return !strings.ContainsAny(nameOrFile, "/.") }

// read finds ref's bytes. A NAME is looked up in the search path, then
// among the built-ins, and nowhere else: never as a file in the current
// directory (which is often the agent's workdir). A FILE asked for
// directly (from "") is read as typed; a relative FILE named by an
// `extends:` is relative to the folder of the profile that says it, never
// to the current directory. Every file read passes trustedProfileFile.
func (l *loader) read(ref, from string) (string, []byte, error) {
	if isName(ref) {
		for _, d := range l.search {
			p := filepath.Join(d.Dir, ref+".yaml")
			if l.seen[p] {
				continue // extends the next one of that name
			}
			data, ok, err := readSearched(d, p)
			if err != nil {
				return "", nil, err
			}
			if ok {
				return p, data, nil
			}
		}
		data, err := builtinFS.ReadFile(path.Join("builtin", ref+".yaml"))
		if err == nil {
			return "builtin:" + ref, data, nil
		}
		return "", nil, fmt.Errorf("%w %q%s (built-in: %s%s; a file needs a path: ./%s.yaml)", ErrUnknown, ref, suggestKey(ref, Builtins()), strings.Join(Builtins(), ", "), searchWords(l.search), ref)
	}
	p := ref
	if from != "" && !filepath.IsAbs(ref) {
		if strings.HasPrefix(from, "builtin:") {
			return "", nil, fmt.Errorf("profile %s: extends %q: a built-in profile extends names only", from, ref)
		}
		p = filepath.Join(filepath.Dir(from), ref)
	}
	data, err := readProfileFile(p)
	if err != nil {
		if from != "" {
			return "", nil, fmt.Errorf("profile %s: extends %q: %w", from, ref, err)
		}
		return "", nil, err
	}
	return p, data, nil
}

// readProfileFile reads a profile FILE (not found through the search path)
// under the search path's rule (trustedProfileFile): a plain file, not a
// link, owned by the caller or root and writable by its owner only, in
// folders that are too.
func readProfileFile(p string) ([]byte, error) {
	f, err := openNoFollow(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, errNotDirectory) {
			return nil, fmt.Errorf("profile %s: %w", p, err) // the file, by name: "profile: no such file" named none
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrUntrustedProfile, p, err)
	}
	defer f.Close()
	dir, err := filepath.Abs(filepath.Dir(p))
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", p, err)
	}
	if err := trustedProfileFile(SearchDir{Dir: dir, Kind: "file"}, p, f); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxProfileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", p, err)
	}
	if len(data) > maxProfileBytes {
		return nil, fmt.Errorf("profile %s: larger than %d bytes", p, maxProfileBytes)
	}
	return data, nil
}

// Parse decodes one profile document strictly: unknown keys, duplicate keys
// and extra documents are errors that name the source and line.
func Parse(src string, data []byte) (*Profile, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var p Profile
	if err := dec.Decode(&p); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty profile", src)
		}
		// The document as nodes, to name the key an error is about.
		var doc yaml.Node
		_ = yaml.Unmarshal(data, &doc)
		return nil, friendlyYAMLError(src, err, &doc)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fmt.Errorf("%s:%d: a profile is one YAML document", src, extra.Line)
	}
	p.Limits.OptionalMemory, p.Limits.OptionalPids = p.Limits.CgroupOptional, p.Limits.CgroupOptional
	p.Limits.OptionalCPU = p.Limits.CgroupOptional
	setCredentialWhere(p.Credentials, src)
	p.Network, p.Preset = p.NetworkYAML.Mode, p.NetworkYAML.Preset
	return &p, nil
}

// merge lays child over parent: scalars replace, lists append, maps merge.
func merge(parent, child *Profile) *Profile {
	out := *parent
	out.Name = child.Name
	out.Extends = child.Extends
	if child.Description != "" {
		out.Description = child.Description
	}
	if child.Network != "" {
		out.Network = child.Network
	}
	if child.Preset != "" {
		out.Preset = child.Preset
	}
	if child.Backend != "" {
		out.Backend = child.Backend
	}
	if child.Home.Mode != "" {
		out.Home.Mode = child.Home.Mode
	}
	out.Home.Writable = append(append([]string{}, parent.Home.Writable...), child.Home.Writable...)
	out.Home.Show = append(append([]string{}, parent.Home.Show...), child.Home.Show...)
	out.Home.Mask = append(append([]string{}, parent.Home.Mask...), child.Home.Mask...)
	out.Env.Pass = append(append([]string{}, parent.Env.Pass...), child.Env.Pass...)
	out.Env.Set = map[string]string{}
	for k, v := range parent.Env.Set {
		out.Env.Set[k] = v
	}
	for k, v := range child.Env.Set {
		out.Env.Set[k] = v
	}
	if child.RunAs != "" {
		out.RunAs = child.RunAs
	}
	if child.TTY != "" {
		out.TTY = child.TTY
	}
	if child.Workdir != "" {
		out.Workdir = child.Workdir
	}
	if child.Instructions != "" && parent.Instructions != InstructionsReadOnly {
		out.Instructions = child.Instructions
	}
	out.Require = append(append([]string{}, parent.Require...), child.Require...)
	out.Writable = append(append([]string{}, parent.Writable...), child.Writable...)
	out.State = mergeState(parent.State, child.State)
	out.CommandArgs = mergeCommandArgs(parent.CommandArgs, child.CommandArgs)
	out.Credentials = mergeCredentials(parent.Credentials, child.Credentials)
	out.Allow = append(append([]string{}, parent.Allow...), child.Allow...)
	out.UnixSockets = append(append([]string{}, parent.UnixSockets...), child.UnixSockets...)
	out.AcceptRisks = append(append([]string{}, parent.AcceptRisks...), child.AcceptRisks...)
	out.SocketFamilies = append(append([]SocketFamily{}, parent.SocketFamilies...), child.SocketFamilies...)
	if child.Vault.Receipts != "" {
		out.Vault.Receipts = child.Vault.Receipts
	}
	if child.Vault.View != "" {
		out.Vault.View = child.Vault.View
	}
	if len(child.Vault.Visible) > 0 {
		// A child narrows or replaces the parent's view, never adds to it
		// silently: its list is the view.
		out.Vault.Visible = append([]string{}, child.Vault.Visible...)
	}
	if child.Limits.WallTime != 0 {
		out.Limits.WallTime = child.Limits.WallTime
	}
	if child.Limits.Pids != 0 {
		out.Limits.Pids = child.Limits.Pids
	}
	if child.Limits.FileSize != 0 {
		out.Limits.FileSize = child.Limits.FileSize
	}
	if child.Limits.InboxBytes != 0 {
		out.Limits.InboxBytes = child.Limits.InboxBytes
	}
	if child.Limits.Memory != 0 {
		out.Limits.Memory = child.Limits.Memory
	}
	if child.Limits.CPU != 0 {
		out.Limits.CPU = child.Limits.CPU
	}
	if child.Limits.OpenFiles != 0 {
		out.Limits.OpenFiles = child.Limits.OpenFiles
	}
	if child.Limits.ScanEntries != 0 {
		out.Limits.ScanEntries = child.Limits.ScanEntries
	}
	if child.Limits.TmpBytes != 0 {
		out.Limits.TmpBytes = child.Limits.TmpBytes
	}
	if child.Limits.WorkdirBytes != 0 {
		out.Limits.WorkdirBytes = child.Limits.WorkdirBytes
	}
	// A limit the child sets itself is enforced strictly unless the child
	// says cgroup_optional itself: an inherited one covers only inherited
	// limits.
	out.Limits.CgroupOptional = parent.Limits.CgroupOptional || child.Limits.CgroupOptional
	out.Limits.OptionalMemory = child.Limits.CgroupOptional || (child.Limits.Memory == 0 && parent.Limits.OptionalMemory)
	out.Limits.OptionalPids = child.Limits.CgroupOptional || (child.Limits.Pids == 0 && parent.Limits.OptionalPids)
	out.Limits.OptionalCPU = child.Limits.CgroupOptional || (child.Limits.CPU == 0 && parent.Limits.OptionalCPU)
	return &out
}

func (p *Profile) setDefaults() {
	if p.Network == "" {
		p.Network = NetworkPublic
	}
	if p.Home.Mode == "" {
		p.Home.Mode = HomeAllowlist
	}
	if p.TTY == "" {
		p.TTY = "auto"
	}
	if p.Limits.TmpBytes == 0 {
		p.Limits.TmpBytes = DefaultTmpBytes
	}
	if p.Workdir == WorkdirPropose && p.Limits.WorkdirBytes == 0 {
		p.Limits.WorkdirBytes = DefaultWorkdirBytes
	}
}

// Validate checks the values of a resolved profile.
func (p *Profile) Validate() error {
	var errs []error
	switch p.Network {
	case NetworkHost, NetworkNone, NetworkPublic:
	case NetworkAllowlist:
		if len(p.Allow) == 0 && p.Preset == "" {
			errs = append(errs, fmt.Errorf("network: allowlist needs an egress preset (network: {mode: allowlist, preset: NAME}; presets: %s) or at least one allow entry (host:port)", strings.Join(Presets(), ", ")))
		}
	default:
		errs = append(errs, fmt.Errorf("network: %q is not none, allowlist, public or host%s", p.Network, suggestKey(p.Network, []string{NetworkNone, NetworkAllowlist, NetworkPublic, NetworkHost})))
	}
	switch p.Backend {
	case "", "namespace", "runc", "containerd":
	default:
		errs = append(errs, fmt.Errorf("backend: %q is not namespace, runc or containerd%s", p.Backend, suggestKey(p.Backend, []string{"namespace", "runc", "containerd"})))
	}
	switch p.Home.Mode {
	case "", HomeAllowlist, HomeRO, HomeHidden: // "": the default, allowlist
	default:
		errs = append(errs, fmt.Errorf("home.mode: %q is not allowlist, ro or hidden%s", p.Home.Mode, suggestKey(p.Home.Mode, []string{HomeAllowlist, HomeRO, HomeHidden})))
	}
	switch p.TTY {
	case "auto", "never":
	default:
		errs = append(errs, fmt.Errorf("tty: %q is not auto or never%s", p.TTY, suggestKey(p.TTY, []string{"auto", "never"})))
	}
	for _, w := range append(append([]string{}, p.Home.Writable...), p.Home.Mask...) {
		c := path.Clean(w)
		if path.IsAbs(w) || c == "." || c == ".." || strings.HasPrefix(c, "../") {
			errs = append(errs, fmt.Errorf("home path %q must be relative to $HOME and stay inside it", w))
		}
	}
	for _, w := range p.Home.Writable {
		c := path.Clean(w)
		for _, m := range DefaultMasks {
			if c == m || strings.HasPrefix(c, m+"/") || strings.HasPrefix(m, c+"/") {
				errs = append(errs, fmt.Errorf("home.writable %q overlaps the secret path ~/%s", w, m))
			}
		}
	}
	for _, w := range p.Writable {
		if !path.IsAbs(w) {
			errs = append(errs, fmt.Errorf("writable %q must be an absolute path", w))
		}
	}
	if p.Limits.Pids != 0 && p.Limits.Pids < 2 {
		errs = append(errs, fmt.Errorf("limits.pids: %d is below 2 (the agent and one child)", p.Limits.Pids))
	}
	if p.Limits.CPU < 0 || p.Limits.CPU > 4096 || (p.Limits.CPU > 0 && p.Limits.CPU < 0.01) {
		errs = append(errs, fmt.Errorf("limits.cpu: %g is not a number of cores between 0.01 and 4096", p.Limits.CPU))
	}
	if p.Limits.TmpBytes != 0 && p.Limits.TmpBytes < 1<<20 {
		errs = append(errs, fmt.Errorf("limits.tmp_bytes: %d is below 1MiB", p.Limits.TmpBytes))
	}
	if p.Limits.WorkdirBytes != 0 && p.Limits.WorkdirBytes < 1<<20 {
		errs = append(errs, fmt.Errorf("limits.workdir_bytes: %d is below 1MiB", p.Limits.WorkdirBytes))
	}
	if p.Workdir == WorkdirPropose && (p.Backend == "runc" || p.Backend == "containerd") {
		errs = append(errs, fmt.Errorf("workdir: propose needs the namespace backend (backend: %s cannot build the overlay); use workdir: direct with it", p.Backend))
	}
	switch p.Workdir {
	case "", WorkdirDirect, WorkdirPropose:
	default:
		errs = append(errs, fmt.Errorf("workdir: %q is not direct or propose%s", p.Workdir, suggestKey(p.Workdir, []string{WorkdirDirect, WorkdirPropose})))
	}
	if p.Limits.ScanEntries < 0 {
		errs = append(errs, fmt.Errorf("limits.scan_entries: %d is negative", p.Limits.ScanEntries))
	}
	if p.Limits.OpenFiles != 0 && p.Limits.OpenFiles < 16 {
		errs = append(errs, fmt.Errorf("limits.open_files: %d is below 16", p.Limits.OpenFiles))
	}
	if len(p.Allow) > 0 && p.Network != NetworkAllowlist {
		errs = append(errs, fmt.Errorf("allow: only meaningful with network: allowlist (network is %s)", p.Network))
	}
	if p.Preset != "" {
		if _, err := LoadPreset(p.Preset); err != nil {
			errs = append(errs, fmt.Errorf("network.preset: %w", err))
		}
	}
	for _, a := range p.Allow {
		if _, err := ParseAllow(a); err != nil {
			errs = append(errs, fmt.Errorf("allow: %w", err))
		}
	}
	switch p.Vault.Receipts {
	case "", ReceiptsOn, ReceiptsOff, ReceiptsRequired:
	default:
		errs = append(errs, fmt.Errorf("vault.receipts: %q: want on, off or required", p.Vault.Receipts))
	}
	switch p.Vault.View {
	case "", ViewAll, ViewInForce:
	default:
		errs = append(errs, fmt.Errorf("vault.view: %q: want all or in-force", p.Vault.View))
	}
	for _, v := range p.Vault.Visible {
		c := path.Clean(v)
		if path.IsAbs(v) || c == "." || c == ".." || strings.HasPrefix(c, "../") || strings.HasPrefix(c, ".") || strings.Contains(c, "/.") {
			errs = append(errs, fmt.Errorf("vault.visible: %q must be a vault folder (relative, no dot names, no ..)", v))
			continue
		}
		if c == "90-inbox" || strings.HasPrefix(c, "90-inbox/") {
			errs = append(errs, fmt.Errorf("vault.visible: %q: the session inbox is always visible, other sessions never", v))
		}
	}
	for _, s := range p.UnixSockets {
		if !path.IsAbs(s) || path.Clean(s) != s {
			errs = append(errs, fmt.Errorf("unix_sockets: %q must be a clean absolute path", s))
		}
	}
	for _, f := range p.SocketFamilies {
		if _, ok := f.Number(); !ok {
			errs = append(errs, fmt.Errorf("socket_families: %s", unknownFamily(string(f))))
		}
	}
	switch p.Instructions {
	case "", InstructionsReport, InstructionsReadOnly:
	default:
		errs = append(errs, fmt.Errorf("instructions: %q is not report or read-only%s", p.Instructions, suggestKey(p.Instructions, []string{InstructionsReport, InstructionsReadOnly})))
	}
	for _, r := range p.AcceptRisks {
		if r != RiskKeepGroups {
			errs = append(errs, fmt.Errorf("accept_risks: %q is not a known risk (known: %s)", r, RiskKeepGroups))
		}
	}
	for _, r := range p.Require {
		switch r {
		case "userns", "seccomp", "landlock":
		default:
			errs = append(errs, fmt.Errorf("require: %q is not userns, seccomp or landlock", r))
		}
	}
	errs = append(errs, credentialErrors(p)...)
	return errors.Join(errs...)
}
