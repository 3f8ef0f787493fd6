package guard

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/vault"
)

// Bounds of the after-session walk for nested repositories.
const (
	nestedMaxEntries = 500000
	nestedMaxDepth   = 64
)

// nestedRoots are the writable directories an agent may leave a repository
// in that the user's tools open later: the workdir, profile `writable:`
// directories and home.writable directories (not the session inbox, which
// the gate reads as data, and not state stores, which only fedmem binds).
func nestedRoots(pl *mounts.Plan) []string {
	var out []string
	for _, m := range pl.Mounts {
		if m.Kind != mounts.BindRW || !m.Dir || m.State || m.Target == pl.Inbox || vault.Within(m.Target, pl.Vault) {
			continue
		}
		switch m.Why {
		case "workdir", "profile: writable", "profile: home.writable":
			out = append(out, m.Target)
		}
	}
	return out
}

// sweepNestedRepos runs after the sandbox is gone (guarantee 6), on the
// roots (nestedRoots) opened at the session's start. Git
// discovers a repository in any directory: a `.git` the agent made in a
// subdirectory (or a bare layout: HEAD, objects/, refs/) with
// core.fsmonitor or hooks runs its code on the user's next `git status`
// there, or on an editor's scan of the workspace. No kernel mechanism
// refuses the creation of a name (Landlock grants by hierarchy, not by
// name), so fedmem-run walks the writable roots and moves aside, as
// NAME.fedmem-quarantined-SESSION, every `.git` born during the session
// (statx birth time, or ctime where the filesystem has no birth time),
// every existing `.git` whose config, commondir or hooks changed during it,
// and the HEAD of every bare layout born during it (HEAD beside objects/
// and refs/, or beside a commondir naming where they are) — each reported as a
// "persistence" event. The walk never follows a link (every directory is
// opened O_NOFOLLOW relative to its parent's descriptor, renames are
// relative to it too) and stays on the root's filesystem. It skips the
// names the plan protected unless a cover was lost (coversLost: the init
// found the mount table no longer matching the plan when the agent ended):
// on the host those mounts exist only in the sandbox's namespace, and a
// process outside it (a concurrent session's agent whose writable workdir
// holds this one's, or a host process replacing a covered file) that
// unlinks or replaces one detaches it there (Linux >= 3.18), after which
// this session's agent may write the name
// (TestRedteam4NestedSessionDetachesProtection). While every cover held,
// a change there is the user's own (git push -u rewrites .git/config) and
// is left alone. A placeholder
// still held by a session (an empty mode-0000 .git) is passed over. Past nestedMaxEntries entries or
// nestedMaxDepth levels it stops and reports the root as unchecked
// ("persistence" event with an error): what it did not see it cannot vouch
// for.
func sweepNestedRepos(spec *Spec, roots map[string]int, start time.Time, coversLost bool) {
	// The names the plan protected were covered for the whole session
	// unless the init found a cover gone at the end (Result.CoversLost):
	// the agent could not write them, and a change there is the user's
	// own (git push -u rewrites .git/config) — not moved aside.
	skip, held := map[string]bool{}, map[string]bool{}
	if !coversLost {
		for _, m := range spec.Plan.Mounts {
			if m.Kind == mounts.Protected || m.Kind == mounts.Pinned {
				skip[m.Target] = true
			}
			if m.Kind == mounts.Protected {
				held[m.Target] = true
			}
		}
	}
	fams, instr := spec.Plan.PersistencePatterns()
	for root, fd := range roots {
		dfd, err := openRootLending(fd)
		if err != nil {
			emit(spec, "persistence", map[string]any{"path": root, "error": "cannot list it (" + err.Error() + "): repositories and persistence names below were not checked"})
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(dfd, &st) != nil {
			unix.Close(dfd)
			continue
		}
		w := &nestedWalk{spec: spec, start: start, dev: st.Dev, skip: skip, held: held, fams: fams, instr: instr}
		if err := w.dir(dfd, root, 0); err != nil {
			emit(spec, "persistence", map[string]any{"path": root, "error": err.Error() + ": repositories beyond were not checked"})
		}
	}
}

// openRootLending opens the root at the O_PATH descriptor fd for reading.
// An unprivileged caller walks as itself: the agent (the same uid) can
// make the root unlistable (chmod 311: paths through it still resolve),
// which hid everything below from the walk (TestRedteam5UnlistableRoot).
// The owner lends itself read and search permission for the open and puts
// the mode back; the descriptor it got stays good.
func openRootLending(fd int) (int, error) {
	open := func() (int, error) { return unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0) }
	dfd, err := open()
	if errors.Is(err, unix.EACCES) {
		lendMode(fd, 0o500, func() { dfd, err = open() })
	}
	return dfd, err
}

