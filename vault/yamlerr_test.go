package vault

import (
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestYAMLErrorLine: the line a YAML error names is the line of the mistake
// (an unclosed '[' or '{' on its own line, 1-based like every other).
func TestYAMLErrorLine(t *testing.T) {
	for _, c := range []struct {
		src  string
		line int
		msg  string
	}{
		{"a: 1\nb: [x, y\nc: 2\n", 2, "'[' opened on this line is not closed"},
		{"a: 1\nb: x\nc: 3\nd: [q,\n  r\n", 4, "'[' opened on this line is not closed"},
		{"a: 1\nb: {x: 1\nc: 2\n", 2, "'{' opened on this line is not closed"},
		{"a: 1\n\tb: 2\n", 2, "tab character"},
		{"a: 1\nb: x\n  c: 2\n", 3, "mapping values are not allowed"},
	} {
		var n yaml.Node
		err := yaml.Unmarshal([]byte(c.src), &n)
		line, msg, ok := YAMLErrorLine(err)
		if !ok || line != c.line || !strings.Contains(msg, c.msg) {
			t.Errorf("%q: %v -> line %d %q %v; want line %d, %q", c.src, err, line, msg, ok, c.line, c.msg)
		}
	}
	if _, _, ok := YAMLErrorLine(errors.New("yaml: unknown anchor 'x' referenced")); ok {
		t.Error("an error without a line was given one")
	}
}
