// Package host reads from the running system the facts a mounts.Plan is
// built from: resolved directories, whether a path exists, the agent's home
// and the caller's credential sockets. Package mounts stays pure data; both
// fedmem-run and `fedmem profile explain` take their mounts.Input from here,
// so the plan a security team reviews is the plan that runs.
package host

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/fedmem/fedmem/mounts"
)

// RealDir returns the absolute, symlink-free path of a directory.
func RealDir(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", real)
	}
	return real, nil
}

// Exists reports whether p exists (without following a final link) and
// whether it is a directory: the mounts.Input Exists function.
func Exists(p string) (bool, bool) {
	fi, err := os.Lstat(p)
	if err != nil {
		return false, false
	}
	return true, fi.IsDir()
}

// List returns the names in the directory p (the mounts.Input List
// function); nil for a directory that is absent or unreadable. The
// directory itself is not followed if it is a link.
func List(p string) ([]string, error) {
	if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// Home returns the symlink-free home directory of uid: $HOME for the
// caller, the passwd entry for another uid (run_as).
func Home(uid int) (string, error) {
	h := os.Getenv("HOME")
	if uid != os.Getuid() || h == "" {
		if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.HomeDir != "" {
			h = u.HomeDir
		}
	}
	if h == "" {
		return "", errors.New("no home directory: set HOME")
	}
	real, err := filepath.EvalSymlinks(h)
	if err != nil {
		return "", fmt.Errorf("home %s: %w", h, err)
	}
	return filepath.Clean(real), nil
}

// PasswdHome is uid's home as the account database names it, links
// resolved where it exists; "" when there is none.
func PasswdHome(uid int) string {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil || u.HomeDir == "" {
		return ""
	}
	if r, err := filepath.EvalSymlinks(u.HomeDir); err == nil {
		return filepath.Clean(r)
	}
	return filepath.Clean(u.HomeDir)
}

// CredentialPaths are host paths that hold live credentials of the caller:
// its runtime dir (agent sockets, keyrings) and forwarded agent sockets.
func CredentialPaths(uid int) []string {
	var out []string
	for _, p := range []string{os.Getenv("XDG_RUNTIME_DIR"), fmt.Sprintf("/run/user/%d", uid), os.Getenv("SSH_AUTH_SOCK"), os.Getenv("GPG_AGENT_INFO")} {
		if p == "" {
			continue
		}
		p, _, _ = strings.Cut(p, ":")
		if real, err := filepath.EvalSymlinks(p); err == nil && filepath.IsAbs(real) && real != "/" && real != "/tmp" {
			out = append(out, real)
		}
	}
	return out
}

// maxConfig bounds one configuration file ReadConfig reads.
const maxConfig = 16 << 20

// ReadConfig reads a configuration file of the user's tools for the plan
// (mounts.Input ReadFile): (nil, nil) when it is absent. It opens without
// blocking (a FIFO planted where a config is expected never hangs the
// launcher), reads regular files only and at most 16 MiB: a larger or
// unreadable file is an error, never taken as empty.
func ReadConfig(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfig+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxConfig {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, maxConfig)
	}
	return data, nil
}

// Links returns the number of hard links of the file p (not followed if
// it is a link); 0 when it cannot be read (the mounts.Input Links
// function).
func Links(p string) int {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return 0
	}
	return int(st.Nlink)
}

// Homes returns the home directories of the accounts in /etc/passwd and
// /root: absolute, symlinks resolved where they exist, each once, whether
// made yet or not. An account whose home is / is left out. Homes served by NSS
// alone (LDAP, sssd) are not listed: mounts.Input.Homes says what a
// missing entry means.
func Homes() []string {
	return homesFrom("/etc/passwd")
}

// HomesIn is Homes with the homes' links resolved on the view l.
func HomesIn(l *mounts.Links) []string {
	return homesFromIn("/etc/passwd", l)
}

func homesFrom(passwd string) []string { return homesFromIn(passwd, nil) }

func homesFromIn(passwd string, l *mounts.Links) []string {
	seen := map[string]bool{}
	var out []string
	add := func(h string) {
		if !filepath.IsAbs(h) {
			return
		}
		// A home not made yet (pam_mkhomedir makes it at the first
		// login, useradd without -m) is a home all the same: a workdir
		// holding its place could make it, keys and all.
		real := filepath.Clean(h)
		if r, err := l.EvalSymlinks(h); err == nil {
			real = filepath.Clean(r)
		}
		if real == "/" || seen[real] {
			return
		}
		seen[real] = true
		out = append(out, real)
	}
	add("/root")
	b, err := os.ReadFile(passwd)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' || line[0] == '+' || line[0] == '-' {
			continue
		}
		if f := strings.Split(line, ":"); len(f) >= 7 {
			add(f[5])
		}
	}
	return out
}
