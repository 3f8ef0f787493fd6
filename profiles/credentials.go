package profiles

import (
	"fmt"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/mounts/request"
)

// Credential is one of the caller's secrets that the agent may use but
// never hold (guarantee 8): fedmem-run reads it from its source outside
// the sandbox, gives the agent a placeholder of the same shape (in the
// environment variable, or in a generated copy of the file at the same
// path), and its proxy puts the real value on the wire only in requests to
// Hosts, in the header (or basic-auth password) the entry names.
type Credential struct {
	// Name names the credential in events, errors and explain output.
	Name string `yaml:"name" json:"name"`
	// Env is the caller's environment variable holding the secret.
	Env string `yaml:"env,omitempty" json:"env,omitempty"`
	// File is a JSON (or YAML) file under the caller's home ("~/…") or an
	// absolute path, and Path the dotted key path of the secret in it
	// ("tokens.access_token").
	// A file named *.yaml or *.yml is read as YAML, any other as JSON.
	File string `yaml:"file,omitempty" json:"file,omitempty"`
	Path string `yaml:"path,omitempty" json:"path,omitempty"`
	// Command is a program and its arguments ([secret-tool, lookup,
	// service, anthropic]) run by fedmem-run outside the sandbox, as the
	// caller, with the caller's environment, no stdin and a timeout of
	// CommandTimeout: its standard output, without the final newline, is
	// the secret. Optional: skipped when the program is not installed,
	// or exits non-zero with nothing on stdout (a keyring without the
	// entry). With env: the agent gets the placeholder in that
	// variable (the caller's own value of it is not read).
	Command []string `yaml:"command,omitempty" json:"command,omitempty"`
	// Hosts are where the real value may go: host, host:port or
	// *.domain[:port] (the allow-list grammar; no port: 443). Empty: the
	// value is never sent (a refresh token the agent must not hold).
	Hosts []string `yaml:"hosts,omitempty" json:"hosts,omitempty"`
	// Header is the request header that carries it: "x-api-key", or
	// "Authorization: Bearer" (a scheme after the colon).
	Header string `yaml:"header,omitempty" json:"header,omitempty"`
	// BasicAuth: the secret is the password of an Authorization: Basic
	// header (git over HTTPS).
	BasicAuth bool `yaml:"basic_auth,omitempty" json:"basic_auth,omitempty"`
	// Optional: a source that does not exist (unset variable, no file)
	// is skipped instead of refusing the session. A source that exists
	// but cannot be read or parsed always refuses it.
	Optional bool `yaml:"optional,omitempty" json:"optional,omitempty"`
	// KeepSuffix keeps the value's last characters in the placeholder:
	// for a client that recognises a key by its suffix (Claude Code
	// stores the last 20 characters of an approved API key, in clear, in
	// ~/.claude.json). At most 24, and at least 20 other characters are
	// replaced.
	KeepSuffix int `yaml:"keep_suffix,omitempty" json:"keep_suffix,omitempty"`
	// Body: the placeholder may travel in the body of a request to Hosts
	// (an OAuth refresh token sent to its token endpoint) and is replaced
	// there. A request that carries it is a refresh: see FromResponse.
	Body bool `yaml:"body,omitempty" json:"body,omitempty"`
	// FromResponse names the field of a refresh's JSON answer that holds
	// this credential's new value (access_token, refresh_token): the
	// proxy keeps the new real value, the agent gets the placeholder, and
	// after the session fedmem-run writes the new values into the source
	// file (atomically, keeping its mode and owner).
	FromResponse string `yaml:"from_response,omitempty" json:"from_response,omitempty"`
	// Seeded: File is the seed of one of the profile's state copies
	// (state: {seed: FILE}), which is all the agent sees of it: the file
	// itself is neither covered nor watched (the tool outside rewrites
	// it all the time), and at each start the copy gets the placeholder
	// at Path, and every real value in it is replaced (Claude Code's
	// ~/.claude.json keeps a Console login's API key, primaryApiKey).
	Seeded bool `yaml:"seeded,omitempty" json:"seeded,omitempty"`

	// Where is "FILE:LINE" of the entry, for errors at launch.
	Where string `yaml:"-" json:"where,omitempty"`
	line  int
}

