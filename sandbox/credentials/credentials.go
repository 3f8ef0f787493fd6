package credentials

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/mounts/request"
	"github.com/fedmem/fedmem/sandbox/netproxy"
)

// Source is one credential of a profile, as fedmem-run reads it: plain
// data that sandbox/launch makes from the profile's entry (this package
// never reads the profile schema). The fields mean what
// profiles.Credential's do.
type Source struct {
	Name    string
	Env     string
	File    string // "~/…" or absolute
	Path    string // the dotted key path in File (request.SplitKeyPath)
	Command []string
	// Hosts are where the real value may go, parsed (no port: 443).
	Hosts []netproxy.Rule
	// Header is the name of the request header that carries the value
	// ("x-api-key", "Authorization"), "" when none does (a basic-auth
	// password, a value sent in the body only).
	Header       string
	BasicAuth    bool
	Optional     bool
	KeepSuffix   int
	Body         bool
	FromResponse string
	Seeded       bool
	// Where is "FILE:LINE" of the profile's entry, for errors.
	Where string
}

// Secret is one credential read from its source: the real value stays in
// fedmem-run and its helper; the agent gets placeholder.
type Secret struct {
	cred *Source
	file string // the source file's absolute path (file sources)
	// target is the file it named when the session started, links
	// resolved: the refreshed tokens are written there and nowhere else
	// (rewriteCredentialFile). "" when it did not resolve.
	target      string
	path        string // the key path in file, its wildcards resolved
	real        string
	placeholder string
	// cover: the source file gets a generated copy bound over it and is
	// watched — every file source but a seed the agent does not see
	// (Start).
	cover bool
}

// Session is a session's credentials: what the agent gets instead
// (environment, generated files, the CA bundle) and the helper that
// injects the real values.
type Session struct {
	secrets []Secret
	dir     string // generated files, outside the sandbox, read-only inside
	helper  *exec.Cmd
	ctl     *os.File // fedmem-run's end of the handoff socket
	wg      sync.WaitGroup
	onEvent func(string, map[string]any)
	// stopWatch ends watch's watcher.
	stopWatch func()
	finished  sync.Once

	mu      sync.Mutex
	refused map[string]int    // credential → placeholders refused
	renewed map[string]string // credential → its new real value (a refresh)
}

// keyPath is the secret's key path in its file.
func (s Secret) keyPath() string {
	if s.path != "" {
		return s.path
	}
	return s.cred.Path
}

// refresh records a credential's new real value.
func (cs *Session) refresh(name, v string) {
	if v == "" {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.renewed == nil {
		cs.renewed = map[string]string{}
	}
	cs.renewed[name] = v
}

// persist writes refreshed values into their source files, after the
// session: the sandbox is gone (a rename during it would detach the
// cover of the file, see Watch). Each file is replaced atomically (a
// temporary file beside it, renamed over it) with its mode and owner.
func (cs *Session) persist() []error {
	cs.mu.Lock()
	renewed := cs.renewed
	cs.mu.Unlock()
	byFile := map[string][]Secret{}
	for _, s := range cs.secrets {
		if v, ok := renewed[s.cred.Name]; ok && s.file != "" {
			s.real = v
			byFile[s.file] = append(byFile[s.file], s)
		}
	}
	var errs []error
	for f, ss := range byFile {
		if err := rewriteCredentialFile(f, ss); err != nil {
			errs = append(errs, fmt.Errorf("credentials: store the refreshed tokens in %s: %w", f, err))
			continue
		}
		if now, err := filepath.EvalSymlinks(f); err != nil || now != ss[0].target {
			errs = append(errs, fmt.Errorf("credentials: %s was replaced during the session (it names %q now): not followed; the refreshed tokens are in %s, which it named at the start", f, now, ss[0].target))
		}
	}
	return errs
}

func rewriteCredentialFile(f string, ss []Secret) error {
	// A credential file that is a link (a dotfiles checkout) is written
	// where it pointed when the session started (Secret.target): the link
	// stays, and the new tokens get the mode of the file that held the old
	// ones — not the link's own 0777, which the rename would have put over
	// the link (TestRT18RefreshIntoLinkedFile). Never where it points now:
	// an agent that renamed a link of its own over it (a folder the
	// profile makes writable; a backend that binds the cover where the
	// link points) had the new real tokens written into its file
	// (TestRT18RefreshWriteBackFollowsAgentLink, runc backend).
	if len(ss) == 0 || ss[0].target == "" {
		return fmt.Errorf("%s did not resolve when the session started", f)
	}
	f = ss[0].target
	st, err := os.Lstat(f)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", f)
	}
	b, err := readBounded(f)
	if err != nil {
		return err
	}
	doc, err := decodeCredentialFile(f, b)
	if err != nil {
		return err
	}
	for _, s := range ss {
		if v, err := lookupPath(doc, s.keyPath()); err != nil || v == nil {
			return fmt.Errorf("%s: no %s any more", f, s.keyPath())
		}
		setPath(doc, s.keyPath(), s.real)
	}
	out, err := encodeCredentialFile(f, doc)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f), "."+filepath.Base(f)+".fedmem-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
		if err := tmp.Chown(int(sys.Uid), int(sys.Gid)); err != nil {
			tmp.Close()
			return err
		}
	}
	if _, err := tmp.Write(append(out, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), f)
}

// count records a "credential" event for the summary after the session.
func (cs *Session) count(name string, fields map[string]any) {
	if name != "credential" {
		return
	}
	if ok, _ := fields["allowed"].(bool); ok {
		return // a refresh, not a refusal
	}
	c, _ := fields["credential"].(string)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.refused == nil {
		cs.refused = map[string]int{}
	}
	cs.refused[c]++
}

