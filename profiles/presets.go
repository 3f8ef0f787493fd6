package profiles

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Egress presets are allow lists kept as data (presets/*.yaml, embedded):
// each agent profile names its own (`network: {mode: public, preset:
// claude}`), so a security team switches a built-in to an allow list with
// one word — `network: allowlist` in a profile that extends it, or
// `fedmem-run --network allowlist` — and gets the agent's API hosts, the
// common package registries and the git hosts, nothing else. A preset may
// include others (registries, git-hosts); the profile's own allow entries
// are added to its preset's.

//go:embed presets/*.yaml
var presetFS embed.FS

// Preset is one egress preset, its includes expanded (LoadPreset).
type Preset struct {
	Name        string   `yaml:"name" json:"name"`
	Description string   `yaml:"description" json:"description"`
	Include     []string `yaml:"include,omitempty" json:"include,omitempty"`
	// Allow is the preset's own entries followed by its includes', each
	// once, in order (after LoadPreset).
	Allow []string `yaml:"allow,omitempty" json:"allow"`
}

// Presets lists the names of the embedded egress presets.
func Presets() []string {
	ents, _ := presetFS.ReadDir("presets")
	var names []string
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// LoadPreset reads an embedded preset and expands its includes. The
// presets are embedded: each is read once per process (a launch asked for
// its profile's preset three times — the profile's network key, Validate,
// the proxy's allow list — each a YAML decode of it and its includes), and
// every caller gets its own copy.
func LoadPreset(name string) (*Preset, error) {
	v, ok := presetCache.Load(name)
	if !ok {
		p, err := loadPreset(name, map[string]bool{})
		v, _ = presetCache.LoadOrStore(name, presetResult{p, err})
	}
	r := v.(presetResult)
	if r.err != nil {
		return nil, r.err
	}
	p := *r.p
	p.Include, p.Allow = slices.Clone(r.p.Include), slices.Clone(r.p.Allow)
	return &p, nil
}

// presetCache holds LoadPreset's results by name (presetResult).
var presetCache sync.Map

type presetResult struct {
	p   *Preset
	err error
}

func loadPreset(name string, seen map[string]bool) (*Preset, error) {
	if seen[name] {
		return nil, fmt.Errorf("preset %s: include cycle", name)
	}
	seen[name] = true
	src := path.Join("presets", name+".yaml")
	data, err := presetFS.ReadFile(src)
	if err != nil {
		return nil, fmt.Errorf("preset %q is not an egress preset%s (known: %s)", name, suggestKey(name, Presets()), strings.Join(Presets(), ", "))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var p Preset
	if err := dec.Decode(&p); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("builtin:%s: %w", src, err)
	}
	if p.Name != name {
		return nil, fmt.Errorf("builtin:%s: name %q is not the file's name", src, p.Name)
	}
	all := append([]string{}, p.Allow...)
	for _, inc := range p.Include {
		q, err := loadPreset(inc, seen)
		if err != nil {
			return nil, fmt.Errorf("preset %s: include: %w", name, err)
		}
		all = append(all, q.Allow...)
	}
	have := map[string]bool{}
	p.Allow = p.Allow[:0]
	for _, a := range all {
		if _, err := ParseAllow(a); err != nil {
			return nil, fmt.Errorf("builtin:%s: %w", src, err)
		}
		if k := strings.ToLower(a); !have[k] {
			have[k] = true
			p.Allow = append(p.Allow, a)
		}
	}
	delete(seen, name) // a diamond (two includes of registries) is no cycle
	return &p, nil
}

// AllowList is what network: allowlist reaches: the profile's preset's
// entries, then its own allow entries. Nil for other modes.
func (p *Profile) AllowList() ([]string, error) {
	if p.Network != NetworkAllowlist {
		return nil, nil
	}
	var out []string
	if p.Preset != "" {
		pr, err := LoadPreset(p.Preset)
		if err != nil {
			return nil, err
		}
		out = append(out, pr.Allow...)
	}
	return append(out, p.Allow...), nil
}

// networkSpec is the profile's `network:` as written: a mode
// (`network: allowlist`) or a mode and an egress preset (`network: {mode:
// public, preset: claude}`). Parse copies it into Profile.Network and
// Profile.Preset.
type networkSpec struct {
	Mode   string
	Preset string
}

// UnmarshalYAML reads a mode or a {mode, preset} mapping strictly.
func (s *networkSpec) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		s.Mode = n.Value
		return nil
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind != yaml.ScalarNode {
				return &valueError{v, "expected a word, got " + nodeWords(v)}
			}
			switch k.Value {
			case "mode":
				s.Mode = v.Value
			case "preset":
				if _, err := LoadPreset(v.Value); err != nil {
					return &valueError{v, err.Error()}
				}
				s.Preset = v.Value
			default:
				return &valueError{k, fmt.Sprintf("unknown key \"network.%s\" (want mode and preset)%s", k.Value, suggestKey(k.Value, []string{"mode", "preset"}))}
			}
		}
		return nil
	}
	return &valueError{n, "expected a mode (none, allowlist, public, host) or {mode: M, preset: P}, got " + nodeWords(n)}
}

// MarshalYAML writes the short form when there is no preset.
func (s networkSpec) MarshalYAML() (any, error) {
	if s.Preset == "" {
		return s.Mode, nil
	}
	return map[string]string{"mode": s.Mode, "preset": s.Preset}, nil
}

// IsZero lets omitempty leave an unset network out.
func (s networkSpec) IsZero() bool { return s.Mode == "" && s.Preset == "" }
