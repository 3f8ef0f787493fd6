package logsafe

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestHandlerEscapes: a right-to-left override, a C1 next line and a line
// separator in the message, an attribute and a group never reach the
// output raw (the JSON handler alone writes the first two as they are);
// plain text passes unchanged.
func TestHandlerEscapes(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewJSONHandler(&buf, nil)))
	log.Info("draft \u202egnp.exe", "name", "a\u0085b", slog.Group("g", "k", "x\u2028y"), "plain", "note.md")
	out := buf.String()
	for _, raw := range []string{"\u202e", "\u0085", "\u2028"} {
		if strings.Contains(out, raw) {
			t.Errorf("log line carries %U raw: %q", []rune(raw)[0], out)
		}
	}
	if !strings.Contains(out, "note.md") {
		t.Errorf("plain value changed: %q", out)
	}
}