// Summary is one line after the session, when placeholders were refused
// (never while the agent runs: it would be written over its screen).
func (cs *Session) Summary() string {
	if cs == nil {
		return ""
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if len(cs.refused) == 0 {
		return ""
	}
	var parts []string
	for c, n := range cs.refused {
		parts = append(parts, fmt.Sprintf("%s ×%d", c, n))
	}
	sort.Strings(parts)
	return "credentials: placeholders sent where they may not go were refused: " + strings.Join(parts, ", ") + " (see --events, event credential)"
}

// maxCredentialFile bounds a credential source file.
const maxCredentialFile = 1 << 20

// Read reads every credential from its source: env from environ, files
// under home. A missing source of an optional credential is
// skipped; any other missing, unreadable or malformed source is an error
// naming the profile's file and line — the session must not start with
// the real value inside (or without the placeholder the agent expects).
//
// writable are the host paths the agent may write (Plan.HostWritable): a
// command source's program found there is refused (commandInWritable).
func Read(srcs []Source, environ []string, home string, writable []string) ([]Secret, error) {
	var out []Secret
	for i := range srcs {
		c := &srcs[i]
		fail := func(f string, a ...any) error {
			return fmt.Errorf("%s: credential %q: %s (the session is refused: fedmem never starts an agent with a credential it could not replace)", c.Where, c.Name, fmt.Sprintf(f, a...))
		}
		var real, file string
		switch {
		case len(c.Command) > 0:
			if err := commandInWritable(c.Command[0], writable); err != nil {
				return nil, fail("%v", err)
			}
			v, absent, err := runCredentialCommand(c.Command, environ)
			if absent && c.Optional {
				continue
			}
			if err != nil {
				return nil, fail("%v", err)
			}
			real = v
		case c.Env != "":
			v, ok := lookupEnv(environ, c.Env)
			if !ok || v == "" {
				if c.Optional {
					continue
				}
				return nil, fail("environment variable %s is not set", c.Env)
			}
			real = v
		default:
			file = c.File
			if rest, ok := strings.CutPrefix(file, "~/"); ok {
				file = filepath.Join(home, rest)
			}
			b, err := readBounded(file)
			if errors.Is(err, fs.ErrNotExist) && c.Optional {
				continue
			}
			if err != nil {
				return nil, fail("%v", err)
			}
			doc, err := decodeCredentialFile(file, b)
			if err != nil {
				return nil, fail("%v", err)
			}
			if request.HasWildcardKey(c.Path) {
				// Placeholder only (profiles checks it): every string the
				// pattern names, none of which leaves in clear; an empty
				// one (a stale entry) is no secret.
				for _, m := range expandPath(doc, request.SplitKeyPath(c.Path), "") {
					if m.value == "" {
						continue
					}
					sec, err := newSecret(c, file, m.path, m.value, fail)
					if err != nil {
						return nil, err
					}
					out = append(out, sec)
				}
				continue
			}
			v, err := lookupPath(doc, c.Path)
			if v == nil && err == nil && c.Optional {
				continue
			}
			if err == nil && v == nil {
				err = fmt.Errorf("no %s in it", c.Path)
			}
			if err != nil {
				return nil, fail("%s: %v", file, err)
			}
			s, ok := v.(string)
			if !ok {
				return nil, fail("%s: %s is not a string", file, c.Path)
			}
			real = s
		}
		sec, err := newSecret(c, file, c.Path, real, fail)
		if err != nil {
			return nil, err
		}
		out = append(out, sec)
	}
	return out, nil
}

// newSecret checks a value read from its source and makes its placeholder.
func newSecret(c *Source, file, path, real string, fail func(string, ...any) error) (Secret, error) {
	if len(real) < 8 {
		return Secret{}, fail("the value is shorter than 8 characters: a placeholder that short would be found by chance")
	}
	for _, r := range real {
		if r < 0x21 || r > 0x7e {
			return Secret{}, fail("the value has a character outside printable ASCII: not a token")
		}
	}
	ph, err := placeholderFor(real, c.KeepSuffix)
	if err != nil {
		return Secret{}, fail("placeholder: %v", err)
	}
	s := Secret{cred: c, file: file, path: path, real: real, placeholder: ph}
	if file != "" {
		if t, err := filepath.EvalSymlinks(file); err == nil {
			s.target = t
		}
	}
	return s, nil
}

// pathMatch is one string a key path with wildcards names.
type pathMatch struct{ path, value string }

// expandPath follows keys through doc, a "*" key standing for every key
// of the object there (in sorted order), and returns each string found
// with its concrete path (dots in keys escaped, as SplitKeyPath reads
// them). Anything else on the way — absent, not an object, not a string
// at the end — names nothing.
func expandPath(doc any, keys []string, prefix string) []pathMatch {
	if len(keys) == 0 {
		if v, ok := doc.(string); ok {
			return []pathMatch{{prefix, v}}
		}
		return nil
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	join := func(k string) string {
		k = strings.ReplaceAll(k, ".", `\.`)
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	if keys[0] != "*" {
		return expandPath(m[keys[0]], keys[1:], join(keys[0]))
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	var out []pathMatch
	for _, k := range names {
		out = append(out, expandPath(m[k], keys[1:], join(k))...)
	}
	return out
}

// decodeCredentialFile reads a credential file's document: YAML for a
// *.yaml or *.yml file (request.IsYAMLFile), JSON otherwise.
func decodeCredentialFile(f string, b []byte) (any, error) {
	var doc any
	if request.IsYAMLFile(f) {
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("%s is not YAML: %v", f, err)
		}
		return doc, nil
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s is not JSON: %v", f, err)
	}
	return doc, nil
}

// encodeCredentialFile writes doc back in f's format (comments of a YAML
// file are not kept).
func encodeCredentialFile(f string, doc any) ([]byte, error) {
	if request.IsYAMLFile(f) {
		return yaml.Marshal(doc)
	}
	return json.MarshalIndent(doc, "", "  ")
}

// maxCommandOutput bounds a command source's output.
const maxCommandOutput = 64 << 10

// runCredentialCommand runs a command source outside the sandbox, as the
// caller, with environ, in "/", no stdin and request.CommandTimeout: its stdout
// without the final newline is the secret. absent: the program is not
// installed, or it exited non-zero with nothing on stdout (no such entry),
// which an optional credential skips.
func runCredentialCommand(argv, environ []string) (value string, absent bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), request.CommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// Not fedmem-run's working directory: that is mostly the workdir,
	// which the agent writes, and a lookup such as `python3 -m keyring`
	// imports from the directory it runs in — a keyring.py the agent
	// left there ran outside the sandbox, as the caller, at the next
	// session's start (TestRT18CredentialCommandRunsInWorkdir). "/" is
	// no one's to write; PWD and OLDPWD would still name the workdir.
	cmd.Dir = "/"
	cmd.Env = slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		return strings.HasPrefix(kv, "PWD=") || strings.HasPrefix(kv, "OLDPWD=")
	})
	cmd.WaitDelay = time.Second
	var out, errb cappedBuffer
	out.max, errb.max = maxCommandOutput, 512
	cmd.Stdout, cmd.Stderr = &out, &errb
	words := strings.Join(argv, " ")
	err = cmd.Run()
	switch {
	case ctx.Err() != nil:
		return "", false, fmt.Errorf("command %s did not answer within %v", words, request.CommandTimeout)
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist):
		return "", true, fmt.Errorf("command %s: %v", words, err)
	case err != nil:
		why := strings.TrimSpace(errb.String())
		if why != "" {
			why = " (stderr: " + why + ")"
		}
		return "", out.Len() == 0, fmt.Errorf("command %s: %v%s", words, err, why)
	case out.over:
		return "", false, fmt.Errorf("command %s: more than %d bytes on stdout: not a token", words, maxCommandOutput)
	}
	v := strings.TrimSuffix(strings.TrimSuffix(out.String(), "\n"), "\r")
	if v == "" {
		return "", true, fmt.Errorf("command %s printed nothing", words)
	}
	return v, false, nil
}

