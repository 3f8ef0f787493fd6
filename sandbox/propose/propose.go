package propose

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/fedmem/fedmem/mounts/families"
)

// Proposal is what became of a proposed workdir's writes (profile
// `workdir: propose`): the report's "proposal" and the summary fedmem-run
// prints after the session. The agent's writes landed in an overlay;
// nothing reached the real tree. For a Git workdir they are a commit on the
// workdir's HEAD in the branch Branch; outside Git, the patch Patch. Apply
// is the one command that applies them.
type Proposal struct {
	// Kind is "branch", "patch", "none" (the agent changed nothing) or
	// "kept" (the branch or patch could not be written: Error says why,
	// and the agent's files are in Dir/upper).
	Kind string `json:"kind"`
	// Dir is the proposal's folder: the patch, the summary, the files
	// written under .git (never applied) and, on failure, the upper layer.
	Dir     string `json:"dir,omitempty"`
	Branch  string `json:"branch,omitempty"`
	Commit  string `json:"commit,omitempty"`
	Base    string `json:"base,omitempty"` // the HEAD the commit is on ("" for an unborn branch)
	Patch   string `json:"patch,omitempty"`
	Apply   string `json:"apply,omitempty"`
	Changed int    `json:"changed"`
	Deleted int    `json:"deleted"`
	// Bytes is the size of the files written (after the session).
	Bytes int64          `json:"bytes"`
	Files []ProposedFile `json:"files"`
	// Flagged are the proposed paths of the persistence families
	// (families.ProjectFamilies, the files the next agent reads as
	// instructions, anything under a .git): look at them before applying.
	Flagged []ProposedFile `json:"flagged,omitempty"`
	// Skipped are entries a branch or patch cannot hold (FIFOs, sockets,
	// devices, files under .git), each with why.
	Skipped []ProposedFile `json:"skipped,omitempty"`
	// Full: the upper layer was full (limits.workdir_bytes): writes past it
	// failed with ENOSPC inside; the proposal holds what fit.
	Full bool `json:"full,omitempty"`
	// Ignored counts the paths written that the workdir's .gitignore
	// ignores and Git does not track (build outputs, dependencies): not
	// proposed.
	Ignored int `json:"ignored,omitempty"`
	// GitOther counts the other files written under a .git (the agent's
	// own git use: index, objects, refs): kept in Dir/git-files, never
	// applied, not flagged one by one.
	GitOther int `json:"git_other,omitempty"`
	// Uncommitted are the changed paths in which the user's work tree
	// differed from HEAD at the start: the branch is on HEAD, so its
	// version of each holds those edits too.
	Uncommitted []string `json:"uncommitted,omitempty"`
	Error       string   `json:"error,omitempty"`
}

// ProposedFile is one path of a proposal, relative to the workdir.
type ProposedFile struct {
	Path string `json:"path"`
	// Change is "added", "modified", "deleted", "mode" (only the
	// executable bit changed), "symlink" or, for Skipped, the entry's type.
	Change string `json:"change"`
	Mode   string `json:"mode,omitempty"` // 100644, 100755 or 120000
	Bytes  int64  `json:"bytes,omitempty"`
	Why    string `json:"why,omitempty"`
}

// change is one entry of the change set, read from the upper layer.
type change struct {
	rel    string // slash-separated, relative to the workdir
	del    bool   // a whiteout, or a lower entry an opaque directory hides
	mode   string // git mode of a write
	size   int64
	target string // a symlink's target
}

// upperFd is the descriptor number git and cp see the upper tmpfs at
// (exec.Cmd.ExtraFiles[0]).
const upperFd = 3

// upperPath is where a child process given the tmpfs as ExtraFiles[0]
// finds rel of the upper layer.
func upperPath(rel string) string {
	return fmt.Sprintf("/proc/self/fd/%d/upper/%s", upperFd, rel)
}

// proposalDir is the folder of session id's proposal: under
// $XDG_STATE_HOME/fedmem/proposals (default ~/.local/state).
func proposalDir(environ []string, home, id string) string {
	state := ""
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "XDG_STATE_HOME="); ok && filepath.IsAbs(v) {
			state = v
		}
	}
	if state == "" {
		state = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(state, "fedmem", "proposals", id)
}