type nestedWalk struct {
	spec    *Spec
	start   time.Time
	dev     uint64
	skip    map[string]bool // protected and pinned names (none when a cover was lost)
	held    map[string]bool // protected names only: read-only all session
	fams    *mounts.PatternSet
	instr   *mounts.PatternSet // nil: instructions are a family (fams)
	entries int
}

var errNestedBound = errors.New("walk bound reached")

// bornDuring reports whether name in dfd was created (or, where the
// filesystem keeps no birth time, changed) during the session.
func (w *nestedWalk) bornDuring(dfd int, name string) bool {
	var sx unix.Statx_t
	if unix.Statx(dfd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME|unix.STATX_CTIME, &sx) != nil {
		return false
	}
	ts := sx.Ctime
	if sx.Mask&unix.STATX_BTIME != 0 {
		ts = sx.Btime
	}
	return !time.Unix(ts.Sec, int64(ts.Nsec)).Before(w.start)
}

func (w *nestedWalk) changedDuring(dfd int, name string) bool {
	var sx unix.Statx_t
	if unix.Statx(dfd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_CTIME, &sx) != nil {
		return false
	}
	return !time.Unix(sx.Ctime.Sec, int64(sx.Ctime.Nsec)).Before(w.start)
}

// gitDirTouched reports whether the existing git directory .git in dfd had
// its config, commondir, hooks directory or a hook changed in the session.
func (w *nestedWalk) gitDirTouched(dfd int) bool {
	gfd, err := openSubdir(dfd, ".git")
	if err != nil {
		return false
	}
	defer unix.Close(gfd)
	return w.gitFDTouched(gfd, 0)
}

// gitFDTouched is gitDirTouched for the git directory open at gfd, and for
// the git directories of its submodules (modules/NAME, NAME may hold
// slashes) and linked worktrees (worktrees/NAME): the user's next git in a
// submodule's or worktree's folder reads their config, commondir and hooks
// (TestRedteam5SubmoduleConfig). Too deep to judge counts as touched.
func (w *nestedWalk) gitFDTouched(gfd, depth int) bool {
	if depth > 16 {
		return true
	}
	for _, sub := range []string{"modules", "worktrees"} {
		if w.nestedGitDirsTouched(gfd, sub, depth+1) {
			return true
		}
	}
	for _, n := range []string{"config", "config.worktree", "commondir", "hooks"} {
		if w.changedDuring(gfd, n) {
			return true
		}
	}
	hfd, err := openSubdir(gfd, "hooks")
	if err != nil {
		return false
	}
	defer unix.Close(hfd)
	names, _ := readNames(hfd)
	for _, n := range names {
		if w.changedDuring(hfd, n) {
			return true
		}
	}
	return false
}