// CommandTimeout bounds a credential's command source (the grammar of a
// source is mounts/request's, which the launcher reads too).
const CommandTimeout = request.CommandTimeout

// IsYAMLFile says whether a credential file is read as YAML (by its name).
func IsYAMLFile(f string) bool { return request.IsYAMLFile(f) }

var credentialKeys = []string{"name", "env", "file", "path", "command", "hosts", "header", "basic_auth", "optional", "keep_suffix", "body", "from_response", "seeded"}

// UnmarshalYAML decodes one entry strictly (unknown keys named with their
// line) and remembers its line.
func (c *Credential) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a credentials entry is a mapping with name, env or file, hosts and header", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		ok := false
		for _, v := range credentialKeys {
			ok = ok || k.Value == v
		}
		if !ok {
			return fmt.Errorf("line %d: credentials entry key %q is not one of %s%s", k.Line, k.Value, strings.Join(credentialKeys, ", "), suggestKey(k.Value, credentialKeys))
		}
	}
	type plain Credential
	var v plain
	if err := n.Decode(&v); err != nil {
		return err
	}
	*c = Credential(v)
	c.line = n.Line
	return nil
}

// HeaderName and Scheme split Header: "Authorization: Bearer" is
// Authorization and Bearer; "x-api-key" has no scheme.
func (c *Credential) HeaderName() string {
	if c.BasicAuth {
		return "Authorization"
	}
	h, _, _ := strings.Cut(c.Header, ":")
	return strings.TrimSpace(h)
}

// Scheme is the authorization scheme of Header ("Bearer"), or "Basic".
func (c *Credential) Scheme() string {
	if c.BasicAuth {
		return "Basic"
	}
	_, s, _ := strings.Cut(c.Header, ":")
	return strings.TrimSpace(s)
}

// HostRules are Hosts parsed (no port: 443).
func (c *Credential) HostRules() ([]AllowEntry, error) {
	var out []AllowEntry
	for _, h := range c.Hosts {
		r, err := ParseAllow(h)
		if err != nil {
			return nil, err
		}
		if r.Port == 0 {
			r.Port = 443
		}
		out = append(out, r)
	}
	return out, nil
}

// Injection says in words how the real value travels, for explain.
func (c *Credential) Injection() string {
	src := "env " + c.Env
	if c.File != "" {
		src = "file " + c.File + " at " + c.Path
	}
	if len(c.Command) > 0 {
		src = "command " + strings.Join(c.Command, " ") + " (run outside, as you)"
	}
	if len(c.Hosts) == 0 {
		out := src + ": placeholder only, never sent"
		if c.FromResponse != "" {
			out += "; refreshed from a refresh's " + c.FromResponse
		}
		return out
	}
	how := "header " + c.HeaderName()
	if c.Header == "" && c.Body {
		how = "request body"
	} else if c.Body {
		how += " and request body"
	}
	if s := c.Scheme(); s != "" && !c.BasicAuth {
		how += " (" + s + ")"
	}
	if c.BasicAuth {
		how = "basic-auth password"
	}
	out := src + ": " + how + " to " + strings.Join(c.Hosts, ", ")
	if c.FromResponse != "" {
		out += "; refreshed from a refresh's " + c.FromResponse
	}
	return out
}

// setWhere records the source of each entry that does not have one yet.
func setCredentialWhere(cs []Credential, src string) {
	for i := range cs {
		if cs[i].Where == "" {
			cs[i].Where = fmt.Sprintf("%s:%d", src, cs[i].line)
		}
	}
}

