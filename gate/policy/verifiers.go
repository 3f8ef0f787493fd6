package policy

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Verifier is an approved verification process (OKF's "approved
// verification process"): a command the gate runs under fedmem-run, with
// the named profile, for drafts of the listed types. Exit status 0 is
// evidence; anything else (a failure, a timeout) holds the draft.
//
//	verifiers:
//	  contract-test:
//	    types: [Fact, Runbook]
//	    command: [/usr/local/bin/check-note, --strict]
//	    profile: strict
//	    timeout: 30s
type Verifier struct {
	Name    string
	Types   []string
	Command []string
	// Profile is the fedmem-run profile (a built-in name or a YAML file);
	// default "strict".
	Profile string
	// Timeout bounds the run (fedmem-run --timeout); default 30s.
	Timeout time.Duration
	// Line is the policy line that defines the verifier.
	Line int
}

// Verifier defaults and bounds.
const (
	DefaultVerifierProfile = "strict"
	DefaultVerifierTimeout = 30 * time.Second
	MaxVerifierTimeout     = time.Hour
)

var verifierNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

// verifiers parses the `verifiers` mapping.
func (c *checker) verifiers(v *yaml.Node) map[string]Verifier {
	out := map[string]Verifier{}
	c.mapping(v, "verifiers", func(name string, n *yaml.Node) {
		what := "verifiers." + name
		if !verifierNameRe.MatchString(name) {
			c.errf(n, "%s: a verifier name is lower-case letters, digits, '.', '_' and '-' (it is recorded as process:%s)", what, name)
		}
		vf := Verifier{Name: name, Profile: DefaultVerifierProfile, Timeout: DefaultVerifierTimeout, Line: n.Line}
		c.mapping(n, what, func(k string, x *yaml.Node) {
			switch k {
			case "types":
				vf.Types = c.strings(x, what+".types")
			case "command":
				vf.Command = c.strings(x, what+".command")
				for _, a := range vf.Command {
					if strings.ContainsRune(a, 0) {
						c.errf(x, "%s.command: an argument holds a NUL byte", what)
					}
				}
			case "profile":
				vf.Profile = c.str(x, what+".profile")
				if vf.Profile == "" || strings.ContainsAny(vf.Profile, " \t\n\x00") {
					c.errf(x, "%s.profile must be a profile name or an absolute YAML path", what)
				}
			case "timeout":
				s := c.str(x, what+".timeout")
				d, err := time.ParseDuration(s)
				if err != nil || d < time.Second || d > MaxVerifierTimeout {
					c.errf(x, "%s.timeout must be a duration from 1s to 1h such as 30s (got %q)", what, s)
				} else {
					vf.Timeout = d
				}
			default:
				c.unknown(n, what, k)
			}
		})
		if len(vf.Types) == 0 {
			c.errf(n, "%s needs `types` (the note types it verifies)", what)
		}
		if len(vf.Command) == 0 || vf.Command[0] == "" {
			c.errf(n, "%s needs `command` (a list: program and arguments)", what)
		}
		out[name] = vf
	})
	return out
}

// VerifiersFor returns the verifiers that apply to a note type, by name.
func (p *Policy) VerifiersFor(typ string) []Verifier {
	var out []Verifier
	for _, v := range p.Verifiers {
		for _, t := range v.Types {
			if strings.EqualFold(t, typ) {
				out = append(out, v)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// String names a verifier as the gate records it.
func (v Verifier) String() string { return fmt.Sprintf("process:%s", v.Name) }