// commandInWritable refuses a command source's program that lies where
// the agent writes — found on a PATH that names a folder of the workdir
// (direnv's PATH_add bin) or named so: it would run outside the sandbox,
// as the caller, at every start (TestRT18CredentialCommandOnWorkdirPath).
// The program is found as exec.Command finds it (a relative name with a
// slash is taken from "/", where the command runs), links resolved.
func commandInWritable(name string, writable []string) error {
	prog := name
	if !strings.Contains(name, "/") {
		p, err := exec.LookPath(name)
		if err != nil {
			return nil // not installed: the run says so (optional: absent)
		}
		prog = p
	}
	if !filepath.IsAbs(prog) {
		prog = filepath.Join("/", prog)
	}
	if p, w, in := mounts.UnderAny(prog, writable); in {
		return fmt.Errorf("command %s is %s, under %s, which the agent writes: it would run outside the sandbox, as you, at the next start (name a program outside the paths the agent writes, by its absolute path)", name, p, w)
	}
	return nil
}

// cappedBuffer keeps the first max bytes written to it.
type cappedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

func lookupEnv(environ []string, k string) (string, bool) {
	v, ok := "", false
	for _, kv := range environ {
		if rest, found := strings.CutPrefix(kv, k+"="); found {
			v, ok = rest, true
		}
	}
	return v, ok
}

func readBounded(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxCredentialFile+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	if len(b) > maxCredentialFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, maxCredentialFile)
	}
	return b, nil
}

// lookupPath follows a dotted key path through JSON objects: nil, nil when
// a key is absent or null.
func lookupPath(doc any, path string) (any, error) {
	cur := doc
	for _, k := range request.SplitKeyPath(path) {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: not an object on the way", path)
		}
		if cur, ok = m[k]; !ok || cur == nil {
			return nil, nil
		}
	}
	return cur, nil
}

// setPath replaces the string at path (lookupPath found it).
func setPath(doc any, path string, v string) {
	keys := request.SplitKeyPath(path)
	cur := doc
	for _, k := range keys[:len(keys)-1] {
		cur = cur.(map[string]any)[k]
	}
	cur.(map[string]any)[keys[len(keys)-1]] = v
}