// nestedGitDirsTouched searches the directory name in fd for git
// directories (a directory with HEAD; one without is a level of a slashed
// submodule name) that gitFDTouched finds touched.
func (w *nestedWalk) nestedGitDirsTouched(fd int, name string, depth int) bool {
	if depth > 16 {
		return true
	}
	sfd, err := openSubdir(fd, name)
	if err != nil {
		return false
	}
	defer unix.Close(sfd)
	names, _ := readNames(sfd)
	for _, n := range names {
		if n == "." || n == ".." {
			continue
		}
		cfd, err := openSubdir(sfd, n)
		if err != nil {
			continue
		}
		var touched bool
		if unix.Faccessat(cfd, "HEAD", unix.F_OK, unix.AT_SYMLINK_NOFOLLOW) == nil {
			touched = w.gitFDTouched(cfd, depth+1)
		} else {
			touched = w.nestedGitDirsTouched(sfd, n, depth+1)
		}
		unix.Close(cfd)
		if touched {
			return true
		}
	}
	return false
}

func (w *nestedWalk) quarantine(dfd int, dir, name, why string) {
	moveAside(w.spec, dfd, dir, name, why)
}

// includeTargets judges the files a nested repository's own .git/config
// includes ([include] or [includeIf …] path) that lie in its working tree
// (path = ../.gitshared, a way to share config in a project): one made or
// changed during the session is moved aside, since git reads it as the
// repository's config on the user's next command (core.fsmonitor, hooks
// path, aliases; TestPersistenceNestedRepoInclude). The workdir's own
// repository's includes are held or watched by the plan
// (mounts.configuredRunLater); an include outside the repository's folder
// or through a link is not judged here.
func (w *nestedWalk) includeTargets(dfd int, p string) {
	fd, err := unix.Openat2(dfd, ".git/config", &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		return
	}
	buf := make([]byte, 1<<20)
	n, _ := unix.Read(fd, buf)
	unix.Close(fd)
	if n <= 0 {
		return
	}
	section := ""
	for _, line := range strings.Split(string(buf[:n]), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			section = strings.ToLower(line)
			if i := strings.Index(line, "]"); i >= 0 {
				line = strings.TrimSpace(line[i+1:])
			} else {
				continue
			}
		}
		if !strings.HasPrefix(section, "[include") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "path") {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), "\"")
		if v == "" || strings.HasPrefix(v, "~") {
			continue
		}
		t := v
		if !filepath.IsAbs(t) {
			t = filepath.Join(p, ".git", t)
		}
		rel, err := filepath.Rel(p, filepath.Clean(t))
		if err != nil || rel == "." || rel == ".git" || strings.HasPrefix(rel, "../") || rel == ".." || strings.HasPrefix(rel, ".git/") {
			continue
		}
		parent, name := filepath.Dir(rel), filepath.Base(rel)
		pfd := dfd
		if parent != "." {
			pfd, err = unix.Openat2(dfd, parent, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
				Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS})
			if err != nil {
				continue
			}
		}
		if w.bornDuring(pfd, name) || w.changedDuring(pfd, name) {
			w.quarantine(pfd, filepath.Join(p, parent), name, "a file the repository's .git/config includes, made or changed during the session: git reads it as the repository's config")
		}
		if pfd != dfd {
			unix.Close(pfd)
		}
	}
}

