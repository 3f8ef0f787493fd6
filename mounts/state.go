package mounts

import (
	"fmt"
	"path/filepath"

	"github.com/fedmem/fedmem/mounts/request"
	"github.com/fedmem/fedmem/vault"
)

// StateDir is the per-profile state store of profile name under home:
// ~/.local/share/fedmem/<name>.
func StateDir(home, name string) string {
	return filepath.Join(home, filepath.FromSlash(request.StateRoot), name)
}

// stateMounts are the writable binds of the profile's `state:` entries:
// Source is the per-profile copy (or the user's own path for `real:`),
// Target the path under $HOME where the agent sees it. They join the other
// writable binds, so the persistence paths, the vault and the masks are
// laid over them as over any writable path. The launcher creates missing
// sources and mount points (as the caller, without following links) and
// refreshes seeded copies (Mount.Seed) before the sandbox starts.
func stateMounts(rq *request.Request, in Input, exists func(string) (bool, bool)) (ms []Mount, warnings []string) {
	if rq.Home.Mode == request.HomeHidden || len(rq.State) == 0 {
		return nil, nil
	}
	store := StateDir(in.Home, rq.Profile)
	for _, s := range rq.State {
		rel := s.Path
		t := filepath.Join(in.Home, rel)
		if vault.Within(t, in.Vault) || vault.Within(in.Vault, t) {
			warnings = append(warnings, fmt.Sprintf("state %s overlaps the vault: it stays read-only", t))
			continue
		}
		m := Mount{Kind: BindRW, Target: t, Dir: s.Dir, State: true, Why: "profile: state (per profile, " + store + ")"}
		switch {
		case s.Real != "":
			m.Source = filepath.Join(in.Home, filepath.Clean(filepath.FromSlash(trimTilde(s.Real))))
			m.Why = "profile: state (the user's own)"
			if !m.Dir {
				// A real file is bound only where it exists: fedmem does
				// not invent the user's files.
				if ok, isDir := exists(m.Source); !ok || isDir {
					continue
				}
			}
		case s.Seed != "":
			m.Source = filepath.Join(store, rel)
			m.Seed = filepath.Join(in.Home, filepath.Clean(filepath.FromSlash(trimTilde(s.Seed))))
			okCopy, _ := exists(m.Source)
			okSeed, seedDir := exists(m.Seed)
			if !okCopy && (!okSeed || seedDir) {
				continue // nothing to start from: the tool makes its own
			}
		default:
			m.Source = filepath.Join(store, rel)
		}
		ms = append(ms, m)
	}
	return ms, warnings
}

func trimTilde(p string) string {
	if len(p) >= 2 && p[:2] == "~/" {
		return p[2:]
	}
	return p
}
