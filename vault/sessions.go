package vault

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// SessionInfo is one session as `fedmem sessions` lists it: the record
// fedmem-run wrote, and what is in its inbox folder now.
type SessionInfo struct {
	SessionRecord
	// Open: no end is recorded — the session runs, or its launcher was
	// killed before it could write the end.
	Open bool `json:"open"`
	// Drafts counts the files in its inbox folder (receipts and hidden
	// files aside); -1 when the folder cannot be read by the caller.
	Drafts int `json:"drafts"`
	// Problem says why the record could not be read ("" when it could).
	Problem string `json:"problem,omitempty"`
}

// maxRecordBytes bounds a session record read (they are a few hundred bytes).
const maxRecordBytes = 1 << 20

// ListSessions reads every session record of the vault, newest first. A
// record that cannot be read or parsed is listed with its Problem, never
// dropped. Links are not followed: a record is a regular file.
func ListSessions(vaultDir string) ([]SessionInfo, error) {
	dir := filepath.Join(vaultDir, SessionsDir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("session records: %w", err)
	}
	var out []SessionInfo
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(name, ".") {
			continue
		}
		si := SessionInfo{SessionRecord: SessionRecord{Session: name}, Drafts: -1}
		if err := readRecord(filepath.Join(dir, e.Name()), &si.SessionRecord); err != nil {
			si.Problem = err.Error()
		}
		if si.Session != name {
			si.Problem = fmt.Sprintf("the record names session %q, not its file's %q", si.Session, name)
			si.Session = name
		}
		si.Open = si.Problem == "" && si.Ended == ""
		si.Drafts = countDrafts(filepath.Join(vaultDir, InboxDir, name))
		out = append(out, si)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started > out[j].Started })
	return out, nil
}

func readRecord(path string, r *SessionRecord) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil {
		return err
	}
	if len(b) > maxRecordBytes {
		return fmt.Errorf("%s: larger than %d bytes", path, maxRecordBytes)
	}
	if err := json.Unmarshal(b, r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func countDrafts(dir string) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") {
			n++
		}
	}
	return n
}