// dir walks the directory open at dfd (path p) and closes dfd.
func (w *nestedWalk) dir(dfd int, p string, depth int) error {
	defer unix.Close(dfd)
	if depth > nestedMaxDepth {
		return fmt.Errorf("%w: deeper than %d levels at %s", errNestedBound, nestedMaxDepth, p)
	}
	names, err := readNames(dfd)
	if err != nil {
		return nil // unreadable: git, as the user, may read it; reported below if bounds hit
	}
	has := map[string]uint32{}
	for _, n := range names {
		if w.entries++; w.entries > nestedMaxEntries {
			return fmt.Errorf("%w: more than %d entries", errNestedBound, nestedMaxEntries)
		}
		var st unix.Stat_t
		if unix.Fstatat(dfd, n, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			has[n] = st.Mode & unix.S_IFMT
		}
	}
	if _, ok := has[".git"]; ok && !w.skip[filepath.Join(p, ".git")] && !heldPlaceholder(dfd, ".git") {
		switch {
		case w.bornDuring(dfd, ".git"):
			w.quarantine(dfd, p, ".git", "a repository made during the session: its config and hooks are the agent's")
		case has[".git"] != unix.S_IFDIR && w.changedDuring(dfd, ".git"):
			// A gitfile (gitdir: PATH) keeps its birth time through a
			// write in place and a rename: an old file of the user's
			// rewritten and renamed to .git points git at a repository of
			// the agent's (TestRedteam5OldGitfile).
			w.quarantine(dfd, p, ".git", "a gitfile written or moved here during the session: it points git at a repository of the agent's")
		case has[".git"] == unix.S_IFDIR && w.gitDirTouched(dfd):
			w.quarantine(dfd, p, ".git", "a repository whose config, commondir or hooks changed during the session")
		case has[".git"] == unix.S_IFDIR:
			w.includeTargets(dfd, p)
		}
	}
	// A git directory for Git: a HEAD, and objects/ and refs/ beside it
	// or in the common dir its commondir file names (the config is the
	// common dir's): HEAD and commondir alone make one, whatever folder
	// commondir names (TestRedTeamCommondirBareLayoutEscapesWalk).
	_, common := has["commondir"]
	if ((has["objects"] == unix.S_IFDIR && has["refs"] == unix.S_IFDIR) || common) && has["HEAD"] != 0 && !w.skip[p] {
		if w.bornDuring(dfd, "HEAD") || w.changedDuring(dfd, "config") || w.changedDuring(dfd, "hooks") || w.changedDuring(dfd, "commondir") {
			w.quarantine(dfd, p, "HEAD", "a bare repository layout made or reconfigured during the session")
		}
		// Not the end of the walk here: objects/, refs/ and HEAD are
		// names the agent can make in any directory, and the persistence
		// names beside them and everything below them would go unjudged
		// (TestRedteam5BareLayoutBlindsWalk).
	}
	for _, n := range names {
		// A pinned directory (.claude, held for the settings.json in it)
		// is walked: only its protected names were read-only, and the
		// family names absent at the start have no placeholder there.
		if has[n] != unix.S_IFDIR || n == ".git" || w.held[filepath.Join(p, n)] {
			continue
		}
		cfd, err := w.openOnFS(dfd, n)
		if errors.Is(err, errOtherFS) {
			continue
		}
		if err != nil {
			if err := w.unreadable(dfd, p, n, err); err != nil {
				return err
			}
			continue
		}
		if err := w.dir(cfd, filepath.Join(p, n), depth+1); err != nil {
			// A bound stops the walk, reported; the names of the
			// directories on the way there, listed already, are still
			// judged: a bound the agent reaches below sub does not
			// shield sub/.envrc (TestRedteam5WalkBoundShield).
			w.persistNames(dfd, p, names, depth)
			return err
		}
	}
	return w.persistNames(dfd, p, names, depth)
}

// unreadable judges the directory n in dfd (path p) the walk could not
// open (the caller walks as an unprivileged user): a path through a
// directory that is searchable but not readable (mode 0111) still
// resolves, so the user's tools reach by name what the walk cannot list
// (TestRedteam5UnreadableDir). Changed during the session (made, or its
// mode set, or an entry added), it is moved aside whole; otherwise the
// root is reported as not checked below it.
func (w *nestedWalk) unreadable(dfd int, p, n string, err error) error {
	if !errors.Is(err, unix.EACCES) || heldPlaceholder(dfd, n) {
		return nil // a concurrent session's placeholder (mode 0000): moving it would free the name there
	}
	if w.changedDuring(dfd, n) {
		w.quarantine(dfd, p, n, "a directory made or changed during the session that this user cannot list: what it holds cannot be checked")
		return nil
	}
	emit(w.spec, "persistence", map[string]any{"path": filepath.Join(p, n), "error": "cannot list it (" + err.Error() + "): what is below was not checked"})
	return nil
}

