package mounts

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/moby/sys/mountinfo"

	"github.com/fedmem/fedmem/mounts/families"

	"github.com/fedmem/fedmem/mounts/request"
	"github.com/fedmem/fedmem/vault"
)

// Whys of the home's top level when the home lies in a writable path
// (homeTop).
const (
	// WhyHomeTop is the read-only layer over the home's top level.
	WhyHomeTop = "home in a writable path: its top level and every dot-entry read-only (rule home-config-readonly)"
	// WhyHomeEntry is an existing non-dot entry of that home, writable
	// through its own bind.
	WhyHomeEntry = "home in a writable path: an existing non-dot entry, writable"
)

// RuleHomeConfig names the rule in verification errors and denial hints.
const RuleHomeConfig = "home-config-readonly"

// homeTop is the home's allow-list when the home lies in a writable path
// (the workdir is the home, or the workdir or a `writable:` path holds it):
// the writable bind would show it whole, and every file a shell, editor or
// multiplexer of the user runs by itself (~/.bashrc.d/*, ~/.cargo/env,
// ~/.tmux.conf, ~/.config/nvim/init.lua…) with it. A list of such names
// is never complete; instead:
//
//   - the home itself is bound read-only over the writable bind: nothing
//     can be created, removed or renamed at its top level, and every
//     dot-entry (files and directories, at any depth) is read-only (EROFS,
//     in the kernel, while the agent runs: a host shell reading
//     ~/.bashrc.d during the session finds it as it was);
//   - every existing non-dot entry (a project, ~/go, ~/src) is bound
//     writable onto itself, as before: a mount point cannot be renamed or
//     removed (EBUSY), a link or rename between it and the read-only top is
//     across mounts (EXDEV);
//   - a non-dot entry that is a symbolic link is not followed: it stays as
//     it is, and a write through it lands where it points (read-only when
//     that is a dot-entry);
//   - what the profile names in home.writable or state is bound writable
//     over all this (deeper targets, later in the plan), so a tool's cache
//     the profile grants still works.
//
// The mounts are returned in order (the read-only home first); the caller
// sorts them after the writable bind that holds the home (same depth,
// later in a stable sort).
func homeTop(pl *Plan, in Input, exists func(string) (bool, bool)) ([]Mount, error) {
	h := in.Home
	if h == "/" || vault.Within(h, in.Vault) {
		return nil, nil
	}
	if ok, isDir := exists(h); !ok || !isDir {
		return nil, nil
	}
	out := []Mount{{Kind: BindRO, Source: h, Target: h, Dir: true, Idmap: true, Why: WhyHomeTop}}
	var names []string
	if in.List != nil {
		var err error
		if names, err = in.List(h); err != nil {
			return nil, fmt.Errorf("%w: the home %s lies in a writable path and cannot be listed: %v (rule %s: its non-dot entries are bound one by one)", ErrPlan, h, err, RuleHomeConfig)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.HasPrefix(n, ".") {
			continue // read-only under the home's layer
		}
		p := filepath.Join(h, n)
		if in.RealPath != nil && in.RealPath(p) != p {
			continue // a link: not followed (a mount point must not be one)
		}
		ok, isDir := exists(p)
		if !ok {
			continue
		}
		out = append(out, Mount{Kind: BindRW, Source: p, Target: p, Dir: isDir, Why: WhyHomeEntry})
		if len(out)-1 > MaxHomeEntries {
			return nil, fmt.Errorf("%w: the home %s lies in a writable path and holds more than %d non-dot entries (rule %s: each is bound writable on its own): use a project folder as the workdir", ErrPlan, h, MaxHomeEntries, RuleHomeConfig)
		}
	}
	pl.HomeTop = h
	pl.Warnings = append(pl.Warnings, fmt.Sprintf("the home %s lies in a writable path: its top level and every dot-entry are read-only (%s), its %d existing non-dot entries writable; home.writable and state name the dot-entries the agent may write", h, RuleHomeConfig, len(out)-1))
	return out, nil
}

// MaxHomeEntries bounds the non-dot entries of a home in a writable path
// (one bind each): past it the plan is refused, not half-made.
const MaxHomeEntries = 1024

// inHomeTop reports whether p, whose longest writable root is r, lies in
// the read-only part of a home in a writable path (Plan.HomeTop): in the
// home, under no non-dot entry's bind and no writable root inside the home.
func inHomeTop(pl *Plan, entries []string, p, r string) bool {
	h := pl.HomeTop
	if h == "" || !vault.Within(p, h) || (r != h && vault.Within(r, h)) {
		return false
	}
	for _, e := range entries {
		if vault.Within(p, e) {
			return false
		}
	}
	return true
}

// withoutHomeTop leaves out homeTop's mounts: they show the same host
// paths as the writable bind that holds the home, whose scan for sockets
// and FIFOs covers them.
func withoutHomeTop(ms []Mount) []Mount {
	var out []Mount
	for _, m := range ms {
		if m.Why != WhyHomeTop && m.Why != WhyHomeEntry {
			out = append(out, m)
		}
	}
	return out
}

// verifyHomeTop: the home's top level is a read-only mount of its own
// (the dot-entries below it with it), and each writable non-dot entry a
// mount point (it cannot be renamed away).
func verifyHomeTop(pl *Plan, infos []*mountinfo.Info) error {
	if pl.HomeTop == "" {
		return nil
	}
	if m := reached(infos, pl.HomeTop); m == nil || m.Mountpoint != pl.HomeTop || !readOnly(m) {
		return &VerifyError{Path: pl.HomeTop, Rule: RuleHomeConfig, Detail: "the home's top level is not its own read-only mount: " + describe(m)}
	}
	for _, pm := range pl.Mounts {
		if pm.Why != WhyHomeEntry {
			continue
		}
		if m := reached(infos, pm.Target); m == nil || m.Mountpoint != pm.Target {
			return &VerifyError{Path: pm.Target, Rule: RuleHomeConfig, Detail: "a non-dot entry of the home is not its own mount: " + describe(m)}
		}
	}
	return nil
}

// Bounds of the walk for links among a home's dot-entries (homeLinks).
const (
	homeLinkDepth   = 6    // ~/.config/nvim/lua/user/init.lua (GNU stow unfolds shared folders: one link per file)
	homeLinkEntries = 4096 // names looked at, then the walk stops (warned)
)

// homeLinks finds the symbolic links among the dot-entries of a home in a
// writable path (Plan.HomeTop), to homeLinkDepth levels, without following
// any: a dotfiles checkout links ~/.bashrc or ~/.config/nvim into a
// non-dot folder the agent may write (~/dotfiles), where the read-only top
// does not reach. Each link's target is returned as a candidate for
// protectPersistence, which holds it read-only (and pins the directories
// on its way) when it lies in a writable path, and leaves it alone when it
// is read-only anyway.
func homeLinks(pl *Plan, in Input, exists func(string) (bool, bool)) []configured {
	if pl.HomeTop == "" || in.List == nil || in.RealPath == nil {
		return nil
	}
	var out []configured
	seen := 0
	granted := grantedInHome(pl)
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		names, _ := in.List(dir)
		sort.Strings(names)
		for _, n := range names {
			if depth == 1 && !strings.HasPrefix(n, ".") {
				continue // a non-dot entry: writable, judged as a project
			}
			if seen++; seen > homeLinkEntries {
				return
			}
			p := filepath.Join(dir, n)
			if slices.ContainsFunc(granted, func(g string) bool { return vault.Within(p, g) }) {
				continue // the agent's (home.writable, state)
			}
			r := in.RealPath(p)
			if r == p && in.Readlink != nil {
				// A dangling link resolves to nothing: what it names, once
				// the agent makes it, is the startup file.
				if t, err := in.Readlink(p); err == nil {
					if !filepath.IsAbs(t) {
						t = filepath.Join(dir, t)
					}
					r = filepath.Clean(t)
				}
			}
			if r != p {
				if filepath.IsAbs(r) && r != pl.HomeTop && !inHomeTopDots(pl.HomeTop, r) {
					rel := strings.TrimPrefix(p, pl.HomeTop+"/")
					out = append(out, configured{r, families.Persist{Path: rel, Why: "a dot-entry of the home links here (~/" + rel + "): its configuration"}})
				}
				continue
			}
			if _, isDir := exists(p); isDir && depth < homeLinkDepth {
				walk(p, depth+1)
			}
		}
	}
	walk(pl.HomeTop, 1)
	if seen > homeLinkEntries {
		pl.Warnings = append(pl.Warnings, fmt.Sprintf("the home %s lies in a writable path: its dot-entries were searched for links into writable folders up to %d names only; a startup file linked from further in is not held (%s)", pl.HomeTop, homeLinkEntries, RuleHomeConfig))
	}
	return out
}