// readChanges walks the upper layer (through the tmpfs root fd) and returns
// the change set against the real workdir lower: whiteouts are deletions,
// an opaque directory deletes every lower entry it does not hold, a file
// or link identical to the lower one (copied up by a chmod back, a touch,
// an open for writing) is no change.
func readChanges(upper *os.File, lower string) (changes []change, skipped []ProposedFile, err error) {
	root := fmt.Sprintf("/proc/self/fd/%d/upper", upper.Fd())
	var walk func(rel string) error
	walk = func(rel string) error {
		dir := filepath.Join(root, filepath.FromSlash(rel))
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		held := map[string]bool{}
		for _, e := range ents {
			held[e.Name()] = true
			r := path.Join(rel, e.Name())
			fi, err := os.Lstat(filepath.Join(dir, e.Name()))
			if err != nil {
				return err
			}
			lpath := filepath.Join(lower, filepath.FromSlash(r))
			switch m := fi.Mode(); {
			case isWhiteout(fi):
				changes = append(changes, lowerDeletions(lower, r)...)
			case m.IsDir():
				if opaque(filepath.Join(dir, e.Name())) {
					if lfi, err := os.Lstat(lpath); err == nil && !lfi.IsDir() {
						changes = append(changes, change{rel: r, del: true})
					}
				}
				if err := walk(r); err != nil {
					return err
				}
			case m.IsRegular():
				c := change{rel: r, mode: "100644", size: fi.Size()}
				if m&0o111 != 0 {
					c.mode = "100755"
				}
				if sameFile(filepath.Join(dir, e.Name()), lpath, fi) {
					continue
				}
				changes = append(changes, c)
			case m&fs.ModeSymlink != 0:
				t, err := os.Readlink(filepath.Join(dir, e.Name()))
				if err != nil {
					return err
				}
				if lt, err := os.Readlink(lpath); err == nil && lt == t {
					continue
				}
				changes = append(changes, change{rel: r, mode: "120000", target: t, size: int64(len(t))})
			default:
				skipped = append(skipped, ProposedFile{Path: r, Change: fileType(m), Why: "a branch or patch holds files and links only"})
			}
		}
		if rel != "" && opaque(dir) {
			// Lower entries an opaque directory hides are deleted.
			lents, _ := os.ReadDir(filepath.Join(lower, filepath.FromSlash(rel)))
			for _, le := range lents {
				if !held[le.Name()] {
					changes = append(changes, lowerDeletions(lower, path.Join(rel, le.Name()))...)
				}
			}
		}
		return nil
	}
	if err := walk(""); err != nil {
		return nil, nil, err
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].rel < changes[j].rel })
	return changes, skipped, nil
}

// lowerDeletions are the deletions of rel in the lower tree: the file, or
// every file and link under the directory.
func lowerDeletions(lower, rel string) []change {
	p := filepath.Join(lower, filepath.FromSlash(rel))
	fi, err := os.Lstat(p)
	if err != nil {
		return nil
	}
	if !fi.IsDir() {
		return []change{{rel: rel, del: true}}
	}
	var out []change
	_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		r, _ := filepath.Rel(lower, q)
		out = append(out, change{rel: filepath.ToSlash(r), del: true})
		return nil
	})
	return out
}

// sameFile reports whether the upper file u is the lower file l: same
// executable bit, same bytes.
func sameFile(u, l string, ufi os.FileInfo) bool {
	lfi, err := os.Lstat(l)
	if err != nil || !lfi.Mode().IsRegular() || lfi.Size() != ufi.Size() || (lfi.Mode()&0o111 != 0) != (ufi.Mode()&0o111 != 0) {
		return false
	}
	a, err := os.Open(u)
	if err != nil {
		return false
	}
	defer a.Close()
	b, err := os.Open(l)
	if err != nil {
		return false
	}
	defer b.Close()
	ra, rb := bufio.NewReaderSize(a, 64<<10), bufio.NewReaderSize(b, 64<<10)
	x, y := make([]byte, 32<<10), make([]byte, 32<<10)
	for {
		n, errA := io.ReadFull(ra, x)
		m, errB := io.ReadFull(rb, y)
		if n != m || !bytes.Equal(x[:n], y[:m]) {
			return false
		}
		if errA != nil || errB != nil {
			return errA == errB || (errors.Is(errA, io.ErrUnexpectedEOF) && errors.Is(errB, io.ErrUnexpectedEOF)) || (errors.Is(errA, io.EOF) && errors.Is(errB, io.EOF))
		}
	}
}

