package mounts

import (
	"fmt"
	"strings"
)

// GitConfigEntry is one key of a Git config file: Section and Key in lower
// case, Sub as written (subsections are case-sensitive), Line 1-based.
type GitConfigEntry struct {
	Section, Sub, Key, Value string
	Line                     int
}

// Name is section[.sub].key, the form `git config --list` prints.
func (e GitConfigEntry) Name() string {
	if e.Sub != "" {
		return e.Section + "." + e.Sub + "." + e.Key
	}
	return e.Section + "." + e.Key
}

// ParseGitConfig reads Git's config syntax (git-config(1) "CONFIGURATION
// FILE"): [section], [section "sub"], the deprecated [section.sub], keys
// with or without "= value", comments after # or ;, double quotes, the
// escapes \" \\ \n \t \b and a backslash before the newline to continue a
// value. It is strict: anything else is an error naming the line, so a
// file it cannot read is never taken for one that names no command.
//
// fedmem-run parses config itself instead of running `git config --list`
// because it must not link go-git (test/boundary) and running git as a root
// launcher in a repository another uid owns is refused by safe.directory
// (or, allowed, would act inside a directory the agent writes).
func ParseGitConfig(data []byte) ([]GitConfigEntry, error) {
	var out []GitConfigEntry
	sec, sub := "", ""
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	if len(lines) > 0 && strings.HasPrefix(lines[0], "\ufeff") {
		lines[0] = strings.TrimPrefix(lines[0], "\ufeff")
	}
	for i := 0; i < len(lines); i++ {
		ln := i + 1
		s := strings.TrimLeft(lines[i], " \t")
		if s == "" || s[0] == '#' || s[0] == ';' {
			continue
		}
		if s[0] == '[' {
			end := strings.IndexByte(s, ']')
			if q := strings.IndexByte(s, '"'); q >= 0 && q < end {
				// [section "sub"]: the subsection may hold ']'.
				j, name := q+1, strings.Builder{}
				for ; j < len(s) && s[j] != '"'; j++ {
					if s[j] == '\\' && j+1 < len(s) {
						j++
					}
					name.WriteByte(s[j])
				}
				if j >= len(s) || j+1 >= len(s) || s[j+1] != ']' {
					return nil, fmt.Errorf("line %d: unterminated section header", ln)
				}
				sec, sub = strings.ToLower(strings.TrimSpace(s[1:q])), name.String()
				end = j + 1
			} else {
				if end < 0 {
					return nil, fmt.Errorf("line %d: unterminated section header", ln)
				}
				name := strings.TrimSpace(s[1:end])
				sec, sub = strings.ToLower(name), ""
				if k := strings.IndexByte(name, '.'); k >= 0 {
					sec, sub = strings.ToLower(name[:k]), strings.ToLower(name[k+1:])
				}
			}
			if !validGitName(sec, true) {
				return nil, fmt.Errorf("line %d: bad section name %q", ln, sec)
			}
			s = strings.TrimLeft(s[end+1:], " \t")
			if s == "" || s[0] == '#' || s[0] == ';' {
				continue
			}
			// A key may follow the header on the same line.
		}
		if sec == "" {
			return nil, fmt.Errorf("line %d: key outside a section", ln)
		}
		k := 0
		for k < len(s) && (isAlnum(s[k]) || s[k] == '-') {
			k++
		}
		key := strings.ToLower(s[:k])
		if !validGitName(key, false) {
			return nil, fmt.Errorf("line %d: bad key name", ln)
		}
		rest := strings.TrimLeft(s[k:], " \t")
		e := GitConfigEntry{Section: sec, Sub: sub, Key: key, Line: ln}
		switch {
		case rest == "" || rest[0] == '#' || rest[0] == ';':
			e.Value = "true"
		case rest[0] == '=':
			v, used, err := gitValue(rest[1:], lines[i+1:])
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", ln, err)
			}
			e.Value = v
			i += used
		default:
			return nil, fmt.Errorf("line %d: expected '=' after key %q", ln, key)
		}
		out = append(out, e)
	}
	return out, nil
}

// gitValue reads a value that starts in s and may continue on the next
// lines (a backslash before the newline); it returns how many more lines it
// used.
func gitValue(s string, more []string) (string, int, error) {
	var b strings.Builder
	used, quoted, pendingSpace := 0, false, ""
	s = strings.TrimLeft(s, " \t")
	for {
		for j := 0; j < len(s); j++ {
			c := s[j]
			switch {
			case c == '"':
				b.WriteString(pendingSpace)
				pendingSpace = ""
				quoted = !quoted
			case c == '\\':
				if j+1 == len(s) {
					goto cont
				}
				j++
				b.WriteString(pendingSpace)
				pendingSpace = ""
				switch s[j] {
				case '"', '\\':
					b.WriteByte(s[j])
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'b':
					b.WriteByte('\b')
				default:
					return "", 0, fmt.Errorf("unknown escape \\%c", s[j])
				}
			case !quoted && (c == '#' || c == ';'):
				return b.String(), used, nil
			case !quoted && (c == ' ' || c == '\t'):
				pendingSpace += string(c)
			default:
				b.WriteString(pendingSpace)
				pendingSpace = ""
				b.WriteByte(c)
			}
		}
		if quoted {
			return "", 0, fmt.Errorf("unterminated quote")
		}
		return b.String(), used, nil
	cont:
		if used >= len(more) {
			return "", 0, fmt.Errorf("line continuation at end of file")
		}
		b.WriteString(pendingSpace)
		pendingSpace = ""
		s = more[used]
		used++
	}
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func validGitName(s string, section bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isAlnum(c) || c == '-' || (section && c == '.') {
			continue
		}
		return false
	}
	return section || isAlnum(s[0]) && !(s[0] >= '0' && s[0] <= '9')
}
