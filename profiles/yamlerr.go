package profiles

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/vault"
)

// unknownField is how yaml.v3 words a key that KnownFields refuses.
// Compiled on first use, as the two below: not at every start of
// fedmem-run (issue 9).
var unknownField = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^line (\d+): field (\S+) not found in type (\S+)$`)
})

// wrongKind is how yaml.v3 words a value of the wrong kind ("line 3:
// cannot unmarshal !!seq into map[string]string", "… !!str `lots` into
// int"): Go type names, rewritten by kindError.
var wrongKind = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("^line (\\d+): cannot unmarshal (!!\\w+)(?: `(.*)`)? into (\\S+)$")
})

// lineMsg is an error of this package's own unmarshalers ("line 3: …").
var lineMsg = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^line (\d+): (.*)$`) })

// schemaTypes are the profile's mapping types by the name yaml.v3 prints.
var schemaTypes = map[string]reflect.Type{
	"profiles.Profile": reflect.TypeOf(Profile{}),
	"profiles.Home":    reflect.TypeOf(Home{}),
	"profiles.Env":     reflect.TypeOf(Env{}),
	"profiles.Limits":  reflect.TypeOf(Limits{}),
	"profiles.Vault":   reflect.TypeOf(Vault{}),
}

// keyPath names each mapping type as the profile writes it.
var keyPath = map[string]string{"profiles.Profile": "", "profiles.Home": "home.", "profiles.Env": "env.", "profiles.Limits": "limits.", "profiles.Vault": "vault."}

// yamlKeys lists the YAML keys of a struct type.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	return keys
}

// friendlyYAMLError rewrites yaml.v3's unknown-field errors, which name Go
// types ("field netwrok not found in type profiles.Profile"), as the
// profile's own words: the key, where it is, the closest valid key and the
// valid ones. Other errors are returned as they are.
//
// Values of the wrong kind and this package's own value errors name the key
// (found in doc, the document as nodes) and say what was expected in the
// profile's words ("limits.pids: expected a whole number, got \"lots\""),
// never a Go type.
func friendlyYAMLError(src string, err error, doc *yaml.Node) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		var ve *valueError
		if errors.As(err, &ve) {
			return fmt.Errorf("%s:%d: %s%s", src, ve.node.Line, keyAt(doc, ve.node.Line, ve.node.Column, ve.node.Kind), ve.msg)
		}
		if m := lineMsg().FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			return fmt.Errorf("%s:%s: %s%s", src, m[1], keyAt(doc, line, 0, yaml.ScalarNode), m[2])
		}
		if line, msg, ok := vault.YAMLErrorLine(err); ok {
			return fmt.Errorf("%s:%d: %s%s", src, line, keyAt(doc, line, 0, yaml.ScalarNode), msg)
		}
		return fmt.Errorf("%s: %w", src, err)
	}
	var lines []string
	for _, e := range te.Errors {
		if k := wrongKind().FindStringSubmatch(e); k != nil {
			line, _ := strconv.Atoi(k[1])
			lines = append(lines, fmt.Sprintf("%s:%s: %sexpected %s, got %s", src, k[1], keyAt(doc, line, 0, tagKind(k[2])), goTypeWords(k[4]), tagWords(k[2], k[3])))
			continue
		}
		m := unknownField().FindStringSubmatch(e)
		var t reflect.Type
		if m != nil {
			t = schemaTypes[m[3]]
		}
		if t == nil {
			lines = append(lines, fmt.Sprintf("%s: %s", src, e))
			continue
		}
		keys := yamlKeys(t)
		lines = append(lines, fmt.Sprintf("%s:%s: unknown key %q%s (valid: %s)", src, m[1], keyPath[m[3]]+m[2],
			suggestKey(m[2], keys), strings.Join(keys, ", ")))
	}
	return errors.New(strings.Join(lines, "\n"))
}

// valueError is a value this package's unmarshalers refuse (a size, a
// duration), with its node, so the error can name the key.
type valueError struct {
	node *yaml.Node
	msg  string
}

func (e *valueError) Error() string { return fmt.Sprintf("line %d: %s", e.node.Line, e.msg) }

// keyAt is "KEY.PATH: " of the deepest value in doc on line (and column,
// when not 0) of the given kind (any, when 0), or "" when none is.
func keyAt(doc *yaml.Node, line, col int, kind yaml.Kind) string {
	if doc == nil {
		return ""
	}
	match := func(v *yaml.Node) bool {
		return v.Line == line && (col == 0 || v.Column == col) && (kind == 0 || v.Kind == kind)
	}
	var find func(v *yaml.Node, path string) string
	find = func(v *yaml.Node, path string) string {
		switch v.Kind {
		case yaml.DocumentNode:
			for _, c := range v.Content {
				if k := find(c, path); k != "" {
					return k
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(v.Content); i += 2 {
				p := v.Content[i].Value
				if path != "" {
					p = path + "." + p
				}
				if k := find(v.Content[i+1], p); k != "" {
					return k
				}
				if match(v.Content[i+1]) {
					return p
				}
			}
		case yaml.SequenceNode:
			for i, c := range v.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				if k := find(c, p); k != "" {
					return k
				}
				if match(c) {
					return p
				}
			}
		}
		return ""
	}
	if k := find(doc, ""); k != "" {
		return k + ": "
	}
	return ""
}

// tagKind is the node kind of a YAML tag in yaml.v3's errors.
func tagKind(tag string) yaml.Kind {
	switch tag {
	case "!!seq":
		return yaml.SequenceNode
	case "!!map":
		return yaml.MappingNode
	}
	return yaml.ScalarNode
}

// goTypeWords says what a Go type expects, in the profile's words.
func goTypeWords(t string) string {
	switch {
	case strings.HasPrefix(t, "map[") || strings.HasPrefix(t, "profiles."):
		return "a mapping (key: value lines)"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "a whole number"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool":
		return "true or false"
	case t == "string":
		return "a string"
	}
	return "another kind of value"
}

// tagWords says what a YAML value is ("a list", "\"lots\"").
func tagWords(tag, val string) string {
	switch tag {
	case "!!seq":
		return "a list"
	case "!!map":
		return "a mapping"
	case "!!null":
		return "nothing"
	}
	if val != "" {
		return strconv.Quote(val)
	}
	return "a " + strings.TrimPrefix(tag, "!!")
}

// nodeWords says what kind of value n is.
func nodeWords(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		return "an alias"
	}
	return strconv.Quote(n.Value)
}