func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special"
}

// inGit reports whether rel lies in a .git (any depth): Git refuses such a
// path in a tree, and the proposal never applies it.
func inGit(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if strings.EqualFold(part, ".git") {
			return true
		}
	}
	return false
}

// Compiled at their first use (a proposal's walk), not at package init:
// every fedmem-run process links this package, and most sessions propose
// nothing.
var (
	proposeFamilies     = sync.OnceValue(func() *families.PatternSet { return families.ProjectPatterns(false) })
	proposeInstructions = sync.OnceValue(families.InstructionPatterns)
)

// persistenceWhy says why rel is a persistence-class path (a
// families.ProjectFamilies pattern or an instruction file at any depth,
// the path itself or a directory above it), or "".
func persistenceWhy(rel string) string {
	if inGit(rel) {
		return "git internals (hooks, config run code on the next git command): never applied; the file is kept in the proposal's folder"
	}
	parts := strings.Split(rel, "/")
	for i := range parts {
		for j := i + 1; j <= len(parts); j++ {
			sub := strings.Join(parts[i:j], "/")
			if p := proposeFamilies().Match(sub); p != nil {
				return p.Why()
			}
			if p := proposeInstructions().Match(sub); p != nil {
				return "read by the next agent as instructions (" + p.Family.Name + ")"
			}
		}
	}
	return ""
}

// callerPathDirs are the folders of the caller's PATH that lie in the
// workdir, relative to it ("." for the workdir itself): direnv's PATH_add
// bin, an `export PATH=$PWD/bin:$PATH`. A program the agent leaves there
// runs as the user's next command of its name once the proposal is
// applied (test/escape TestProposeFlagsProgramOnPath).
func callerPathDirs(environ []string, workdir string) map[string]bool {
	dirs := map[string]bool{}
	for _, kv := range environ {
		v, ok := strings.CutPrefix(kv, "PATH=")
		if !ok {
			continue
		}
		for _, d := range filepath.SplitList(v) {
			if !filepath.IsAbs(d) {
				continue
			}
			if rel, err := filepath.Rel(workdir, filepath.Clean(d)); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				dirs[filepath.ToSlash(rel)] = true
			}
		}
	}
	return dirs
}

// onCallerPath is the folder (relative to the workdir) of a change that
// puts an executable file or a link straight into a folder of the
// caller's PATH, or "".
func onCallerPath(c change, dirs map[string]bool) string {
	if c.del || len(dirs) == 0 || (c.mode != "100755" && c.mode != "120000") {
		return ""
	}
	dir := path.Dir(c.rel)
	if dirs[dir] {
		return dir
	}
	return ""
}

// gitRunsCode reports whether rel, under a .git, is one of the names that
// make Git run code (families.GitPersist, families.AfterSession: hooks,
// config, info, worktrees, modules, commondir) or lies under one.
func gitRunsCode(rel string) bool {
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		if !strings.EqualFold(part, ".git") {
			continue
		}
		sub := ".git/" + strings.Join(parts[i+1:], "/")
		for _, p := range append(append([]families.Persist{}, families.GitPersist...), families.AfterSession...) {
			if strings.EqualFold(sub, p.Path) || strings.HasPrefix(strings.ToLower(sub), strings.ToLower(p.Path)+"/") {
				return true
			}
		}
	}
	return false
}

// gitRun runs git with the proposal's environment; the tmpfs is its fd 3.
type gitRun struct {
	env   []string
	upper *os.File
	dir   string
}

