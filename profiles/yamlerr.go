package profiles

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// unknownField is how yaml.v3 words a key that KnownFields refuses.
// Compiled on first use: not at every start of fedmem-run (issue 9).
var unknownField = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^line (\d+): field (\S+) not found in type (\S+)$`)
})

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
func friendlyYAMLError(src string, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("%s: %w", src, err)
	}
	var lines []string
	for _, e := range te.Errors {
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