// placeholderFor makes a value of real's shape that clients accept: its
// vendor prefix (up to the last '-' or '_' in the first 16 characters,
// "sk-ant-api03-") kept, every other letter or digit replaced by a random
// one of the same class, punctuation kept. A JWT keeps its header and
// claims (clients read the expiry and the account from them) and gets a
// random signature: without the issuer's key it is worth nothing.
//
// keepSuffix keeps that many last characters too (Credential.KeepSuffix);
// at least 20 letters or digits are then replaced.
func placeholderFor(real string, keepSuffix int) (string, error) {
	keep := 0
	if parts := strings.Split(real, "."); len(parts) == 3 && strings.HasPrefix(real, "eyJ") {
		keep = len(parts[0]) + 1 + len(parts[1]) + 1
	} else {
		for i := 0; i < len(real) && i < 16; i++ {
			if real[i] == '-' || real[i] == '_' {
				keep = i + 1
			}
		}
	}
	for attempt := 0; attempt < 4; attempt++ {
		b := []byte(real)
		changed := 0
		end := len(b) - keepSuffix
		for i := keep; i < end; i++ {
			var set string
			switch c := b[i]; {
			case c >= 'a' && c <= 'z':
				set = "abcdefghijklmnopqrstuvwxyz"
			case c >= 'A' && c <= 'Z':
				set = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
			case c >= '0' && c <= '9':
				set = "0123456789"
			default:
				continue
			}
			n, err := rand.Int(rand.Reader, big.NewInt(int64(len(set))))
			if err != nil {
				return "", err
			}
			b[i] = set[n.Int64()]
			changed++
		}
		if min := 8 + 12*min(keepSuffix, 1); changed < min {
			return "", fmt.Errorf("fewer than %d letters or digits between the prefix and the kept suffix", min)
		}
		if string(b) != real {
			return string(b), nil
		}
	}
	return "", fmt.Errorf("could not make a placeholder that differs")
}

// credentialEnv rewrites the agent's environment: each env credential's
// variable holds its placeholder (set even where env.pass would not pass
// it: the agent is meant to use it), and any real value found in another
// variable is replaced too.
func credentialEnv(env []string, secrets []Secret) []string {
	out := make([]string, 0, len(env)+len(secrets))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		for _, s := range secrets {
			v = strings.ReplaceAll(v, s.real, s.placeholder)
		}
		out = append(out, k+"="+v)
	}
	for _, s := range secrets {
		if s.cred.Env == "" {
			continue
		}
		if i := index(out, s.cred.Env); i >= 0 {
			out[i] = s.cred.Env + "=" + s.placeholder
		} else {
			out = append(out, s.cred.Env+"="+s.placeholder)
		}
	}
	return out
}

// gitCredentialHelpers gives Git a credential helper for each host of a
// basic_auth credential, through the command-scope configuration
// (GIT_CONFIG_COUNT/KEY_n/VALUE_n, after agentEnv's): it hands out the
// placeholder as the password, which the proxy exchanges on the wire. The
// helper is inline shell in the environment: nothing the agent could
// rewrite for a later run outside.
func gitCredentialHelpers(env []string, secrets []Secret) []string {
	n := 0
	if i := index(env, "GIT_CONFIG_COUNT"); i >= 0 {
		n, _ = strconv.Atoi(strings.TrimPrefix(env[i], "GIT_CONFIG_COUNT="))
		env = append(env[:i:i], env[i+1:]...)
	}
	added := false
	for _, s := range secrets {
		if !s.cred.BasicAuth {
			continue
		}
		for _, h := range s.cred.Hosts {
			if h.Wildcard {
				continue // Git's credential URLs match a host, not a pattern of them
			}
			u := "https://" + h.Host
			if h.Port != 443 {
				u += ":" + strconv.Itoa(h.Port)
			}
			if strings.ContainsAny(s.placeholder, "'\n") {
				continue // not quotable in the helper's shell line
			}
			helper := "!f() { test \"$1\" = get || exit 0; echo username=x-access-token; echo 'password=" + s.placeholder + "'; }; f"
			env = append(env, "GIT_CONFIG_KEY_"+strconv.Itoa(n)+"=credential."+u+".helper", "GIT_CONFIG_VALUE_"+strconv.Itoa(n)+"="+helper)
			n++
			added = true
		}
	}
	if n > 0 || added {
		env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(n))
	}
	return env
}

