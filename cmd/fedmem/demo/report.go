package demo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/fedmem/fedmem/vault"
)

// Report is the part of fedmem-run's --report the demo shows.
type Report struct {
	Session        string          `json:"session"`
	Profile        string          `json:"profile"`
	ProfileHash    string          `json:"profile_hash"`
	VaultHeadStart string          `json:"vault_head_start"`
	VaultHeadEnd   string          `json:"vault_head_end"`
	ExitCode       int             `json:"exit_code"`
	DurationMS     int64           `json:"duration_ms"`
	Layers         json.RawMessage `json:"layers"`
	InboxFiles     []struct {
		Path string `json:"path"`
		Size int64  `json:"size"`
		Type string `json:"type"`
	} `json:"inbox_files"`
	Warnings []string `json:"warnings"`
}

// ReadReport reads fedmem-run's --report file.
func ReadReport(path string) (Report, error) {
	var rep Report
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	return rep, err
}

// PrintInbox prints section 4, what landed in the session's inbox, and
// reports whether it failed the demo (no session id). repErr is why the
// report could not be read, if it could not.
func PrintInbox(w io.Writer, v, session string, repErr error) (failed bool) {
	fmt.Fprintf(w, "\n4. What landed in the inbox (%s/%s/)\n", vault.InboxDir, session)
	if session == "" || !vault.ValidSessionID(session) {
		fmt.Fprintf(w, "   no session id in the report (%v)\n", repErr)
		return true
	}
	ents, err := os.ReadDir(vault.InboxPath(v, session))
	if err != nil {
		fmt.Fprintf(w, "   cannot list it: %v\n", err)
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue
		}
		fmt.Fprintf(w, "   %-40s %6d bytes  %s\n", e.Name(), fi.Size(), fileKind(fi.Mode()))
	}
	return false
}

// PrintReport prints section 6, the session report at path, and reports
// whether it failed the demo (no report).
func PrintReport(w io.Writer, path string, rep Report, repErr error) (failed bool) {
	fmt.Fprintf(w, "\n6. Session report (%s)\n", path)
	if repErr != nil {
		fmt.Fprintf(w, "   no report: %v\n", repErr)
		return true
	}
	fmt.Fprintf(w, "   session %s, profile %s (%s), agent exit %d, %d ms\n", rep.Session, rep.Profile, short(rep.ProfileHash), rep.ExitCode, rep.DurationMS)
	fmt.Fprintf(w, "   vault HEAD at start %s, at end %s\n", short(rep.VaultHeadStart), short(rep.VaultHeadEnd))
	for _, f := range rep.InboxFiles {
		fmt.Fprintf(w, "   drafted %s (%d bytes, %s)\n", f.Path, f.Size, f.Type)
	}
	if len(rep.Layers) > 0 {
		var buf bytes.Buffer
		if json.Compact(&buf, rep.Layers) == nil {
			fmt.Fprintf(w, "   layers %s\n", buf.String())
		}
	}
	for _, s := range rep.Warnings {
		fmt.Fprintf(w, "   warning: %s\n", s)
	}
	return false
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSocket != 0:
		return "socket"
	}
	return m.Type().String()
}

func ownerName(o vault.Owner) string {
	if o.Name != "" {
		return fmt.Sprintf("%s (uid %d)", o.Name, o.UID)
	}
	return fmt.Sprintf("uid %d", o.UID)
}

func short(id string) string {
	if id == "" {
		return "(none)"
	}
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func indent(s, prefix string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix) + "\n"
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// frontmatter returns the YAML frontmatter block of a note, with its
// delimiters, or the first lines when there is none.
func frontmatter(note string) string {
	lines := strings.Split(note, "\n")
	if len(lines) > 0 && lines[0] == "---" {
		for i := 1; i < len(lines) && i < 60; i++ {
			if lines[i] == "---" {
				return strings.Join(lines[:i+1], "\n")
			}
		}
	}
	return firstLines(note, 12)
}
