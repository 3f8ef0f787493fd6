package profiles

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestDocCoversSchema checks docs/profiles.md against the code: every YAML
// key of the schema (nested keys as parent.child) has a row, and every
// built-in profile is described.
func TestDocCoversSchema(t *testing.T) {
	b, err := os.ReadFile("../docs/profiles.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if key == "" || key == "-" {
				continue
			}
			full := prefix + key
			if !strings.Contains(doc, "| `"+full+"` |") {
				t.Errorf("docs/profiles.md has no row for key %q", full)
			}
			if f.Type.Kind() == reflect.Struct {
				walk(full+".", f.Type)
			}
		}
	}
	walk("", reflect.TypeOf(Profile{}))
	for _, n := range Builtins() {
		if !strings.Contains(doc, "| `"+n+"` |") {
			t.Errorf("docs/profiles.md does not describe the built-in profile %q", n)
		}
	}
	for _, m := range DefaultMasks {
		if !strings.Contains(doc, "`~/"+m+"`") {
			t.Errorf("docs/profiles.md does not list the secret path ~/%s", m)
		}
	}
}
