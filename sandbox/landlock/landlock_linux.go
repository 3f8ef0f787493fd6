//go:build linux

package landlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	golandlock "github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// newestKnown is the newest Landlock ABI go-landlock v0.11.2 can build
// rulesets for (its landlock.V11); a newer kernel is used at this level.
const newestKnown = 11

// errataSignalScope is the Landlock erratum bit for the fixed signal
// scoping bug; without it go-landlock treats an ABI ≥ 6 kernel as ABI 5.
const errataSignalScope = 0x2

// abis returns the kernel's Landlock ABI and the one go-landlock will
// build for. It repeats go-landlock's internal DetectedABIVersion (errata
// downgrade) and its cap, which are not exported, so that Status reports
// what was enforced rather than what was asked for.
func abis() (kernel, effective int) {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0, 0
	}
	kernel, effective = v, v
	if effective >= 6 {
		errata, err := ll.LandlockGetErrata()
		if err != nil {
			errata = 0
		}
		if errata&errataSignalScope == 0 {
			effective = 5
		}
	}
	if effective > newestKnown {
		effective = newestKnown
	}
	return kernel, effective
}

// ABI returns the Landlock ABI version Apply would enforce on this host,
// 0 if the kernel has no Landlock (or it is disabled at boot).
func ABI() int {
	_, e := abis()
	return e
}

// Apply builds a Landlock ruleset from r and enforces it on every thread of
// the calling process, setting no_new_privs on all threads as it does. Call
// it in the sandbox init after the mounts are final and before capabilities
// are dropped and seccomp is applied; the agent inherits the domain.
//
// Without Landlock in the kernel it returns Status{ABI: 0} and no error.
// Paths that do not exist are skipped and listed in Status.Skipped. An
// error means nothing was enforced (Landlock enforcement is all or nothing).
func Apply(r Rules) (Status, error) {
	if err := r.validate(); err != nil {
		return Status{}, err
	}
	var st Status
	st.KernelABI, st.ABI = abis()
	if st.ABI == 0 {
		return st, nil
	}

	rules, skipped, err := r.build(st.ABI)
	if err != nil {
		return Status{KernelABI: st.KernelABI}, err
	}
	cfg := golandlock.Config{
		HandledAccessFS: golandlock.V11.HandledAccessFS,
		Scoped:          golandlock.V11.Scoped,
	}
	if r.NetworkNone {
		cfg.HandledAccessNet = golandlock.V11.HandledAccessNet
	}
	if err := cfg.BestEffort().Restrict(rules...); err != nil {
		return Status{KernelABI: st.KernelABI}, fmt.Errorf("landlock: restrict (ABI %d): %w", st.ABI, err)
	}

	st.Skipped = skipped
	st.FS = st.ABI >= 1
	st.Refer = st.ABI >= 2
	st.Truncate = st.ABI >= 3
	st.IoctlDev = st.ABI >= 5
	st.ResolveUnix = st.ABI >= 9
	st.NetTCP = r.NetworkNone && st.ABI >= 4
	st.NetUDP = r.NetworkNone && st.ABI >= 10
	st.ScopeAbstractUnix = st.ABI >= 6
	st.ScopeSignal = st.ABI >= 6
	return st, nil
}

func (r Rules) validate() error {
	for _, f := range []struct {
		field string
		paths []string
	}{
		{"ReadOnly", r.ReadOnly}, {"ReadWrite", r.ReadWrite},
		{"ReadWriteFiles", r.ReadWriteFiles}, {"Devices", r.Devices}, {"UnixSockets", r.UnixSockets},
	} {
		for i, p := range f.paths {
			switch {
			case p == "":
				return fmt.Errorf("landlock: Rules.%s[%d]: empty path", f.field, i)
			case strings.IndexByte(p, 0) >= 0:
				return fmt.Errorf("landlock: Rules.%s[%d] %q: NUL byte in path", f.field, i, p)
			case !filepath.IsAbs(p):
				return fmt.Errorf("landlock: Rules.%s[%d] %q: not an absolute path", f.field, i, p)
			}
		}
	}
	return nil
}

type kind int

const (
	kindMissing kind = iota
	kindDir
	kindDevice
	kindFile
)

// classify stats p (following symlinks, as Landlock's open does).
func classify(p string) (kind, error) {
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return kindMissing, nil
		}
		return kindMissing, fmt.Errorf("landlock: %w", err)
	}
	switch {
	case fi.IsDir():
		return kindDir, nil
	case fi.Mode()&(os.ModeDevice|os.ModeCharDevice) != 0:
		return kindDevice, nil
	}
	return kindFile, nil
}

// build turns r into go-landlock rules for ABI abi. Directory rights are
// only ever put on directories (the kernel rejects them on files with
// EINVAL), and "refer" only on ABI ≥ 2: go-landlock's best effort mode would
// otherwise drop Landlock entirely on an ABI 1 kernel.
func (r Rules) build(abi int) (rules []golandlock.Rule, skipped []string, err error) {
	add := func(p string, dir, file func(string) golandlock.FSRule, ioctlDevices bool) error {
		k, err := classify(p)
		if err != nil {
			return err
		}
		switch k {
		case kindMissing:
			skipped = append(skipped, p)
			return nil
		case kindDir:
			rules = append(rules, dir(p).IgnoreIfMissing())
		default:
			fr := file(p)
			if k == kindDevice && ioctlDevices {
				fr = fr.WithIoctlDev()
			}
			rules = append(rules, fr.IgnoreIfMissing())
		}
		return nil
	}
	roDir := func(p string) golandlock.FSRule { return golandlock.RODirs(p) }
	roFile := func(p string) golandlock.FSRule { return golandlock.ROFiles(p) }
	rwDir := func(p string) golandlock.FSRule {
		fr := golandlock.RWDirs(p)
		if abi >= 2 {
			fr = fr.WithRefer()
		}
		return fr
	}
	rwFile := func(p string) golandlock.FSRule { return golandlock.RWFiles(p) }
	device := func(p string) golandlock.FSRule { return golandlock.RWFiles(p).WithIoctlDev() }
	// Only the resolve-unix right; on ABI < 9 it downgrades to nothing.
	sock := func(p string) golandlock.FSRule { return golandlock.PathAccess(ll.AccessFSResolveUnix, p) }

	for _, p := range r.ReadOnly {
		if err := add(p, roDir, roFile, false); err != nil {
			return nil, nil, err
		}
	}
	for _, p := range r.ReadWrite {
		if err := add(p, rwDir, rwFile, true); err != nil {
			return nil, nil, err
		}
	}
	for _, p := range r.ReadWriteFiles {
		if err := add(p, rwFile, rwFile, true); err != nil {
			return nil, nil, err
		}
	}
	for _, p := range r.Devices {
		if err := add(p, device, device, true); err != nil {
			return nil, nil, err
		}
	}
	for _, p := range r.UnixSockets {
		if err := add(p, sock, sock, false); err != nil {
			return nil, nil, err
		}
	}
	return rules, skipped, nil
}