// Start prepares session id's credentials once the sources are read: the
// generated copies of source files (placeholders in place of every real
// value) bound read-only over the real files (it adds their mounts to
// pl), the helper that holds the CA key and injects (only with a proxied
// network), and the CA bundle the agent trusts. It returns the agent's
// environment env with the placeholders (and the Git credential
// helpers) in it. The caller stops it (Stop).
func Start(id string, pl *mounts.Plan, env []string, proxied bool, secrets []Secret, environ []string, onEvent func(string, map[string]any)) (*Session, []string, error) {
	cs := &Session{secrets: secrets}
	cs.onEvent = func(name string, f map[string]any) {
		cs.count(name, f)
		if onEvent != nil {
			onEvent(name, f)
		}
	}
	dir, err := os.MkdirTemp("/var/tmp", "fedmem-cred-"+id+"-")
	if err != nil {
		return nil, env, fmt.Errorf("credentials: %w", err)
	}
	cs.dir = dir
	fail := func(err error) (*Session, []string, error) {
		cs.Stop()
		return nil, env, fmt.Errorf("credentials: %w", err)
	}
	// The agent (another uid for a root caller) reads these by name. The
	// CA files are public; a generated copy holds the rest of the
	// caller's file (often 0600: other settings, other secrets): the
	// folder can be walked, not listed, and each copy has a random name
	// no other local user can guess (TestRT18GeneratedCopyOtherUsers).
	if err := os.Chmod(dir, 0o711); err != nil {
		return fail(err)
	}
	// Generated copies, one per source file.
	files := map[string][]*Secret{}
	var order []string
	for i := range secrets {
		// A seed is what the agent's state copy is made from, and an
		// allow-list home does not show it; but a home the workdir holds
		// (or a folder the profile shows) does, real values and all
		// (TestRT18SeedVisibleWhenHomeIsWorkdir): then it is covered and
		// watched like any credential file.
		f := secrets[i].file
		secrets[i].cover = f != "" && (!secrets[i].cred.Seeded || shownByPlan(pl, f))
	}
	for i := range secrets {
		if f := secrets[i].file; secrets[i].cover {
			if files[f] == nil {
				order = append(order, f)
			}
			files[f] = append(files[f], &secrets[i])
		}
	}
	if err := linkedCoversWritable(order, pl.HostWritable()); err != nil {
		return fail(err)
	}
	for n, f := range order {
		b, err := readBounded(f)
		if err != nil {
			return fail(err)
		}
		doc, err := decodeCredentialFile(f, b)
		if err != nil {
			return fail(err)
		}
		for _, s := range files[f] {
			setPath(doc, s.keyPath(), s.placeholder)
		}
		gen, err := encodeCredentialFile(f, doc)
		if err != nil {
			return fail(err)
		}
		// A real value elsewhere in the file (another key holding the
		// same token) is a placeholder too.
		for _, s := range secrets {
			gen = bytes.ReplaceAll(gen, []byte(s.real), []byte(s.placeholder))
		}
		var rnd [16]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return fail(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("file-%d-%x-%s", n, rnd, filepath.Base(f)))
		if err := os.WriteFile(p, append(gen, '\n'), 0o644); err != nil {
			return fail(err)
		}
		pl.Mounts = append(pl.Mounts, pinCredentialDirs(pl, f)...)
		pl.Mounts = append(pl.Mounts, mounts.Mount{Kind: mounts.BindRO, Source: p, Target: f,
			Why: "credential placeholders (guarantee 8): the real file stays outside"})
		// A credential file that is a link (a dotfiles checkout) is read
		// through it: the file it names is covered too, where it lies (the
		// workdir, a shown folder), or the agent reads the real file there
		// (TestCredentialFileLinkIntoWorkdir).
		if real, err := filepath.EvalSymlinks(f); err == nil && real != f {
			pl.Mounts = append(pl.Mounts, pinCredentialDirs(pl, real)...)
			pl.Mounts = append(pl.Mounts, mounts.Mount{Kind: mounts.BindRO, Source: p, Target: real,
				Why: "credential placeholders (guarantee 8): the file " + f + " links to"})
		}
	}
	if err := coverStrayCopies(pl, secrets, dir); err != nil {
		return fail(err)
	}
	if err := seedPlaceholders(pl, secrets); err != nil {
		return fail(err)
	}
	env = gitCredentialHelpers(credentialEnv(env, secrets), secrets)
	if !proxied {
		// No proxy, no injection: the agent holds placeholders only.
		return cs, env, nil
	}
	if err := cs.startHelper(id, environ, pl.HostWritable(), cs.onEvent); err != nil {
		return fail(err)
	}
	// The CA bundle the agent's clients are pointed at lives in dir, under
	// the host's /var/tmp, which is a private tmpfs inside (issue 22): bind
	// the folder back, read-only, at its own path.
	pl.Mounts = append(pl.Mounts, mounts.Mount{Kind: mounts.BindRO, Source: dir, Target: dir, Dir: true,
		Why: "credentials: the session CA bundle (guarantee 8), read-only"})
	return cs, env, nil
}

// shownByPlan reports whether the agent sees host path f through a folder
// the plan binds (read-only or writable: the workdir, a shown or writable
// home folder, a home the workdir holds).
func shownByPlan(pl *mounts.Plan, f string) bool {
	if pl == nil {
		return false
	}
	for _, m := range pl.Mounts {
		if m.Dir && m.Source != "" && (m.Kind == mounts.BindRO || m.Kind == mounts.BindRW || m.Kind == mounts.Pinned) &&
			(f == m.Source || m.Source == "/" || strings.HasPrefix(f, m.Source+"/")) {
			return true
		}
	}
	return false
}

// maxStrayFile bounds the files coverStrayCopies reads: a larger one (a
// long transcript) is not searched (docs/threat-model.md, guarantee 8).
const maxStrayFile = 4 << 20

