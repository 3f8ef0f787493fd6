package readers

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fedmem/fedmem/vault"
)

// Draft is one draft of the session and the gate's decision on it, from
// the gate's decision records (state/decisions/).
type Draft struct {
	Draft   string    `json:"draft"`
	State   string    `json:"state"`
	Path    string    `json:"path,omitempty"`
	Commit  string    `json:"commit,omitempty"`
	Rules   []string  `json:"rules,omitempty"`
	Decided time.Time `json:"decided"`
	// Reviewer decided it (a held draft approved or rejected).
	Reviewer string `json:"reviewer,omitempty"`
}

// View is what one session read and wrote: `fedmem audit session`.
type View struct {
	Session
	Drafts []Draft `json:"drafts"`
	// DecisionsUnread says why the gate's decisions could not be read
	// (its state directory is the gate user's).
	DecisionsUnread string   `json:"decisions_unread,omitempty"`
	Problems        []string `json:"problems,omitempty"`
}

// decision is the part of the gate's decision record (gate.Decision) the
// view shows.
type decision struct {
	Session  string    `json:"session"`
	Draft    string    `json:"draft"`
	State    string    `json:"state"`
	Path     string    `json:"path"`
	Commit   string    `json:"commit"`
	Decided  time.Time `json:"decided"`
	Reviewer string    `json:"reviewer"`
	Reasons  []struct {
		Rule string `json:"rule"`
	} `json:"reasons"`
}

// Show is the view of session id; an error when no record of it exists.
func Show(vaultDir, stateDir, id string) (*View, error) {
	if id == "" || strings.ContainsAny(id, "/\x00") || strings.HasPrefix(id, ".") {
		return nil, fmt.Errorf("session %q: not a session id", id)
	}
	all, problems, err := Load(vaultDir, stateDir)
	if err != nil {
		return nil, err
	}
	var v *View
	for _, s := range all {
		if s.Session == id {
			v = &View{Session: s, Drafts: []Draft{}, Problems: problems}
			if s.Unproven != "" {
				v.Problems = append(v.Problems, "the record is "+s.Unproven+" (not fedmem-run's proven record)")
			}
		}
	}
	if v == nil {
		return nil, fmt.Errorf("session %s: no record in %s or the gate's state", id, filepath.Join(vaultDir, vault.SessionsDir))
	}
	dir := filepath.Join(stateDir, "decisions")
	ents, err := os.ReadDir(dir)
	if err != nil {
		v.DecisionsUnread = err.Error()
		return v, nil
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		var d decision
		if err := readJSON(filepath.Join(dir, e.Name()), &d); err != nil {
			v.Problems = append(v.Problems, err.Error())
			continue
		}
		if d.Session != id {
			continue
		}
		dr := Draft{Draft: d.Draft, State: d.State, Path: d.Path, Commit: d.Commit, Decided: d.Decided, Reviewer: d.Reviewer}
		for _, r := range d.Reasons {
			dr.Rules = append(dr.Rules, r.Rule)
		}
		v.Drafts = append(v.Drafts, dr)
	}
	sort.Slice(v.Drafts, func(i, j int) bool { return v.Drafts[i].Decided.Before(v.Drafts[j].Decided) })
	return v, nil
}