func (g *gitRun) run(stdin []byte, args ...string) (string, error) {
	// Nothing of the repository's configuration that runs a command may
	// run: plumbing runs no hook; fsmonitor is off and hash-object reads
	// files with --no-filters.
	full := append([]string{"-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "safe.directory=*"}, args...)
	cmd := exec.Command("git", full...)
	cmd.Env = g.env
	cmd.Dir = g.dir
	if g.upper != nil {
		cmd.ExtraFiles = []*os.File{g.upper}
	}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// gitEnv is the caller's environment without Git's own variables, plus
// the temporary index and the commit's identity. Its PATH is fedmem-run's
// own, the one git was found on (launch's useHostPATH left out the folders
// the agent writes): a program git runs by name — a filter driver of the
// user's config, git-lfs's — comes from none of them either
// (TestRedTeamProposeGitChildrenFromAgentPath).
func gitEnv(environ []string, extra ...string) []string {
	var out []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "PATH=") {
			out = append(out, kv)
		}
	}
	if p, ok := os.LookupEnv("PATH"); ok {
		out = append(out, "PATH="+p)
	}
	out = append(out, "LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	return append(out, extra...)
}

// Make turns the upper layer into the proposal for session id of
// the workdir: a branch fedmem/propose/ID on the workdir's HEAD when it is
// in a Git work tree, else a patch in the proposal's folder. It never
// touches the workdir, its index or its work tree. On failure the upper
// layer is copied to Dir/upper and Error says where.
func Make(upper *os.File, workdir, id string, environ []string, home string, full bool) *Proposal {
	pr := &Proposal{Dir: proposalDir(environ, home, id), Full: full, Files: []ProposedFile{}}
	fail := func(err error) *Proposal {
		pr.Kind = "kept"
		dst := filepath.Join(pr.Dir, "upper")
		if kerr := keepUpper(upper, pr.Dir, dst); kerr != nil {
			pr.Error = fmt.Sprintf("%v; keeping the agent's files failed too: %v (they are lost)", err, kerr)
			return pr
		}
		pr.Error = fmt.Sprintf("%v; the agent's files are kept as they were written in %s (whiteouts are deletions)", err, dst)
		return pr
	}
	changes, skipped, err := readChanges(upper, workdir)
	if err != nil {
		return fail(fmt.Errorf("read the proposal: %w", err))
	}
	pathDirs := callerPathDirs(environ, workdir)
	pr.Skipped = skipped
	g := &gitRun{upper: upper, dir: workdir}
	g.env = gitEnv(environ)
	top, err := g.run(nil, "rev-parse", "--show-toplevel")
	isGit := err == nil && top != ""
	var ignored map[string]bool
	if isGit {
		// Build outputs and dependencies the user's .gitignore names
		// (node_modules, bin/) are not proposed: a branch is for changes
		// to review. Tracked files are never ignored.
		ignored = checkIgnored(g, changes)
	}
	var inTree, gitFiles []change
	kept := changes[:0:0]
	for _, c := range changes {
		if ignored[c.rel] {
			pr.Ignored++
			continue
		}
		kept = append(kept, c)
		if inGit(c.rel) {
			gitFiles = append(gitFiles, c)
			continue
		}
		inTree = append(inTree, c)
	}
	changes = kept
	for _, c := range changes {
		f := ProposedFile{Path: c.rel, Mode: c.mode, Bytes: c.size}
		// The counts are of what the branch or patch holds: nothing
		// under a .git.
		count := 0
		if !inGit(c.rel) {
			count = 1
		}
		switch {
		case c.del:
			f.Change = "deleted"
			pr.Deleted += count
		case c.mode == "120000":
			f.Change = "symlink"
			pr.Changed += count
		default:
			f.Change = "modified"
			if _, err := os.Lstat(filepath.Join(workdir, filepath.FromSlash(c.rel))); errors.Is(err, fs.ErrNotExist) {
				f.Change = "added"
			} else if sameBytesOtherMode(upper, workdir, c.rel) {
				f.Change = "mode"
			}
			pr.Changed += count
			pr.Bytes += int64(count) * c.size
		}
		if inGit(c.rel) && !gitRunsCode(c.rel) {
			// The agent's own git use inside (index, objects, refs):
			// counted, kept, never applied; not one flag per object.
			pr.GitOther++
		} else if why := persistenceWhy(c.rel); why != "" {
			g := f
			g.Why = why
			pr.Flagged = append(pr.Flagged, g)
		} else if dir := onCallerPath(c, pathDirs); dir != "" {
			g := f
			g.Why = "a program in " + dir + ", a folder on your PATH: once applied, your next command of that name runs it"
			pr.Flagged = append(pr.Flagged, g)
		}
		if inGit(c.rel) {
			s := f
			s.Why = "under .git: never applied (kept in " + filepath.Join(pr.Dir, "git-files") + ")"
			pr.Skipped = append(pr.Skipped, s)
			continue
		}
		pr.Files = append(pr.Files, f)
	}
	if len(changes) == 0 && len(skipped) == 0 {
		if pr.Ignored > 0 {
			pr.Kind, pr.Dir = "none", ""
			return pr
		}
		pr.Kind, pr.Dir = "none", ""
		return pr
	}
	if err := os.MkdirAll(pr.Dir, 0o700); err != nil {
		pr.Kind, pr.Error = "kept", fmt.Sprintf("create %s: %v; the agent's files are lost", pr.Dir, err)
		return pr
	}
	if len(gitFiles) > 0 {
		if err := keepGitFiles(upper, gitFiles, filepath.Join(pr.Dir, "git-files")); err != nil {
			return fail(fmt.Errorf("keep the files written under .git: %w", err))
		}
	}
	if len(inTree) == 0 {
		pr.Kind = "none"
		return pr
	}
	if isGit {
		err = branchProposal(pr, g, top, id, inTree, environ)
	} else {
		err = patchProposal(pr, g, workdir, inTree, environ)
	}
	if err != nil {
		return fail(err)
	}
	return pr
}

// sameBytesOtherMode reports whether rel differs from the lower file only
// in its executable bit.
func sameBytesOtherMode(upper *os.File, lower, rel string) bool {
	u := fmt.Sprintf("/proc/self/fd/%d/upper/%s", upper.Fd(), rel)
	a, err1 := os.ReadFile(u)
	b, err2 := os.ReadFile(filepath.Join(lower, filepath.FromSlash(rel)))
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}

// checkIgnored returns the written paths of changes that the repository's
// ignore rules name and Git does not track (git check-ignore).
func checkIgnored(g *gitRun, changes []change) map[string]bool {
	var in bytes.Buffer
	for _, c := range changes {
		// Deletions too: removing an ignored, untracked file (rm -rf
		// node_modules) is no change to propose.
		in.WriteString(c.rel + "\x00")
	}
	if in.Len() == 0 {
		return nil
	}
	cmd := exec.Command("git", "-c", "core.fsmonitor=false", "-c", "safe.directory=*", "check-ignore", "-z", "--stdin")
	cmd.Env, cmd.Dir, cmd.Stdin = g.env, g.dir, &in
	out, _ := cmd.Output() // exit 1: nothing ignored
	ign := map[string]bool{}
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" {
			ign[p] = true
		}
	}
	return ign
}

