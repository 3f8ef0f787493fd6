package remote

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/repo"
)

// ReadStatus reads the sync state of the gate of the vault in dir (a
// resolved vault path) without taking its lock (a running gate holds it):
// the last sync's record from stateDir, ahead/behind counted now from the
// vault's HEAD and the remote tip last fetched.
func ReadStatus(dir, stateDir string) (*Status, error) {
	var st File
	if err := durable.ReadJSON(filepath.Join(stateDir, StateFile), &st); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	pol, perr := policy.Load(filepath.Join(dir, filepath.FromSlash(vault.PolicyFile)))
	if perr == nil {
		st.Configured = pol.Remote != nil
		if pol.Remote != nil {
			st.Remote = RedactURL(pol.Remote.URL)
			if pol.Remote.Branch != "" {
				st.Branch = pol.Remote.Branch
			}
		}
	}
	// Read-only: not openRepo, which cleans up after a killed gate.
	r, err := repo.OpenReadOnly(dir)
	if err != nil {
		return &st.Status, nil
	}
	e := New(Config{Repo: r})
	lb, _, err := r.Head()
	if err == nil && st.Branch == "" {
		st.Branch = lb.Short()
	}
	if err == nil {
		st.LocalBranch = lb.Short()
	}
	e.FillCounts(&st.Status)
	return &st.Status, nil
}

// RedactURL drops the user information (and anything after it that is not
// the host and path) of a remote URL for display.
func RedactURL(s string) string {
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return "<unparsable remote URL>"
		}
		u.User, u.RawQuery, u.Fragment = nil, "", ""
		return u.String()
	}
	if at := strings.Index(s, "@"); at >= 0 {
		return s[at+1:]
	}
	return s
}

var userinfoRe = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@`)

// RedactErr is err's text with the raw URL and any user information
// removed.
func RedactErr(err error, rawURL string) string {
	s := err.Error()
	if rawURL != "" {
		s = strings.ReplaceAll(s, rawURL, RedactURL(rawURL))
	}
	return userinfoRe.ReplaceAllString(s, "$1")
}