// credentialErrors checks the credentials of a resolved profile.
func credentialErrors(p *Profile) []error {
	var errs []error
	seen := map[string]bool{}
	for i := range p.Credentials {
		c := &p.Credentials[i]
		bad := func(f string, a ...any) {
			errs = append(errs, fmt.Errorf("%s: credentials[%d] %q: %s", c.Where, i, c.Name, fmt.Sprintf(f, a...)))
		}
		switch {
		case c.Name == "":
			bad("needs a name")
		case seen[c.Name]:
			bad("a second credential of that name")
		}
		seen[c.Name] = true
		sources := 0
		// env: with command: is where the agent gets the placeholder, not
		// a second source.
		for _, set := range []bool{c.Env != "" && c.Command == nil, c.File != "", c.Command != nil} {
			if set {
				sources++
			}
		}
		switch {
		case sources != 1:
			bad("needs exactly one source: env: VARIABLE, file: PATH (with path: KEY.PATH) or command: [PROGRAM, ARG…]")
		case c.File == "" && c.Path != "":
			bad("path: is for a file source")
		case c.Command != nil && (len(c.Command) == 0 || c.Command[0] == ""):
			bad("command: needs a program: [PROGRAM, ARG…]")
		case c.Env != "" && (strings.ContainsAny(c.Env, "= \t") || strings.HasPrefix(c.Env, "FEDMEM_")):
			bad("env %q is not a variable name fedmem passes", c.Env)
		case c.File != "" && c.Path == "":
			bad("file %s needs path: the key path of the secret in it (tokens.access_token)", c.File)
		case c.File != "" && !strings.HasPrefix(c.File, "~/") && !path.IsAbs(c.File):
			bad("file %q must be ~/… or absolute", c.File)
		case c.File != "" && path.Clean(strings.TrimPrefix(c.File, "~/")) != strings.TrimPrefix(c.File, "~/"):
			bad("file %q must be a clean path", c.File)
		}
		if c.Seeded && (c.File == "" || c.FromResponse != "" || HasWildcardKey(c.Path)) {
			bad("seeded: needs a file source (a state seed), no from_response and no * key")
		}
		if c.FromResponse != "" && c.File == "" {
			bad("from_response: only a file source can take a refreshed value")
		}
		if c.KeepSuffix < 0 || c.KeepSuffix > 24 {
			bad("keep_suffix: %d is not between 0 and 24", c.KeepSuffix)
		}
		if c.Path != "" {
			for _, k := range SplitKeyPath(c.Path) {
				if k == "" {
					bad("path %q has an empty key", c.Path)
					break
				}
			}
		}
		if HasWildcardKey(c.Path) && (len(c.Hosts) > 0 || c.FromResponse != "") {
			bad("path %q has a * key: such a credential is placeholder only (no hosts, no from_response)", c.Path)
		}
		if _, err := c.HostRules(); err != nil {
			bad("hosts: %v", err)
		}
		switch {
		case c.Header != "" && c.BasicAuth:
			bad("header and basic_auth: one way to travel, not two")
		case len(c.Hosts) > 0 && c.Header == "" && !c.BasicAuth && !c.Body:
			bad("hosts need header: NAME (or \"Authorization: Bearer\"), basic_auth: true or body: true: where the value travels")
		case len(c.Hosts) == 0 && (c.Header != "" || c.BasicAuth || c.Body):
			bad("header/basic_auth/body without hosts: the value would be sent nowhere")
		case c.Header != "" && (c.HeaderName() == "" || strings.ContainsAny(c.HeaderName(), " \t\r\n")):
			bad("header %q is not NAME or \"NAME: SCHEME\"", c.Header)
		}
	}
	return errs
}

// mergeCredentials: a child's entry replaces the parent's of the same
// name; new ones are added.
func mergeCredentials(parent, child []Credential) []Credential {
	out := append([]Credential{}, parent...)
	for _, c := range child {
		replaced := false
		for i := range out {
			if out[i].Name == c.Name {
				out[i], replaced = c, true
			}
		}
		if !replaced {
			out = append(out, c)
		}
	}
	return out
}

// HasWildcardKey is request.HasWildcardKey: the key path has a "*" key.
func HasWildcardKey(p string) bool { return request.HasWildcardKey(p) }

// SplitKeyPath is request.SplitKeyPath: `\.` is a dot inside a key.
func SplitKeyPath(p string) []string { return request.SplitKeyPath(p) }
