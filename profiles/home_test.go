package profiles

import (
	"errors"
	"testing"
)

// TestHomeShowRules: a home.show entry that names a secret, the state
// store or leaves the home is an error naming its rule; a plain entry is
// not.
func TestHomeShowRules(t *testing.T) {
	for _, tc := range []struct {
		show, rule string
	}{
		{".gitconfig", ""},
		{"~/.config/git/", ""},
		{".ssh/", "home-show-secret"},
		{".ssh/known_hosts", "home-show-secret"},
		{".config", "home-show-secret"}, // holds ~/.config/gcloud
		{"~/.custom-token", "home-show-secret"},
		{".local/share/fedmem/claude", "home-show-store"},
		{"../other", "home-show-outside-home"},
		{"/etc/passwd", "home-show-outside-home"},
		{"~/", "home-show-outside-home"},
	} {
		p := &Profile{Name: "t", Home: Home{Mode: HomeAllowlist, Show: []string{tc.show}, Mask: []string{".custom-token"}}}
		errs := showErrors(p)
		if tc.rule == "" {
			if len(errs) != 0 {
				t.Errorf("%q: %v", tc.show, errs)
			}
			continue
		}
		var re *RuleError
		if len(errs) == 0 || !errors.As(errs[0], &re) || re.Rule != tc.rule {
			t.Errorf("%q: %v, want rule %s", tc.show, errs, tc.rule)
		}
	}
}