// zeroOID is Git's "no object" of the repository's hash.
func zeroOID(g *gitRun) string {
	if f, err := g.run(nil, "rev-parse", "--show-object-format"); err == nil && f == "sha256" {
		return strings.Repeat("0", 64)
	}
	return strings.Repeat("0", 40)
}

// indexInfo hashes the changes' contents into the repository g names and
// returns `git update-index --index-info` lines (paths prefixed).
func indexInfo(g *gitRun, changes []change, prefix, zero string, deleted func(rel string) []string) ([]byte, error) {
	var paths bytes.Buffer
	var files []change
	for _, c := range changes {
		if !c.del && c.mode != "120000" {
			files = append(files, c)
			paths.WriteString(upperPath(c.rel) + "\n")
		}
	}
	oids := map[string]string{}
	if len(files) > 0 {
		out, err := g.run(paths.Bytes(), "hash-object", "-w", "--no-filters", "--stdin-paths")
		if err != nil {
			return nil, err
		}
		lines := strings.Split(out, "\n")
		if len(lines) != len(files) {
			return nil, fmt.Errorf("git hash-object: %d object ids for %d files", len(lines), len(files))
		}
		for i, c := range files {
			oids[c.rel] = lines[i]
		}
	}
	var info bytes.Buffer
	for _, c := range changes {
		switch {
		case c.del:
			for _, p := range deleted(prefix + c.rel) {
				fmt.Fprintf(&info, "0 %s\t%s\n", zero, p)
			}
		case c.mode == "120000":
			oid, err := g.run([]byte(c.target), "hash-object", "-w", "--stdin")
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(&info, "120000 %s\t%s%s\n", oid, prefix, c.rel)
		default:
			fmt.Fprintf(&info, "%s %s\t%s%s\n", c.mode, oids[c.rel], prefix, c.rel)
		}
	}
	return info.Bytes(), nil
}