// inHomeTopDots: r lies under a dot-entry of home h (read-only already).
func inHomeTopDots(h, r string) bool {
	rel, ok := strings.CutPrefix(r, h+"/")
	return ok && strings.HasPrefix(rel, ".")
}

// Bounds of the read of a home's startup files for the paths they name
// (homeNamed).
const (
	homeNamedFiles = 512       // files read, then the read stops (warned)
	homeNamedBytes = 256 << 10 // a larger file is not read (warned)
)

// homeRef finds a path in the home named in a startup file: ~/x, $HOME/x,
// ${HOME}/x or the home's own path; group 1 is what precedes it (to tell
// a Git includeIf's gitdir: condition from an include), group 2 the path.
var homeRefChars = `([A-Za-z0-9_@%+,.*?\[\]\-/]+)`

// The patterns below are compiled at their first use, not at package
// init: the sandbox's pid 1 and the user-namespace holder link this
// package too and never read a startup file.
//
// homeSources: a line that sources, includes or imports what it names.
var homeSources = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(^\s*|[;&|({]\s*)(\.|source|include|import|path\s*=|\[\s*-[fers])\s`)
})

// codePathLine: a line that puts a folder on a search path for code — a
// program (PATH, fish_add_path, zsh's path=(…)), a module or library
// (PYTHONPATH, whose sitecustomize.py runs at every start; NODE_PATH,
// PERL5LIB, RUBYLIB, LD_LIBRARY_PATH), zsh functions (fpath) or editor
// plugins (vim's runtimepath/packpath). GOPATH is not one: it names where
// go keeps modules and projects, and its bin/ is on PATH when it runs.
var codePathLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b(PATH|PYTHONPATH|NODE_PATH|PERL5LIB|PERLLIB|RUBYLIB|LD_LIBRARY_PATH|LD_PRELOAD|fish_add_path|runtimepath|rtp|packpath)\b|\b(f?path)\+?=\(`)
})

