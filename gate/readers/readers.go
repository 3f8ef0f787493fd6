package readers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fedmem/fedmem/vault"
)

// Session is one session's record as the audit sees it.
type Session struct {
	vault.SessionRecord
	// Stored: the gate holds a copy of the record (its state's sessions/);
	// Live: the record is still in 90-inbox/.sessions/.
	Stored bool `json:"stored"`
	Live   bool `json:"live"`
	// Changed: the live record's receipt digest is not the stored copy's
	// (the stored copy is the one used).
	Changed bool `json:"changed,omitempty"`
}

// maxRecord bounds one record read (fedmem-run's are under 1 MiB).
const maxRecord = 1 << 20

// Load reads every session record of the vault and the gate's stored
// copies (stateDir; "" or unreadable: the live records only). Records
// that cannot be read are returned as problems, never dropped silently.
func Load(vaultDir, stateDir string) ([]Session, []string, error) {
	byID := map[string]*Session{}
	var problems []string
	read := func(dir string, stored bool) error {
		ents, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, e := range ents {
			id, ok := strings.CutSuffix(e.Name(), ".json")
			if !ok || strings.HasPrefix(id, ".") {
				continue
			}
			var r vault.SessionRecord
			if err := readRecord(filepath.Join(dir, e.Name()), &r); err != nil {
				problems = append(problems, err.Error())
				continue
			}
			if r.Session != id {
				problems = append(problems, fmt.Sprintf("%s: names session %q", filepath.Join(dir, e.Name()), r.Session))
				continue
			}
			s := byID[id]
			switch {
			case s == nil:
				byID[id] = &Session{SessionRecord: r, Stored: stored, Live: !stored}
			case stored:
				s.Changed = s.VaultReadsDigest != r.VaultReadsDigest
				s.SessionRecord, s.Stored = r, true
			default:
				s.Live = true
				s.Changed = s.VaultReadsDigest != r.VaultReadsDigest
			}
		}
		return nil
	}
	if err := read(filepath.Join(vaultDir, vault.SessionsDir), false); err != nil {
		return nil, problems, fmt.Errorf("session records: %w", err)
	}
	if stateDir != "" {
		if err := read(filepath.Join(stateDir, vault.GateSessionsDir), true); err != nil {
			problems = append(problems, "the gate's stored sessions: "+err.Error())
		}
	}
	out := make([]Session, 0, len(byID))
	for _, s := range byID {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Started != out[j].Started {
			return out[i].Started < out[j].Started
		}
		return out[i].Session < out[j].Session
	})
	return out, problems, nil
}

func readRecord(p string, r *vault.SessionRecord) error { return readJSON(p, r) }

// readJSON reads one bounded regular file (no link followed) as JSON.
func readJSON(p string, v any) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", p)
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err != nil {
		return err
	}
	if len(b) > maxRecord {
		return fmt.Errorf("%s: larger than %d bytes", p, maxRecord)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

// Reader is one session that opened the note.
type Reader struct {
	Session string `json:"session"`
	Profile string `json:"profile"`
	UID     int    `json:"uid"`
	Workdir string `json:"workdir,omitempty"`
	// First is when the session first opened the note; Commit the vault
	// HEAD the session saw, Blob the note's blob id there.
	First  string `json:"first,omitempty"`
	Commit string `json:"commit,omitempty"`
	Blob   string `json:"blob,omitempty"`
	// Maybe: the session's receipt was cut (truncated) or lost events,
	// and the note is not in what it lists: it may have read it.
	Maybe bool `json:"maybe,omitempty"`
}

// Answer is Readers' result: the sessions that read the note, and those
// whose reads nobody recorded (they could have).
type Answer struct {
	Note       string   `json:"note"`
	Readers    []Reader `json:"readers"`
	Unrecorded []string `json:"unrecorded"`
	Problems   []string `json:"problems,omitempty"`
}

// NotePath is note as a vault-relative path: a path relative to the vault,
// or an absolute path inside it.
func NotePath(vaultDir, note string) (string, error) {
	if filepath.IsAbs(note) {
		rel, err := filepath.Rel(vaultDir, note)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return "", fmt.Errorf("note %s: not inside the vault %s", note, vaultDir)
		}
		note = rel
	}
	p := path.Clean(filepath.ToSlash(note))
	if p == "." || p == ".." || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("note %q: not a path inside the vault", note)
	}
	return p, nil
}

// Readers lists the sessions whose receipt names note (vault-relative),
// first opened at or after since (zero: any time), oldest first.
func Readers(sessions []Session, note string, since time.Time) Answer {
	a := Answer{Note: note, Readers: []Reader{}, Unrecorded: []string{}}
	for _, s := range sessions {
		rr := s.VaultReads
		// A session matters from since on if it was still running then.
		ended, err := time.Parse(time.RFC3339Nano, s.Ended)
		inWindow := since.IsZero() || s.Ended == "" || err != nil || !ended.Before(since)
		if rr == nil || !rr.Recorded {
			if inWindow {
				a.Unrecorded = append(a.Unrecorded, s.Session)
			}
			continue
		}
		r := Reader{Session: s.Session, Profile: s.Profile, UID: s.UID, Workdir: s.Workdir, Commit: rr.Commit}
		found := false
		for _, x := range rr.Reads {
			if x.Path == note {
				r.First, r.Blob, found = x.First, x.Blob, true
				break
			}
		}
		if !found {
			if !rr.Truncated && !rr.Lost || !inWindow {
				continue
			}
			r.Maybe = true
		}
		if t, err := time.Parse(time.RFC3339Nano, r.First); found && !since.IsZero() && err == nil && t.Before(since) {
			continue
		}
		a.Readers = append(a.Readers, r)
	}
	return a
}
