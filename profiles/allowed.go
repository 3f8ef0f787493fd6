package profiles

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// A profile file that lies where a sandboxed agent could have written it
// is used only once the user has allowed its content, as direnv does for
// an .envrc: fedmem-run refuses it until `fedmem profile allow FILE`
// records its sha256 in the user's allow store. Changing the file changes
// its hash, and it is refused again. Such a file is one in a project's
// .fedmem/profiles (at any depth: a later run may use a subdirectory as its
// workdir) or one inside a path the session may write (its workdir,
// writable:, home.writable, state). The user's ~/.config/fedmem/profiles
// and /etc/fedmem/profiles stay read-only inside every sandbox and need no
// allow; nor does a file named outside every writable path.

// SourceFile is one file a profile was built from.
type SourceFile struct {
	Path   string // absolute
	SHA256 string // hex, of the bytes that were parsed
}

func appendSourceFile(files []SourceFile, src string, data []byte) []SourceFile {
	if strings.HasPrefix(src, "builtin:") {
		return files
	}
	if abs, err := filepath.Abs(src); err == nil {
		src = abs
	}
	return append(files, SourceFile{src, hashHex(data)})
}

func hashHex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// ErrNotAllowed is returned for a profile file an agent could have written
// whose content the user has not allowed.
var ErrNotAllowed = errors.New("profile file not allowed")

// AllowStore is the user's allow store, HOME/.config/fedmem/allowed-profiles
// (read-only inside every sandbox: HomePersist holds .config/fedmem). One
// line per allowed content: the sha256 in hex, two spaces, the path it was
// allowed at (for the reader; only the hash counts).
func AllowStore(home string) string {
	return filepath.Join(home, ".config", "fedmem", "allowed-profiles")
}

// NeedsAllow says why the file at path (absolute) must be allowed before it
// is used, or "" when it need not: it lies in a project's .fedmem/profiles,
// or inside one of writable (host paths the session may write).
func NeedsAllow(path string, writable []string) string {
	real := realPath(path)
	if d := filepath.Dir(real); filepath.Base(d) == "profiles" && filepath.Base(filepath.Dir(d)) == ".fedmem" {
		return "it lies in a project's .fedmem/profiles, which an agent working in that project or a parent folder could have written"
	}
	for _, w := range writable {
		if within(real, realPath(w)) {
			return fmt.Sprintf("it lies inside %s, which this session's agent may write", w)
		}
	}
	return ""
}

// CheckAllowed refuses p when one of the files it was built from needs an
// allow (NeedsAllow) and its sha256 is not in the store: the error names the
// file, its hash, the rule and the command that allows it. Files in the
// user's and the system's folders of search are exempt: they stay
// read-only inside every sandbox.
func CheckAllowed(p *Profile, search []SearchDir, writable []string, store string) error {
	var allowed map[string]bool
	for _, f := range p.Files {
		if k := SourceKind(f.Path, search); k == SearchUser || k == SearchSystem {
			continue
		}
		why := NeedsAllow(f.Path, writable)
		if why == "" {
			continue
		}
		if allowed == nil {
			var err error
			if allowed, err = readAllowStore(store); err != nil {
				return &LoadError{p.Name, err}
			}
		}
		if !allowed[f.SHA256] {
			return &LoadError{p.Name, fmt.Errorf("%w: %s (sha256 %s) has not been allowed (rule: %s, so it is used only once you have read it and allowed this content; a changed file must be allowed again): review it, then run `fedmem profile allow %s`", ErrNotAllowed, f.Path, f.SHA256, why, f.Path)}
		}
	}
	return nil
}

// readAllowStore reads the hashes in store; an absent store allows nothing.
func readAllowStore(store string) (map[string]bool, error) {
	out := map[string]bool{}
	f, err := openNoFollow(store)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("allow store %s: %w", store, err)
	}
	defer f.Close()
	if err := trustedStoreFile(store, f); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(io.LimitReader(f, 16<<20))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		h, _, _ := strings.Cut(line, " ")
		if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
			return nil, fmt.Errorf("allow store %s:%d: want a sha256 in hex, then the path (rule: lines are written by `fedmem profile allow`)", store, n)
		}
		out[h] = true
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("allow store %s: %w", store, err)
	}
	return out, nil
}

// HashFile is the sha256 of file as a profile load would see it.
func HashFile(file string) (abs, hash string, err error) {
	if abs, err = filepath.Abs(file); err != nil {
		return "", "", err
	}
	f, err := openNoFollow(abs)
	if err != nil {
		return "", "", fmt.Errorf("profile %s: %w", abs, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxProfileBytes+1))
	if err != nil {
		return "", "", fmt.Errorf("profile %s: %w", abs, err)
	}
	if len(data) > maxProfileBytes {
		return "", "", fmt.Errorf("profile %s: larger than %d bytes", abs, maxProfileBytes)
	}
	if _, err := Parse(abs, data); err != nil {
		return "", "", err
	}
	return abs, hashHex(data), nil
}

// Allow records hash (of the file at abs) in store, creating it (0600, its
// folder 0700) if needed; a hash already there is not written twice.
func Allow(store, abs, hash string) error {
	allowed, err := readAllowStore(store)
	if err != nil {
		return err
	}
	if allowed[hash] {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(store), 0o700); err != nil {
		return fmt.Errorf("allow store: %w", err)
	}
	old, err := os.ReadFile(store)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("allow store: %w", err)
	}
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		old = append(old, '\n')
	}
	data := append(old, []byte(hash+"  "+strings.ReplaceAll(abs, "\n", "?")+"\n")...)
	tmp := store + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("allow store: %w", err)
	}
	if err := os.Rename(tmp, store); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("allow store: %w", err)
	}
	return nil
}

func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	// A path that does not exist (yet): its folder's real path.
	if r, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		return filepath.Join(r, filepath.Base(p))
	}
	return filepath.Clean(p)
}