// persistNames moves aside the entries of the directory open at dfd (path
// p) that match a persistence family (profiles.ProjectFamilies; .git is
// judged by dir above) and that the session made or changed, and reports
// the instruction files (profiles.InstructionFiles) it made or changed. The
// plan holds the existing family names read-only at the top of each
// writable root (held); an absent one has no placeholder there, and
// anywhere below — a monorepo's sub/.claude/settings.json, sub/.envrc,
// sub/lefthook-local.yml — no mount holds any: the user's next claude, cd
// (direnv), commit (lefthook) or package manager command in that directory
// would run them (TestRedteamNestedPersistPlant, TestPersistenceFamilies).
// It runs after dir's walk of the children (a .git planted inside one is
// judged first). The walk is post-order per name: see persistEntry.
func (w *nestedWalk) persistNames(dfd int, p string, names []string, depth int) error {
	for _, n := range names {
		if n == "." || n == ".." || n == ".git" || strings.Contains(n, quarantineMark) {
			// A name fedmem moved aside (or one the agent made at it,
			// TestRedteam5QuarantineNameTaken) matches .envrc.* but is read by no tool.
			continue
		}
		for _, pat := range w.fams.First(n) {
			if err := w.persistMatch(dfd, p, n, pat, 0, depth); err != nil {
				return err
			}
		}
		if w.instr == nil {
			continue
		}
		for _, pat := range w.instr.First(n) {
			if err := w.instrMatch(dfd, p, n, pat, 0, depth); err != nil {
				return err
			}
		}
	}
	return nil
}