// branchProposal writes the change set as one commit on HEAD in the branch
// fedmem/propose/ID, through a temporary index (GIT_INDEX_FILE): the
// user's index and work tree are never touched.
func branchProposal(pr *Proposal, g *gitRun, top, id string, changes []change, environ []string) error {
	prefix, err := g.run(nil, "rev-parse", "--show-prefix")
	if err != nil {
		return err
	}
	index := filepath.Join(pr.Dir, "index")
	defer os.Remove(index)
	g.env = gitEnv(environ, "GIT_INDEX_FILE="+index,
		"GIT_AUTHOR_NAME=fedmem agent", "GIT_AUTHOR_EMAIL=fedmem-agent@localhost",
		"GIT_COMMITTER_NAME=fedmem-run", "GIT_COMMITTER_EMAIL=fedmem-run@localhost")
	g.dir = top
	base, _ := g.run(nil, "rev-parse", "--verify", "-q", "HEAD^{commit}")
	if base != "" {
		if _, err := g.run(nil, "read-tree", base); err != nil {
			return err
		}
	} else if _, err := g.run(nil, "read-tree", "--empty"); err != nil {
		return err
	}
	zero := zeroOID(g)
	// A deletion names one file of the real tree (lowerDeletions
	// expands a directory): mode 0 drops it from the index, a no-op for
	// an untracked one.
	deleted := func(p string) []string { return []string{p} }
	info, err := indexInfo(g, changes, prefix, zero, deleted)
	if err != nil {
		return err
	}
	if _, err := g.run(info, "update-index", "--replace", "--index-info"); err != nil {
		return err
	}
	tree, err := g.run(nil, "write-tree")
	if err != nil {
		return err
	}
	msg := proposalMessage(pr, id)
	args := []string{"commit-tree", "--no-gpg-sign", tree, "-m", msg}
	if base != "" {
		args = append(args, "-p", base)
	}
	commit, err := g.run(nil, args...)
	if err != nil {
		return err
	}
	branch := "fedmem/propose/" + id
	if _, err := g.run(nil, "update-ref", "-m", "fedmem-run: proposal of session "+id, "refs/heads/"+branch, commit, zero); err != nil {
		return err
	}
	pr.Kind, pr.Branch, pr.Commit, pr.Base = "branch", branch, commit, base
	pr.Uncommitted = uncommitted(g, base, prefix, pr.Dir, changes)
	pr.Apply = fmt.Sprintf("git -C %s merge %s", shellQuote(top), branch)
	// The same change as a patch beside it, to read or to apply elsewhere.
	from := base
	if from == "" {
		from = emptyTree(g)
	}
	if patch, err := g.run(nil, "diff-tree", "-p", "--binary", "--no-color", "--no-ext-diff", from, commit); err == nil {
		p := filepath.Join(pr.Dir, "proposal.patch")
		if os.WriteFile(p, []byte(patch+"\n"), 0o600) == nil {
			pr.Patch = p
		}
	}
	return nil
}

// uncommitted returns the changed paths (prefixed) in which the user's
// work tree differed from HEAD when the agent read it: the branch's
// version of each holds those edits too. It works on a copy of the user's
// index (refreshed there, then diff-index): the user's own index is never
// written.
func uncommitted(g *gitRun, base, prefix, tmp string, changes []change) []string {
	if base == "" || len(changes) == 0 || len(changes) > 1000 {
		return nil
	}
	// g's environment names the proposal's temporary index: without it,
	// --git-path index is the user's.
	g2 := *g
	g2.env = nil
	for _, kv := range g.env {
		if !strings.HasPrefix(kv, "GIT_INDEX_FILE=") {
			g2.env = append(g2.env, kv)
		}
	}
	real, err := g2.run(nil, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return nil
	}
	b, err := os.ReadFile(real)
	if err != nil {
		return nil
	}
	copyIndex := filepath.Join(tmp, "index.user")
	defer os.Remove(copyIndex)
	if os.WriteFile(copyIndex, b, 0o600) != nil {
		return nil
	}
	g2.env = append(g2.env, "GIT_INDEX_FILE="+copyIndex)
	_, _ = g2.run(nil, "update-index", "-q", "--refresh")
	args := []string{"diff-index", "--name-only", "-z", "--no-renames", base, "--"}
	for _, c := range changes {
		args = append(args, ":(literal)"+prefix+c.rel)
	}
	out, err := g2.run(nil, args...)
	if err != nil {
		return nil
	}
	var ps []string
	for _, p := range strings.Split(out, "\x00") {
		if p != "" {
			ps = append(ps, p)
		}
	}
	return ps
}

