package profiles

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SearchDir is one folder of the profile search path.
type SearchDir struct {
	Dir  string
	Kind string // project, user or system
}

// Search path kinds.
const (
	SearchProject = "project"
	SearchUser    = "user"
	SearchSystem  = "system"
)

// SystemProfileDir is the system-wide profile folder.
const SystemProfileDir = "/etc/fedmem/profiles"

// SearchPath is where a profile name is looked for, in order, before the
// built-ins: PROJECT/.fedmem/profiles (PROJECT: fedmem-run's workdir),
// HOME/.config/fedmem/profiles, /etc/fedmem/profiles. An empty projectDir
// or home leaves that folder out.
//
// The project folder lies in the workdir, which agents write: fedmem keeps
// .fedmem (and ~/.config/fedmem) read-only inside every sandbox
// (ProjectFamilies, HomePersist), and a profile file found here is used only
// when trustedProfileFile accepts it.
func SearchPath(projectDir, home string) []SearchDir {
	var out []SearchDir
	if projectDir != "" {
		out = append(out, SearchDir{filepath.Join(projectDir, ".fedmem", "profiles"), SearchProject})
	}
	if home != "" {
		out = append(out, SearchDir{filepath.Join(home, ".config", "fedmem", "profiles"), SearchUser})
	}
	return append(out, SearchDir{SystemProfileDir, SearchSystem})
}

// SourceKind says which search folder (or "builtin", or "file") src, a
// Profile.Source, came from.
func SourceKind(src string, search []SearchDir) string {
	if strings.HasPrefix(src, "builtin:") {
		return "builtin"
	}
	for _, d := range search {
		if filepath.Dir(src) == d.Dir {
			return d.Kind
		}
	}
	return "file"
}

func searchWords(search []SearchDir) string {
	if len(search) == 0 {
		return ""
	}
	var dirs []string
	for _, d := range search {
		dirs = append(dirs, d.Dir)
	}
	return "; searched " + strings.Join(dirs, ", ")
}

// ErrUntrustedProfile is returned for a profile file in the search path
// that another user could have written.
var ErrUntrustedProfile = errors.New("untrusted profile file")

// readSearched reads p, a candidate NAME.yaml in search folder d: absent
// (ok false) or, when present, only if trustedProfileFile accepts it.
func readSearched(d SearchDir, p string) ([]byte, bool, error) {
	f, err := openNoFollow(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDirectory) {
		return nil, false, nil
	}
	if errors.Is(err, fs.ErrPermission) {
		if _, lerr := os.Lstat(p); errors.Is(lerr, fs.ErrPermission) || errors.Is(lerr, fs.ErrNotExist) {
			// A folder on the way cannot be searched by this user (a
			// HOME it cannot read): nothing there is this user's
			// profile; go on, as git does with an unreadable config.
			return nil, false, nil
		}
	}
	if err != nil {
		return nil, false, fmt.Errorf("%w: %s: %v", ErrUntrustedProfile, p, err)
	}
	defer f.Close()
	if err := trustedProfileFile(d, p, f); err != nil {
		return nil, false, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxProfileBytes+1))
	if err != nil {
		return nil, false, fmt.Errorf("profile %s: %w", p, err)
	}
	if len(data) > maxProfileBytes {
		return nil, false, fmt.Errorf("profile %s: larger than %d bytes", p, maxProfileBytes)
	}
	return data, true, nil
}

// maxProfileBytes bounds a profile file found in the search path.
const maxProfileBytes = 1 << 20
