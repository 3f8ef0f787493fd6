// Package logsafe makes log lines safe to read: every line the gate logs
// escapes control, C1, bidirectional and other invisible characters (issue
// 24): draft names, session names and reasons
// come from the agent, and a JSON or text handler writes U+0085, U+202E or
// U+2066 as raw UTF-8 — a log viewer then shows a line that is not what was
// logged (a reversed file name, a fake second line). The handler wraps the
// caller's: every string in the message and the attributes (groups too)
// has such characters written as \u{XXXX}.
package logsafe

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/fedmem/fedmem/gate/validate"
)

// safeHandler escapes what reaches the wrapped handler.
type safeHandler struct{ h slog.Handler }

// Handler wraps h so that no log line carries a control, C1,
// bidirectional or invisible character raw.
func Handler(h slog.Handler) slog.Handler {
	if _, ok := h.(safeHandler); ok {
		return h
	}
	return safeHandler{h}
}

func (s safeHandler) Enabled(ctx context.Context, l slog.Level) bool { return s.h.Enabled(ctx, l) }

func (s safeHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, logEscape(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(safeAttr(a))
		return true
	})
	return s.h.Handle(ctx, out)
}

func (s safeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	safe := make([]slog.Attr, len(as))
	for i, a := range as {
		safe[i] = safeAttr(a)
	}
	return safeHandler{s.h.WithAttrs(safe)}
}

func (s safeHandler) WithGroup(name string) slog.Handler {
	return safeHandler{s.h.WithGroup(logEscape(name))}
}

func safeAttr(a slog.Attr) slog.Attr {
	a.Key = logEscape(a.Key)
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(logEscape(v.String()))
	case slog.KindGroup:
		g := v.Group()
		safe := make([]slog.Attr, len(g))
		for i, x := range g {
			safe[i] = safeAttr(x)
		}
		a.Value = slog.GroupValue(safe...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			a.Value = slog.StringValue(logEscape(x.Error()))
		case fmt.Stringer:
			a.Value = slog.StringValue(logEscape(x.String()))
		case []string:
			safe := make([]string, len(x))
			for i, e := range x {
				safe[i] = logEscape(e)
			}
			a.Value = slog.AnyValue(safe)
		default:
			a.Value = slog.StringValue(logEscape(fmt.Sprint(x)))
		}
	default:
		a.Value = v
	}
	return a
}

// logEscape writes control (C0, DEL, C1), bidirectional, invisible and
// invalid characters of s as \u{XXXX} (invalid bytes as \x{XX}); a
// backslash stays as it is. Allocation-free for clean text.
func logEscape(s string) string {
	clean := true
	for _, r := range s {
		if logUnsafe(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x{%02X}`, s[i])
		case logUnsafe(r):
			fmt.Fprintf(&b, `\u{%04X}`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func logUnsafe(r rune) bool {
	switch {
	case r == utf8.RuneError:
		return true
	case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x2028 || r == 0x2029: // line and paragraph separators
		return true
	}
	_, inv := validate.Invisible(r) // bidi controls, zero-width, tags…
	return inv
}