// relSource: a shell line sourcing a relative path (group 1).
var relSource = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^\s*|[;&|({]\s*)(?:\.|source)\s+["']?([A-Za-z0-9_@%+,\-][A-Za-z0-9_@%+,.*?\[\]\-/]*)`)
})

// notStartup: dot-files that record, not configure (history, state,
// logs): the paths they name are what the user typed or opened.
var notStartup = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)hist|viminfo|lesshst|hsts|\.log$|errors|recently|state|\.lock$|cookie`)
})

// homeNamed returns what a home in a writable path names as code inside
// its writable non-dot entries, where neither the read-only top nor the
// link walk reaches: a directory on the caller's PATH (a planted ~/bin/git
// runs instead of git at the next login: Debian's ~/.profile puts an
// existing ~/bin first), what the profile's home.show shows read-only
// (go/bin/), and the paths the home's startup files name by text
// (". ~/dotfiles/aliases.sh" in ~/.bashrc; a PATH=$HOME/bin line; a
// sourced glob's folder). Startup files are the regular dot-files at the
// top, under ~/.config and under the top's *.d folders, to 3 levels, not
// history or state files; bounded (homeNamedFiles, homeNamedBytes, with a
// warning). A named file is held read-only (protectPersistence; absent:
// watched and moved aside after the session when a line sources it); a
// named folder only from a PATH line or a sourced glob (a `cd ~/proj`
// alias or a Git includeIf gitdir: keeps the project writable). Rule
// home-config-readonly; issue 22's red team, TestRT22HomeCodeInNonDotEntries.
//
// A startup file with more than one hard link refuses the plan (rule
// home-config-readonly): its other name may lie in a writable folder
// (`ln ~/dotfiles/tmux.conf ~/.tmux.conf`), where the agent writes the
// startup file through it, and nothing here finds that name without
// walking every project (TestRT22HomeDotFileHardLinked).
func homeNamed(pl *Plan, rq *request.Request, in Input, exists func(string) (bool, bool)) ([]configured, error) {
	h := pl.HomeTop
	if h == "" {
		return nil, nil
	}
	var out []configured
	real := func(x string) string {
		// A link (~/bin -> dotfiles/bin): its target is what runs, and
		// a mount point must not be a link.
		if in.RealPath != nil {
			return in.RealPath(x)
		}
		return x
	}
	inEntry := func(x string) (string, bool) {
		x = real(x)
		rel, ok := strings.CutPrefix(filepath.Clean(x), h+"/")
		if !ok || rel == "" || strings.HasPrefix(rel, ".") || strings.HasPrefix(rel, "..") {
			return "", false
		}
		return rel, true
	}
	for _, d := range in.PathDirs {
		if !filepath.IsAbs(d) {
			continue
		}
		if rel, ok := inEntry(d); ok {
			out = append(out, configured{filepath.Join(h, rel), families.Persist{Path: rel, Dir: true, Why: "on the caller's PATH (~/" + rel + "): a program there runs by name at the next login"}})
		}
	}
	if rq != nil {
		for _, rel := range rq.Home.Show {
			if rel, ok := inEntry(filepath.Join(h, rel)); ok {
				out = append(out, configured{filepath.Join(h, rel), families.Persist{Path: rel, Why: "home.show (~/" + rel + "): shown read-only"}})
			}
		}
	}
	if in.List == nil || in.ReadFile == nil {
		return out, nil
	}
	granted := grantedInHome(pl)
	ref := regexp.MustCompile(`(gitdir(?:/i)?:)?(?:~|\$HOME|\$\{HOME\}|` + regexp.QuoteMeta(h) + `)/` + homeRefChars)
	var files []string
	var walk func(dir string, depth int, config bool)
	walk = func(dir string, depth int, config bool) {
		names, _ := in.List(dir)
		sort.Strings(names)
		for _, n := range names {
			if depth == 1 && !strings.HasPrefix(n, ".") {
				continue
			}
			p := filepath.Join(dir, n)
			if in.RealPath != nil && in.RealPath(p) != p {
				continue // a link: homeLinks holds its target
			}
			if slices.ContainsFunc(granted, func(g string) bool { return vault.Within(p, g) }) {
				continue
			}
			ok, isDir := exists(p)
			switch {
			case !ok || notStartup().MatchString(n):
			case isDir && depth < 3 && (config || (depth == 1 && (n == ".config" || strings.HasSuffix(n, ".d")))):
				walk(p, depth+1, true)
			case !isDir && (depth == 1 || config):
				files = append(files, p)
			}
		}
	}
	walk(h, 1, false)
	for _, f := range files {
		if in.Links == nil {
			break
		}
		if n := in.Links(f); n > 1 {
			return nil, fmt.Errorf("%w: the home %s lies in a writable path and its startup file %s has %d hard links (rule %s: another name of it may lie in a folder the agent may write, and a write there changes this file; replace the hard link by a copy or a symbolic link, or use a project folder as the workdir)", ErrPlan, h, f, n, RuleHomeConfig)
		}
	}
	if len(files) > homeNamedFiles {
		pl.Warnings = append(pl.Warnings, fmt.Sprintf("the home %s lies in a writable path: only %d of its %d startup files were read for the paths they name in its writable folders (%s)", h, homeNamedFiles, len(files), RuleHomeConfig))
		files = files[:homeNamedFiles]
	}
	seen := map[string]bool{}
	for _, f := range files {
		b, err := in.ReadFile(f)
		if err != nil || len(b) > homeNamedBytes {
			if len(b) > homeNamedBytes {
				pl.Warnings = append(pl.Warnings, fmt.Sprintf("%s is larger than %d bytes: the paths it names in the home's writable folders are not held (%s)", f, homeNamedBytes, RuleHomeConfig))
			}
			continue
		}
		top := filepath.Dir(f) == h
		for _, line := range strings.Split(string(b), "\n") {
			ms := ref.FindAllStringSubmatch(line, -1)
			if top {
				// A login shell starts in the home: ". dotfiles/aliases.sh"
				// in ~/.profile names ~/dotfiles/aliases.sh.
				for _, m := range relSource().FindAllStringSubmatch(line, -1) {
					ms = append(ms, []string{m[0], "", m[1]})
				}
			}
			for _, m := range ms {
				if m[1] != "" {
					continue // a Git includeIf condition names a project, not a file
				}
				rel := strings.TrimRight(m[2], ".,")
				glob := strings.IndexAny(rel, "*?[")
				dir := false
				if glob >= 0 {
					rel, dir = filepath.Dir(rel[:glob+1]), true
				}
				x := real(filepath.Join(h, filepath.Clean(rel)))
				rel, entry := inEntry(x)
				if !entry || seen[x] {
					continue
				}
				ok, isDir := exists(x)
				switch {
				case isDir && !dir && !codePathLine().MatchString(line):
					continue // a folder named as a place (cd ~/proj, GOPATH), not as code
				case !ok && !homeSources().MatchString(line):
					continue // absent, and not sourced: a place, not code
				}
				seen[x] = true
				out = append(out, configured{x, families.Persist{Path: rel, Dir: isDir, Why: "named by ~/" + strings.TrimPrefix(f, h+"/") + ": code the user's next login runs"}})
			}
		}
	}
	return out, nil
}

// grantedInHome: the paths of a home in a writable path that the profile
// grants the agent (home.writable, state). What lies there is the agent's,
// not the user's configuration: a link, a hard link or a name the agent
// left there must not refuse or shape the next session (homeLinks,
// homeNamed).
func grantedInHome(pl *Plan) []string {
	var out []string
	for _, m := range pl.Mounts {
		if m.Kind == BindRW && m.Why != WhyHomeEntry && m.Target != pl.HomeTop && vault.Within(m.Target, pl.HomeTop) {
			out = append(out, m.Target)
		}
	}
	return out
}