func emptyTree(g *gitRun) string {
	t, _ := g.run([]byte{}, "hash-object", "-t", "tree", "--stdin")
	return t
}

// patchProposal writes the change set of a workdir outside Git as a Git
// patch (git apply, or patch -p1 for text): two trees in a private
// repository in the proposal's folder, the lower versions of the changed
// paths and the upper ones, diffed.
func patchProposal(pr *Proposal, g *gitRun, workdir string, changes []change, environ []string) error {
	repo := filepath.Join(pr.Dir, "objects.git")
	defer os.RemoveAll(repo)
	if out, err := exec.Command("git", "init", "-q", "--bare", repo).CombinedOutput(); err != nil {
		return fmt.Errorf("git init %s: %v: %s", repo, err, out)
	}
	index := filepath.Join(pr.Dir, "index")
	defer os.Remove(index)
	g.env = gitEnv(environ, "GIT_DIR="+repo, "GIT_INDEX_FILE="+index, "GIT_WORK_TREE="+pr.Dir)
	g.dir = pr.Dir
	zero := zeroOID(g)
	// Before: the lower versions of every changed path that exists.
	var before []change
	for _, c := range changes {
		p := filepath.Join(workdir, filepath.FromSlash(c.rel))
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		b := change{rel: c.rel, mode: "100644"}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			b.mode, b.target = "120000", t
		case fi.Mode().IsRegular():
			if fi.Mode()&0o111 != 0 {
				b.mode = "100755"
			}
		default:
			continue
		}
		before = append(before, b)
	}
	var info bytes.Buffer
	for _, b := range before {
		var oid string
		var err error
		if b.mode == "120000" {
			oid, err = g.run([]byte(b.target), "hash-object", "-w", "--stdin")
		} else {
			oid, err = g.run(nil, "hash-object", "-w", "--no-filters", "--", filepath.Join(workdir, filepath.FromSlash(b.rel)))
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(&info, "%s %s\t%s\n", b.mode, oid, b.rel)
	}
	if _, err := g.run(info.Bytes(), "update-index", "--index-info"); err != nil {
		return err
	}
	treeA, err := g.run(nil, "write-tree")
	if err != nil {
		return err
	}
	after, err := indexInfo(g, changes, "", zero, func(p string) []string { return []string{p} })
	if err != nil {
		return err
	}
	if _, err := g.run(after, "update-index", "--replace", "--index-info"); err != nil {
		return err
	}
	treeB, err := g.run(nil, "write-tree")
	if err != nil {
		return err
	}
	patch, err := g.run(nil, "diff-tree", "-p", "--binary", "--no-color", "--no-ext-diff", treeA, treeB)
	if err != nil {
		return err
	}
	p := filepath.Join(pr.Dir, "proposal.patch")
	if err := os.WriteFile(p, []byte(patch+"\n"), 0o600); err != nil {
		return err
	}
	pr.Kind, pr.Patch = "patch", p
	pr.Apply = fmt.Sprintf("git -C %s apply %s", shellQuote(workdir), shellQuote(p))
	return nil
}

// proposalMessage is the proposal commit's message.
func proposalMessage(pr *Proposal, id string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "fedmem proposal of session %s\n\n%d changed, %d deleted, %d bytes written by the agent.\n", id, pr.Changed, pr.Deleted, pr.Bytes)
	if len(pr.Flagged) > 0 {
		b.WriteString("\nPersistence-class paths (look before merging):\n")
		for _, f := range pr.Flagged {
			fmt.Fprintf(&b, "  %s (%s): %s\n", f.Path, f.Change, f.Why)
		}
	}
	return b.String()
}

