package profiles

import (
	"fmt"
	"path"
	"strings"
)

// HomeShowRel returns the home.show entries as clean paths relative to
// $HOME (without "~/" and trailing slash), duplicates dropped.
func HomeShowRel(p *Profile) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range p.Home.Show {
		c := cleanHomeRel(s)
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// showErrors checks home.show: each entry stays inside $HOME, is not the
// home itself, and never names a secret (DefaultMasks, home.mask) or the
// per-profile state store: an allow-list that lists a secret is a mistake
// to name, not a mask to lay over it. Outside an allowlist home (ro,
// hidden) home.show is ignored: ro shows everything, hidden nothing.
func showErrors(p *Profile) []error {
	var errs []error
	masks := append(append([]string{}, DefaultMasks...), p.Home.Mask...)
	for i, s := range p.Home.Show {
		c := cleanHomeRel(s)
		if path.IsAbs(strings.TrimPrefix(s, "~/")) || c == "." || c == ".." || strings.HasPrefix(c, "../") {
			errs = append(errs, &RuleError{Field: "home.show", Value: s, Rule: "home-show-outside-home",
				Msg: fmt.Sprintf("home.show[%d] %q must be a path under $HOME (relative, or starting with ~/), not the home itself", i, s)})
			continue
		}
		for _, m := range masks {
			mc := path.Clean(m)
			if within("/"+c, "/"+mc) || within("/"+mc, "/"+c) {
				errs = append(errs, &RuleError{Field: "home.show", Value: s, Rule: "home-show-secret",
					Msg: fmt.Sprintf("home.show[%d] %q overlaps the secret path ~/%s: secrets are never shown", i, s, mc)})
			}
		}
		if within("/"+c, "/"+StateRoot) || within("/"+StateRoot, "/"+c) {
			errs = append(errs, &RuleError{Field: "home.show", Value: s, Rule: "home-show-store",
				Msg: fmt.Sprintf("home.show[%d] %q overlaps the state store ~/%s (each profile's state is bound at its own path)", i, s, StateRoot)})
		}
	}
	return errs
}