// persistMatch judges name in dfd (path dir), which matches segment i of
// pat: the last segment — the entry itself (persistEntry); an earlier one —
// the names in it that match the next segment, the directory being the
// user's own. A non-directory where the pattern goes on (a link
// .claude -> a directory of the agent's: tools follow it, the walk does
// not; a .jj/repo pointer file) is judged as the entry itself
// (TestRedteam5ClaudeSymlink). A name the plan held read-only is skipped.
func (w *nestedWalk) persistMatch(dfd int, dir, name string, pat *mounts.Pattern, i, depth int) error {
	full := filepath.Join(dir, name)
	if w.held[full] {
		return nil
	}
	if depth > nestedMaxDepth {
		return fmt.Errorf("%w: deeper than %d levels at %s", errNestedBound, nestedMaxDepth, dir)
	}
	var st unix.Stat_t
	if unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return nil // gone: moved aside by an earlier pattern
	}
	if i == pat.Len()-1 || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return w.persistEntry(dfd, dir, name, depth, pat)
	}
	cfd, err := w.openOnFS(dfd, name)
	if err != nil {
		return nil
	}
	defer unix.Close(cfd)
	names, err := readNames(cfd)
	if err != nil {
		return nil
	}
	for _, n := range names {
		if n == "." || n == ".." || !pat.MatchSeg(i+1, n) {
			continue
		}
		if err := w.persistMatch(cfd, full, n, pat, i+1, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// instrMatch is persistMatch for an instruction file: what the session made
// or changed is reported ("instructions" event), never moved — an agent
// asked to keep CLAUDE.md up to date does its job.
func (w *nestedWalk) instrMatch(dfd int, dir, name string, pat *mounts.Pattern, i, depth int) error {
	if depth > nestedMaxDepth {
		return fmt.Errorf("%w: deeper than %d levels at %s", errNestedBound, nestedMaxDepth, dir)
	}
	full := filepath.Join(dir, name)
	var st unix.Stat_t
	if unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return nil
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if !isDir {
		if i == pat.Len()-1 && w.changedDuring(dfd, name) {
			emit(w.spec, "instructions", map[string]any{"path": full, "why": pat.Why()})
		}
		return nil
	}
	cfd, err := w.openOnFS(dfd, name)
	if err != nil {
		return nil
	}
	defer unix.Close(cfd)
	names, err := readNames(cfd)
	if err != nil {
		return nil
	}
	for _, n := range names {
		if n == "." || n == ".." {
			continue
		}
		if w.entries++; w.entries > nestedMaxEntries {
			return fmt.Errorf("%w: more than %d entries", errNestedBound, nestedMaxEntries)
		}
		next := i + 1
		if i == pat.Len()-1 {
			next = i // inside a matched directory: every file in it
		} else if !pat.MatchSeg(i+1, n) {
			continue
		}
		if err := w.instrMatch(cfd, full, n, pat, next, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// persistEntry judges name in dfd (path dir), a persistence name or an
// entry beneath one: changed during the session (ctime, which a creation,
// write, chmod, rename or link sets and no unprivileged process can set
// back) — it is moved aside whole, a directory with everything in it (a
// directory's ctime also moves when an entry is added, removed or renamed
// in it); unchanged — a directory is searched, since a file written in
// place changes its own ctime only. An empty mode-0000 placeholder a
// concurrent session may still hold is passed over (heldPlaceholder).
func (w *nestedWalk) persistEntry(dfd int, dir, name string, depth int, pat *mounts.Pattern) error {
	if depth > nestedMaxDepth {
		return fmt.Errorf("%w: deeper than %d levels at %s", errNestedBound, nestedMaxDepth, dir)
	}
	if heldPlaceholder(dfd, name) {
		return nil
	}
	if w.changedDuring(dfd, name) {
		w.quarantine(dfd, dir, name, "made or changed during the session, where no mount holds it — "+pat.Why())
		return nil
	}
	cfd, err := w.openOnFS(dfd, name)
	if err != nil {
		return nil // not a directory, another filesystem (or unreadable: git and editors as the user cannot read it either)
	}
	defer unix.Close(cfd)
	names, err := readNames(cfd)
	if err != nil {
		return nil
	}
	for _, n := range names {
		if w.entries++; w.entries > nestedMaxEntries {
			return fmt.Errorf("%w: more than %d entries", errNestedBound, nestedMaxEntries)
		}
		if err := w.persistEntry(cfd, filepath.Join(dir, name), n, depth+1, pat); err != nil {
			return err
		}
	}
	return nil
}

// heldPlaceholder reports whether name in dfd is a placeholder mount point
// (mode 0000, and empty: a regular file of size 0, or a directory holding
// nothing but such placeholders — a concurrent session that found another
// one's placeholder .git protected the names inside it) — one a session may
// still hold: renaming it would move that session's mounts along and free
// the name there. A mode-0000 directory with anything else in it is not
// one (a root caller's git reads it regardless of its mode); one this
// process cannot list, git as the same user cannot read either.
func heldPlaceholder(dfd int, name string) bool {
	return heldPlaceholderDepth(dfd, name, 0)
}

func heldPlaceholderDepth(dfd int, name string, depth int) bool {
	if depth > 8 {
		return false
	}
	file, dir := placeholderShape(dfd, name)
	if !dir {
		return file
	}
	fd, err := openSubdir(dfd, name)
	if err != nil {
		return errors.Is(err, unix.EACCES)
	}
	defer unix.Close(fd)
	names, err := readNames(fd)
	if err != nil {
		return false
	}
	for _, n := range names {
		if !heldPlaceholderDepth(fd, n, depth+1) {
			return false
		}
	}
	return true
}

// openSubdir opens the directory name in dfd for reading, never following
// a link (a symbolic link at name fails with ELOOP, a file with ENOTDIR).
func openSubdir(dfd int, name string) (int, error) {
	return unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// errOtherFS: a directory on another filesystem than the walk's root.
var errOtherFS = errors.New("another filesystem")

// openOnFS is openSubdir for the walk: a directory on another filesystem
// than its root (a mount) is not opened (errOtherFS).
func (w *nestedWalk) openOnFS(dfd int, name string) (int, error) {
	fd, err := openSubdir(dfd, name)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Dev != w.dev {
		unix.Close(fd)
		return -1, errOtherFS
	}
	return fd, nil
}

func readNames(fd int) ([]string, error) {
	var out []string
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return out, err
		}
		if n <= 0 {
			return out, nil
		}
		_, _, out = unix.ParseDirent(buf[:n], -1, out)
	}
}