// keepGitFiles copies the files the agent wrote under a .git to dst, as
// they are (never applied).
func keepGitFiles(upper *os.File, files []change, dst string) error {
	for _, c := range files {
		if c.del {
			continue
		}
		d := filepath.Join(dst, filepath.FromSlash(c.rel))
		if err := os.MkdirAll(filepath.Dir(d), 0o700); err != nil {
			return err
		}
		src := fmt.Sprintf("/proc/self/fd/%d/upper/%s", upper.Fd(), c.rel)
		if c.mode == "120000" {
			if err := os.Symlink(c.target, d); err != nil {
				return err
			}
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(d, b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// keepUpper copies the whole upper layer to dst (cp -a: links, modes and
// whiteouts as they are).
func keepUpper(upper *os.File, dir, dst string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	cmd := exec.Command("cp", "-a", "--", fmt.Sprintf("/proc/self/fd/%d/upper", upperFd), dst)
	cmd.ExtraFiles = []*os.File{upper}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cp -a: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// maxSummaryLines bounds the not-proposed lines of the summary.
const maxSummaryLines = 20

// showPath is p as it is when it is plain printable text, else quoted.
func showPath(p string) string {
	for _, r := range p {
		if !unicode.IsPrint(r) || r == '\\' || r == '"' {
			return strconv.Quote(p)
		}
	}
	return p
}

// Summary is the proposal's one paragraph for stderr after the session.
func (pr *Proposal) Summary() string {
	var b strings.Builder
	switch pr.Kind {
	case "none":
		b.WriteString("proposal: the agent changed nothing in the workdir")
		if len(pr.Skipped) > 0 {
			fmt.Fprintf(&b, " that a branch or patch can hold (%d entries kept aside in %s)", len(pr.Skipped), pr.Dir)
		}
	case "branch":
		fmt.Fprintf(&b, "proposal: %d changed, %d deleted, %d bytes, in branch %s (commit %.12s", pr.Changed, pr.Deleted, pr.Bytes, pr.Branch, pr.Commit)
		if pr.Base != "" {
			fmt.Fprintf(&b, " on %.12s", pr.Base)
		}
		b.WriteString("); nothing reached the workdir")
	case "patch":
		fmt.Fprintf(&b, "proposal: %d changed, %d deleted, %d bytes, as the patch %s; nothing reached the workdir", pr.Changed, pr.Deleted, pr.Bytes, pr.Patch)
	default:
		fmt.Fprintf(&b, "proposal NOT written: %s", pr.Error)
	}
	if pr.Full {
		b.WriteString("\n  the proposal was full (limits.workdir_bytes): writes past it failed with ENOSPC inside; it holds what fit")
	}
	// The flagged paths are said (up to 100; the report has them all); the
	// names are the agent's, so they are quoted where they are not plain
	// printable text (no escape sequence reaches the user's terminal).
	for i, f := range pr.Flagged {
		if i == 5*maxSummaryLines {
			fmt.Fprintf(&b, "\n  FLAGGED %d more: the report's proposal.flagged lists them all", len(pr.Flagged)-i)
			break
		}
		fmt.Fprintf(&b, "\n  FLAGGED %s (%s): %s", showPath(f.Path), f.Change, f.Why)
	}
	n := 0
	for _, f := range pr.Skipped {
		if inGit(f.Path) {
			continue
		}
		if n++; n > maxSummaryLines {
			fmt.Fprintf(&b, "\n  … more not proposed: the report's proposal.skipped lists them all")
			break
		}
		fmt.Fprintf(&b, "\n  not proposed %s (%s): %s", showPath(f.Path), f.Change, f.Why)
	}
	if len(pr.Uncommitted) > 0 {
		names := make([]string, 0, len(pr.Uncommitted))
		for i, p := range pr.Uncommitted {
			if i == maxSummaryLines {
				names = append(names, "…")
				break
			}
			names = append(names, showPath(p))
		}
		fmt.Fprintf(&b, "\n  the work tree had uncommitted edits in %s: the branch is on HEAD, so its versions of these include them", strings.Join(names, ", "))
	}
	if pr.GitOther > 0 {
		fmt.Fprintf(&b, "\n  %d other files written under .git (index, objects, refs): never applied, kept in %s", pr.GitOther, filepath.Join(pr.Dir, "git-files"))
	}
	if pr.Ignored > 0 {
		fmt.Fprintf(&b, "\n  %d paths the workdir's .gitignore ignores (build outputs, dependencies) are not proposed", pr.Ignored)
	}
	if pr.Apply != "" {
		fmt.Fprintf(&b, "\n  apply: %s", pr.Apply)
	}
	return b.String()
}