// coverStrayCopies covers every regular file under a writable folder of
// the home (a BindRW of the plan under its Home) whose bytes hold a real
// value with a copy that holds the placeholders instead, read-only, as a
// source file is covered. A tool keeps copies of the files a credential
// names where the profile does not look: Claude Code's backups of
// ~/.claude.json in ~/.claude/backups/ (.claude.json.backup.<ms>), a
// settings.json.backup beside the settings — the real key, readable in the
// writable ~/.claude (TestRT18ClaudeConfigBackups). Not one more name: a
// rule, whatever holds the value. Links are not followed (what a link
// names outside the folder is not shown through it); files already
// covered, state copies (seedPlaceholders) and files over maxStrayFile
// are left.
func coverStrayCopies(pl *mounts.Plan, secrets []Secret, dir string) error {
	if pl == nil || pl.Home == "" || len(secrets) == 0 {
		return nil
	}
	covered := map[string]bool{}
	var roots []string
	for _, m := range pl.Mounts {
		switch {
		case !m.Dir:
			covered[filepath.Clean(m.Target)] = true
		case m.Kind == mounts.BindRW && !m.State && m.Source != "" && m.Source != pl.Home && strings.HasPrefix(m.Source, pl.Home+"/"):
			roots = append(roots, m.Source)
		}
	}
	// A home the agent sees whole (the workdir holds it): its top level's
	// files too, not its folders (a whole home is too much to read at
	// each start) — Claude Code up to 2.1.49 keeps its backups there,
	// ~/.claude.json.backup.<ms>.
	top := shownByPlan(pl, pl.Home)
	if top {
		roots = append(roots, pl.Home)
	}
	n := 0
	for _, root := range roots {
		var hits []string
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && p != root && top && root == pl.Home {
				return fs.SkipDir
			}
			if err != nil || !d.Type().IsRegular() || covered[p] {
				return nil // unreadable: the agent cannot read it either
			}
			if info, err := d.Info(); err != nil || info.Size() > maxStrayFile {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			for _, s := range secrets {
				if bytes.Contains(b, []byte(s.real)) {
					hits = append(hits, p)
					break
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, f := range hits {
			b, err := readBounded(f)
			if err != nil {
				return err
			}
			for _, s := range secrets {
				b = bytes.ReplaceAll(b, []byte(s.real), []byte(s.placeholder))
			}
			var rnd [16]byte
			if _, err := rand.Read(rnd[:]); err != nil {
				return err
			}
			c := filepath.Join(dir, fmt.Sprintf("stray-%d-%x-%s", n, rnd, filepath.Base(f)))
			n++
			if err := os.WriteFile(c, b, 0o644); err != nil {
				return err
			}
			covered[f] = true
			pl.Mounts = append(pl.Mounts, pinCredentialDirs(pl, f)...)
			pl.Mounts = append(pl.Mounts, mounts.Mount{Kind: mounts.BindRO, Source: c, Target: f,
				Why: "credential placeholders (guarantee 8): a copy of a real value in a writable home folder"})
		}
	}
	return nil
}

// seedPlaceholders gives each state copy seeded from a seeded
// credential's file (Source.Seeded) that credential's
// placeholder at its path, and replaces every real value found in any
// state copy by its placeholder. It runs after prepareState (which copies
// a newer seed, real values and all) and before the sandbox exists; the
// copy keeps its times (the seed's refresh compares them).
func seedPlaceholders(pl *mounts.Plan, secrets []Secret) error {
	for _, m := range pl.Mounts {
		if !m.State || m.Seed == "" || m.Dir {
			continue
		}
		var mine []Secret
		for _, s := range secrets {
			if s.cred.Seeded && filepath.Clean(s.file) == filepath.Clean(m.Seed) {
				mine = append(mine, s)
			}
		}
		st, err := os.Lstat(m.Source)
		if errors.Is(err, fs.ErrNotExist) {
			if len(mine) > 0 {
				return fmt.Errorf("the state copy %s of %s is missing: credential %s has nowhere to go", m.Source, m.Seed, mine[0].cred.Name)
			}
			continue
		}
		if err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("the state copy %s is not a regular file", m.Source)
		}
		b, err := readBounded(m.Source)
		if err != nil {
			return err
		}
		out := b
		if len(mine) > 0 {
			// A copy the agent left unreadable has no key path to set; its
			// bytes are still searched below.
			if doc, err := decodeCredentialFile(m.Source, b); err == nil {
				changed := false
				for _, s := range mine {
					if v, err := lookupPath(doc, s.keyPath()); err == nil && v != nil {
						setPath(doc, s.keyPath(), s.placeholder)
						changed = true
					}
				}
				if changed {
					if enc, err := encodeCredentialFile(m.Source, doc); err == nil {
						out = append(enc, '\n')
					}
				}
			}
		}
		for _, s := range secrets {
			out = bytes.ReplaceAll(out, []byte(s.real), []byte(s.placeholder))
		}
		if bytes.Equal(out, b) {
			continue
		}
		f, err := os.OpenFile(m.Source, os.O_WRONLY|os.O_TRUNC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		_, werr := f.Write(out)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("the state copy %s: %w", m.Source, werr)
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			_ = os.Chtimes(m.Source, time.Unix(sys.Atim.Unix()), time.Unix(sys.Mtim.Unix()))
		}
	}
	for _, s := range secrets {
		if !s.cred.Seeded {
			continue
		}
		found := false
		for _, m := range pl.Mounts {
			found = found || (m.State && m.Seed != "" && filepath.Clean(m.Seed) == filepath.Clean(s.file))
		}
		if !found {
			return fmt.Errorf("%s: credential %q is seeded: its file %s is no state seed of the profile (state: {seed: ...}): the agent would see the real file", s.cred.Where, s.cred.Name, s.file)
		}
	}
	return nil
}

// AbsentFiles are the source files of the file credentials that do not exist at the start (optional ones): watched, so
// that one the agent makes is moved aside after the session
// (Plan.Watch). A credential file is read by the user's tool outside: an
// agent's ~/.claude/.credentials.json would log the user's next claude into
// the agent's account (TestCredentialFilePlanted). A login made inside the
// sandbox is moved aside too (restore it with mv).
//
// A name the plan already keeps absent (a persistence placeholder:
// ~/.claude/settings.json, "must not be created") is left out: the agent
// cannot make it, and the placeholder itself would be taken for a planted
// file and moved aside after every session.
func AbsentFiles(srcs []Source, home string, pl *mounts.Plan) []string {
	kept := map[string]bool{}
	if pl != nil {
		for _, m := range pl.Mounts {
			if m.Placeholder {
				kept[filepath.Clean(m.Target)] = true
			}
		}
	}
	var out []string
	for i := range srcs {
		f := srcs[i].File
		if f == "" || srcs[i].Seeded {
			continue // a seed is the tool's own file outside: the agent sees its copy
		}
		if rest, ok := strings.CutPrefix(f, "~/"); ok {
			f = filepath.Join(home, rest)
		}
		if kept[filepath.Clean(f)] {
			continue
		}
		if _, err := os.Lstat(f); errors.Is(err, fs.ErrNotExist) && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// pinCredentialDirs pins (mounts.Pinned: bound onto itself, writable as
// before) every directory between the writable path that holds the
// credential file f and f, parents first. The cover of f is a file bind
// that travels with its dentry: without the pins an agent whose workdir
// holds the home renames ~/.claude aside (and a folder of its own into its
// place) and reads the real file under the new name in the next session
// (TestCredentialCoverRenamedAway). A mount point cannot be renamed
// (EBUSY). A link on the way ends the chain: what it names is elsewhere.
func pinCredentialDirs(pl *mounts.Plan, f string) []mounts.Mount {
	within := func(p, base string) bool {
		return p == base || base == "/" || strings.HasPrefix(p, base+"/")
	}
	root := ""
	for _, w := range pl.Writable {
		if w = filepath.Clean(w); within(f, w) && f != w && len(w) > len(root) {
			root = w
		}
	}
	if root == "" {
		return nil
	}
	if h := pl.HomeTop; h != "" && within(f, h) && within(h, root) {
		// The read-only top of a home in a writable path holds f: nothing
		// there can be renamed (EROFS), and a pin — a writable bind of the
		// host's directory under runc and containerd — would make it
		// writable again.
		return nil
	}
	pinned := map[string]bool{}
	for _, m := range pl.Mounts {
		if m.Kind == mounts.Pinned {
			pinned[m.Target] = true
		}
	}
	var out []mounts.Mount
	rel, err := filepath.Rel(root, filepath.Dir(f))
	if err != nil || rel == "." {
		return nil
	}
	cur := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		st, err := os.Lstat(cur)
		if err != nil || !st.IsDir() {
			break
		}
		if !pinned[cur] {
			out = append(out, mounts.Mount{Kind: mounts.Pinned, Source: cur, Target: cur, Dir: true,
				Why: "holds credential file " + f + ": a mount point cannot be renamed away"})
		}
	}
	return out
}

// startHelper starts fedmem-cred with its config on stdin and the handoff
// socket on fd 3, and writes the CA bundle from its hello.
//
// A helper found where the agent writes (a PATH folder of the workdir) is
// refused: it would be handed every real value
// (TestRT18CredHelperOnWorkdirPath).
func (cs *Session) startHelper(session string, environ, writable []string, onEvent func(string, map[string]any)) error {
	path, err := HelperPath()
	if err != nil {
		return fmt.Errorf("fedmem-cred not found beside fedmem-run nor in PATH: %w", err)
	}
	if err := commandInWritable(path, writable); err != nil {
		return fmt.Errorf("the credential helper: %w", err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	cs.ctl = os.NewFile(uintptr(fds[0]), "cred-ctl")
	theirs := os.NewFile(uintptr(fds[1]), "cred-helper")
	defer theirs.Close()
	cfg := netproxy.HelperConfig{Session: session}
	for _, s := range cs.secrets {
		hosts := s.cred.Hosts
		cfg.Creds = append(cfg.Creds, netproxy.HelperCred{Name: s.cred.Name, Placeholder: s.placeholder, Real: s.real,
			Header: s.cred.Header, Basic: s.cred.BasicAuth, Hosts: hosts,
			Body: s.cred.Body, FromResponse: s.cred.FromResponse, File: s.file})
		if s.cred.BasicAuth || len(hosts) == 0 || s.cred.Header == "" {
			cfg.Creds[len(cfg.Creds)-1].Header = ""
		}
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	cmd := exec.Command(path, "serve")
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stdin = bytes.NewReader(cfgJSON)
	cmd.Stderr = os.Stderr
	// The helper verifies the real hosts against the system roots (Go
	// honours SSL_CERT_FILE and SSL_CERT_DIR); nothing else of the
	// caller's environment, none of its secrets.
	cmd.Env = []string{}
	for _, k := range []string{"SSL_CERT_FILE", "SSL_CERT_DIR"} {
		if v, ok := lookupEnv(environ, k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	cs.helper = cmd
	br := bufio.NewReaderSize(stdout, 64<<10)
	line, err := br.ReadBytes('\n')
	var hello netproxy.HelperHello
	if err == nil {
		err = json.Unmarshal(line, &hello)
	}
	if err == nil && hello.Error != "" {
		err = errors.New(hello.Error)
	}
	if err == nil && hello.CAPEM == "" {
		err = errors.New("no CA certificate in its hello")
	}
	if err != nil {
		return fmt.Errorf("fedmem-cred: %w", err)
	}
	cs.wg.Add(1)
	go func() {
		defer cs.wg.Done()
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				var e netproxy.HelperEvent
				switch {
				case json.Unmarshal(line, &e) != nil || e.Name == "":
				case e.Name == netproxy.HelperRefreshed:
					// A new real value: kept for the file, never an event.
					name, _ := e.Fields["credential"].(string)
					v, _ := e.Fields["value"].(string)
					cs.refresh(name, v)
				case onEvent != nil:
					onEvent(e.Name, e.Fields)
				}
			}
			if err != nil {
				return
			}
		}
	}()
	roots, _ := systemRoots(environ)
	caFile := filepath.Join(cs.dir, "session-ca.pem")
	bundle := filepath.Join(cs.dir, "ca-bundle.pem")
	if err := os.WriteFile(caFile, []byte(hello.CAPEM), 0o644); err != nil {
		return err
	}
	all := append(append(roots, '\n'), hello.CAPEM...)
	if err := os.WriteFile(bundle, all, 0o644); err != nil {
		return err
	}
	return nil
}

// CAEnv are the variables that point the agent's TLS clients at the CA
// bundle (system roots + the session CA), or, for Node, at the session CA
// it adds to its own roots.
func (cs *Session) CAEnv(env []string) []string {
	if cs == nil || cs.helper == nil {
		return env
	}
	bundle, ca := filepath.Join(cs.dir, "ca-bundle.pem"), filepath.Join(cs.dir, "session-ca.pem")
	set := map[string]string{"SSL_CERT_FILE": bundle, "REQUESTS_CA_BUNDLE": bundle, "CURL_CA_BUNDLE": bundle,
		"GIT_SSL_CAINFO": bundle, "NODE_EXTRA_CA_CERTS": ca}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if i := index(env, k); i >= 0 {
			env[i] = k + "=" + set[k]
		} else {
			env = append(env, k+"="+set[k])
		}
	}
	return env
}

// systemRoots are the trust anchors the agent keeps: the caller's
// SSL_CERT_FILE, else the first system bundle that exists (Go's list).
func systemRoots(environ []string) ([]byte, error) {
	cands := []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/ca-bundle.pem",
		"/etc/pki/tls/cacert.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/ssl/cert.pem"}
	if v, ok := lookupEnv(environ, "SSL_CERT_FILE"); ok && v != "" {
		cands = []string{v}
	}
	for _, c := range cands {
		if b, err := os.ReadFile(c); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("no system CA bundle")
}

// ProxyCredentials is the proxy's view: placeholders and hosts, and the
// handoff of an intercepted connection to the helper.
func (cs *Session) ProxyCredentials(onRefused func(credential, host string, port int, where string)) *netproxy.Credentials {
	if cs == nil {
		return nil
	}
	cr := &netproxy.Credentials{OnRefused: func(name, host string, port int, where string) {
		cs.count("credential", map[string]any{"credential": name})
		if onRefused != nil {
			onRefused(name, host, port, where)
		}
	}}
	for _, s := range cs.secrets {
		cr.Secrets = append(cr.Secrets, netproxy.Secret{Name: s.cred.Name, Placeholder: s.placeholder, Hosts: s.cred.Hosts})
	}
	if cs.helper != nil {
		cr.Hand = cs.hand
	}
	return cr
}

// hand sends the agent's connection to the helper (SCM_RIGHTS); this
// process's copy is closed by the proxy when hand returns.
func (cs *Session) hand(c net.Conn, pre []byte, host string, port int, addrs []netip.AddrPort) {
	h := netproxy.Handoff{Host: host, Port: port, Pre: pre}
	for _, a := range addrs {
		h.Addrs = append(h.Addrs, a.String())
	}
	msg, err := json.Marshal(h)
	if err != nil {
		return
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	var serr error
	cerr := raw.Control(func(fd uintptr) {
		serr = unix.Sendmsg(int(cs.ctl.Fd()), msg, unix.UnixRights(int(fd)), nil, 0)
	})
	if err := errors.Join(cerr, serr); err != nil && cs.onEvent != nil {
		// The helper is gone: the agent's connection closes unserved.
		cs.onEvent("network", map[string]any{"method": "CONNECT", "host": host, "port": port, "allowed": false,
			"reason": "credential proxy: fedmem-cred did not take the connection: " + err.Error()})
	}
}

// Finish ends the watcher and the helper and stores refreshed values in
// their files; it runs once the sandbox is gone, and returns what to tell
// the user.
func (cs *Session) Finish() []string {
	if cs == nil {
		return nil
	}
	var out []string
	cs.finished.Do(func() {
		if cs.stopWatch != nil {
			cs.stopWatch()
		}
		if cs.ctl != nil {
			cs.ctl.Close()
		}
		if cs.helper != nil {
			// The helper ends when the handoff socket closes; its stdout
			// then ends the event reader. One that does not is killed.
			read := make(chan struct{})
			go func() { cs.wg.Wait(); close(read) }()
			select {
			case <-read:
			case <-time.After(2 * time.Second):
				_ = cs.helper.Process.Kill()
				<-read
			}
			_ = cs.helper.Wait()
		}
		stored := map[string]bool{}
		cs.mu.Lock()
		for _, s := range cs.secrets {
			if _, ok := cs.renewed[s.cred.Name]; ok && s.file != "" {
				stored[s.file] = true
			}
		}
		cs.mu.Unlock()
		errs := cs.persist()
		for _, err := range errs {
			out = append(out, err.Error())
		}
		if len(errs) == 0 {
			for f := range stored {
				out = append(out, "credentials: the tokens refreshed during the session are stored in "+f)
			}
		}
		sort.Strings(out)
	})
	return out
}

// Stop finishes (if the session did not) and removes the generated files.
func (cs *Session) Stop() {
	if cs == nil {
		return
	}
	cs.Finish()
	if cs.dir != "" {
		os.RemoveAll(cs.dir)
	}
}

// HelperPath finds fedmem-cred beside the running executable, then in
// PATH.
func HelperPath() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "fedmem-cred")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return exec.LookPath("fedmem-cred")
}

func index(env []string, k string) int {
	for i, kv := range env {
		if strings.HasPrefix(kv, k+"=") {
			return i
		}
	}
	return -1
}

// linkedCoversWritable refuses a credential file that is a symbolic link
// inside a folder the agent writes (a profile's home.writable): the agent
// can rename a link of its own over it, and a backend that binds the
// cover where the link points (runc) then showed the user's tool, after
// the session, the agent's file (TestRT18RefreshWriteBackFollowsAgentLink
// under runc). The namespace backend refused such a mount point already;
// now every backend does, before anything of the session exists.
func linkedCoversWritable(files, writable []string) error {
	for _, f := range files {
		fi, err := os.Lstat(f)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			continue
		}
		for _, w := range writable {
			if w = filepath.Clean(w); f != w && strings.HasPrefix(f, w+"/") {
				return fmt.Errorf("mount point %s is a symbolic link in %s, which the agent writes: it could put its own link there and the caller's tool would read its file after the session; replace the link by the file it names, or keep the folder read-only", f, w)
			}
		}
	}
	return nil
}
