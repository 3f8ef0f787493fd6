package profiles

import (
	"fmt"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/mounts/request"
)

// StateRoot is where per-profile state is kept, relative to $HOME:
// ~/.local/share/fedmem/<profile>/<path>.
const StateRoot = request.StateRoot

// State is one entry of a profile's `state:` list: a path under $HOME the
// agent may write and that outlives the session (caches, module stores, an
// agent's own state file). By default its content is the profile's own,
// kept under ~/.local/share/fedmem/<profile>/<path> and bound writable at
// ~/<path>: what an agent leaves there never reaches the user's real
// directory, where tools outside the sandbox would pick it up.
//
// In YAML an entry is either a path ("~/.cache/" or ".cache/"; a trailing
// slash marks a directory, and a path without one is a directory too unless
// it is seeded) or a mapping:
//
//	state:
//	  - ~/.cache/
//	  - {path: go/pkg/mod/, real: go/pkg/mod/}          # the user's own directory
//	  - {path: .claude/.claude.json, seed: .claude.json} # a per-profile copy of the user's file
type State struct {
	// Path is where the agent sees it, relative to $HOME.
	Path string `yaml:"path" json:"path"`
	// Real, when set, binds the user's own path (relative to $HOME)
	// instead of the per-profile copy: writes reach the user's directory.
	Real string `yaml:"real,omitempty" json:"real,omitempty"`
	// Seed, when set, makes the entry a file: the per-profile copy is
	// refreshed from the user's own file (relative to $HOME) whenever that
	// one is newer, so the agent starts from the user's state (onboarding,
	// trusted folders) while its own writes stay in the copy.
	Seed string `yaml:"seed,omitempty" json:"seed,omitempty"`
}

// IsDir reports whether the entry is a directory (everything but a seeded
// file, or a real file named without a trailing slash).
func (s State) IsDir() bool {
	if s.Seed != "" {
		return false
	}
	if s.Real != "" {
		return strings.HasSuffix(s.Path, "/") || strings.HasSuffix(s.Real, "/")
	}
	return true
}

// Clean is Path relative to $HOME, without "~/" and trailing slash.
func (s State) Clean() string { return cleanHomeRel(s.Path) }

func cleanHomeRel(p string) string {
	p = strings.TrimPrefix(p, "~/")
	return path.Clean(p)
}

// UnmarshalYAML accepts a scalar path or a mapping.
func (s *State) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		s.Path = n.Value
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a state entry is a path (~/.cache/) or a mapping with path, real or seed", n.Line)
	}
	type plain State
	var v plain
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		switch k.Value {
		case "path", "real", "seed":
		default:
			return fmt.Errorf("line %d: state entry key %q is not path, real or seed%s", k.Line, k.Value, suggestKey(k.Value, []string{"path", "real", "seed"}))
		}
	}
	if err := n.Decode(&v); err != nil {
		return err
	}
	*s = State(v)
	if s.Path == "" {
		return fmt.Errorf("line %d: a state entry needs a path", n.Line)
	}
	return nil
}

// validStateName reports whether a profile's name can name its state
// directory: ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$ (by hand: that regexp's
// {0,63} compiles to a large program at every start of fedmem-run and of
// the sandbox's init, issue 9).
func validStateName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// stateErrors checks the state entries of a resolved profile. Persistence
// paths (HomePersist: shell startup files, Git's global config, agents'
// settings and hooks) and secrets never become state, and state never
// holds the per-profile store itself: such an entry is an error naming the
// path, not a silent exception.
func stateErrors(p *Profile) []error {
	var errs []error
	if len(p.State) > 0 && !validStateName(p.Name) {
		errs = append(errs, &RuleError{Field: "name", Value: p.Name, Rule: "state-profile-name",
			Msg: fmt.Sprintf("name %q cannot name a state directory (~/%s/NAME): letters, digits, '.', '_' and '-' only", p.Name, StateRoot)})
	}
	for i, s := range p.State {
		for _, rel := range []struct{ key, v string }{{"path", s.Path}, {"real", s.Real}, {"seed", s.Seed}} {
			if rel.v == "" {
				continue
			}
			c := cleanHomeRel(rel.v)
			if path.IsAbs(strings.TrimPrefix(rel.v, "~/")) || c == "." || c == ".." || strings.HasPrefix(c, "../") {
				errs = append(errs, &RuleError{Field: "state", Value: rel.v, Rule: "state-outside-home",
					Msg: fmt.Sprintf("state[%d].%s %q must be relative to $HOME (or start with ~/) and stay inside it", i, rel.key, rel.v)})
				continue
			}
			for _, m := range DefaultMasks {
				if within("/"+c, "/"+m) || within("/"+m, "/"+c) {
					errs = append(errs, &RuleError{Field: "state", Value: rel.v, Rule: "state-secret",
						Msg: fmt.Sprintf("state[%d].%s %q overlaps the secret path ~/%s", i, rel.key, rel.v, m)})
				}
			}
			for _, h := range HomePersist {
				if within("/"+c, "/"+h.Path) || within("/"+h.Path, "/"+c) {
					errs = append(errs, &RuleError{Field: "state", Value: rel.v, Rule: "state-persistence",
						Msg: fmt.Sprintf("state[%d].%s %q overlaps ~/%s (%s): what runs code later stays read-only (guarantee 6); name a narrower cache directory", i, rel.key, rel.v, h.Path, h.Why)})
				}
			}
			for _, b := range broadHome {
				if c == b {
					errs = append(errs, &RuleError{Field: "state", Value: rel.v, Rule: "state-broad",
						Msg: fmt.Sprintf("state[%d].%s %q is broad: name the tool's own cache or store directory", i, rel.key, rel.v)})
				}
			}
			if within("/"+c, "/"+StateRoot) || within("/"+StateRoot, "/"+c) {
				errs = append(errs, &RuleError{Field: "state", Value: rel.v, Rule: "state-store",
					Msg: fmt.Sprintf("state[%d].%s %q overlaps the state store ~/%s", i, rel.key, rel.v, StateRoot)})
			}
		}
		if s.Real != "" && s.Seed != "" {
			errs = append(errs, &RuleError{Field: "state", Value: s.Path, Rule: "state-real-and-seed",
				Msg: fmt.Sprintf("state[%d] %q sets both real and seed: real binds the user's own path, seed a per-profile copy of it; choose one", i, s.Path)})
		}
	}
	return errs
}

// mergeState lays a child's entries over its parent's: an entry for the
// same path replaces the parent's, the rest append.
func mergeState(parent, child []State) []State {
	out := append([]State{}, parent...)
	for _, c := range child {
		replaced := false
		for i := range out {
			if out[i].Clean() == c.Clean() {
				out[i], replaced = c, true
			}
		}
		if !replaced {
			out = append(out, c)
		}
	}
	return out
}
