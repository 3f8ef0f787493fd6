package repo

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/template"
	"time"

	"github.com/fedmem/fedmem/vault"
)

//go:embed templates/AGENT.md templates/RULES.md templates/policy.yaml templates/gitignore
var templates embed.FS

// Gate identity used for every commit fedmem makes. The address is under the
// reserved .invalid TLD so it never names a real mailbox.
const (
	GateName  = "fedmem-gate"
	GateEmail = "gate@fedmem.invalid"
	// Branch is the branch a new vault's HEAD points at.
	Branch = "main"
)

// Modes of the paths Init manages.
const (
	FileMode = 0o644
	DirMode  = 0o755
	// InboxModeShared applies to 90-inbox/ and 90-inbox/.sessions/ when no
	// agent group is given: anyone may create an entry, the sticky bit stops
	// anyone but its owner (and the gate, owner of the folder) from removing
	// or renaming it, like /tmp.
	InboxModeShared = os.ModeSticky | 0o777
	// InboxModeGroup applies when an agent group is given: only the gate and
	// members of the group enter; setgid keeps the group on new session
	// folders; sticky as above.
	InboxModeGroup = os.ModeSetgid | os.ModeSticky | 0o770
	// SessionsModeLauncher applies to 90-inbox/.sessions/ when a launcher
	// group is given: owned by the gate, group = the launcher group that
	// fedmem-run is installed setgid to, nothing for others. Only a process
	// holding that group (the launcher, before it drops it) can create a
	// record, and a record's owner cannot reach it afterwards to rewrite it
	// (see docs/gate.md, "Trust model").
	SessionsModeLauncher = os.ModeSetgid | os.ModeSticky | 0o770
)

// GitKeep is the placeholder file that makes Git track an otherwise empty folder.
const GitKeep = ".gitkeep"

// ErrNotEmpty is returned when Init is asked to create a vault in a directory
// that already holds something other than a vault.
var ErrNotEmpty = errors.New("directory is not empty and is not a fedmem vault")

// ErrForeignEntry is returned when a path Init would adopt (in the
// world-writable inbox) was created by someone other than the gate user.
var ErrForeignEntry = errors.New("entry not owned by the gate user")

// InitOptions tunes Init. The zero value makes the caller the gate user and
// the inbox shared by everyone (mode 01777).
type InitOptions struct {
	// Gate owns every path of the vault. Nil means the caller (real uid,
	// primary gid). Changing owner to someone else needs root (CAP_CHOWN).
	Gate *vault.Owner
	// AgentGroup, when set, is the group of 90-inbox/ (mode 03770): only its
	// members may create sessions. Nil means mode 01777.
	AgentGroup *vault.Group
	// LauncherGroup, when set, is the group of 90-inbox/.sessions/ (mode
	// 03770, gate-owned): the group fedmem-run is installed setgid to, so
	// that session records are provably the launcher's. Nil keeps the
	// sessions folder like the inbox (records are then proven only when
	// root wrote them).
	LauncherGroup *vault.Group
	// Reviewers go into a newly written policy.yaml. Empty means the gate
	// user's name (or uid).
	Reviewers []string
	// Now gives the commit time; nil means time.Now.
	Now func() time.Time
}

// Action is one thing Init did to the vault.
type Action struct {
	Path string `json:"path"` // relative to the vault root; "." is the root
	What string `json:"what"`
}

// Result says what Init found and did. Fields are only ever added.
type Result struct {
	Dir        string       `json:"dir"`
	Created    bool         `json:"created"`          // a new vault was made
	Head       string       `json:"head"`             // commit HEAD points at afterwards
	Commit     string       `json:"commit,omitempty"` // commit made by this run, if any
	Committed  []string     `json:"committed,omitempty"`
	Gate       vault.Owner  `json:"gate"`
	AgentGroup *vault.Group `json:"agent_group,omitempty"`
	// LauncherGroup owns 90-inbox/.sessions/ when the install has one.
	LauncherGroup *vault.Group `json:"launcher_group,omitempty"`
	InboxMode     string       `json:"inbox_mode"` // octal, e.g. "01777"
	Actions       []Action     `json:"actions"`
	Warnings      []string     `json:"warnings,omitempty"`
	// GitSafeDirectory is the Git config file `fedmem init` listed the
	// vault in as safe.directory (cmd/fedmem/gitsafe.go), so users other
	// than the gate can run git in it; "" when it did not.
	GitSafeDirectory string `json:"git_safe_directory,omitempty"`
}

// RefusedError explains why Init would not touch a directory.
type RefusedError struct {
	Dir   string
	Found []string // a few of the entries found, sorted
	More  int      // how many more entries there were
}

func (e *RefusedError) Error() string {
	found := strings.Join(e.Found, ", ")
	if e.More > 0 {
		found += fmt.Sprintf(" and %d more", e.More)
	}
	return fmt.Sprintf("refusing to initialise %s: %v (found: %s); choose an empty or new directory", e.Dir, ErrNotEmpty, found)
}

func (e *RefusedError) Unwrap() error { return ErrNotEmpty }

// managedFile is a tracked file Init writes when it is missing.
type managedFile struct {
	path    string // slash-separated, relative to the vault root
	content []byte
	keep    bool // a .gitkeep placeholder: skipped if its folder has tracked content
}

// Init creates a fedmem vault in dir (creating dir if needed), or re-checks
// and repairs an existing one. See the package documentation for what it
// promises. It needs no worktree scan: it touches only the paths it manages.
func Init(dir string, opts InitOptions) (Result, error) {
	var res Result
	gate := vault.CurrentOwner()
	if opts.Gate != nil {
		gate = *opts.Gate
	}
	res.Gate = gate
	res.AgentGroup = opts.AgentGroup
	inboxMode := InboxModeShared
	if opts.AgentGroup != nil {
		inboxMode = InboxModeGroup
	}
	res.InboxMode = octal(inboxMode)
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}

	abs, entries, err := initDir(dir)
	res.Dir = abs
	if err != nil {
		return res, err
	}
	fresh := len(entries) == 0
	if !fresh && !vault.IsVault(abs) {
		return res, refused(abs, entries)
	}
	res.Created = fresh
	if !fresh {
		// Re-running init must not hand the vault to whoever runs it: the
		// owner and the agent group default to what the vault has.
		cur, group, err := currentOwnership(abs)
		if err != nil {
			return res, err
		}
		if opts.Gate == nil {
			gate = cur
			res.Gate = gate
		}
		if opts.AgentGroup == nil && group != nil {
			opts.AgentGroup = group
			res.AgentGroup = group
			inboxMode = InboxModeGroup
			res.InboxMode = octal(inboxMode)
		}
		if opts.LauncherGroup == nil {
			opts.LauncherGroup = currentLauncherGroup(abs)
		}
	}
	res.LauncherGroup = opts.LauncherGroup

	w := &writer{root: abs, gate: gate, res: &res}

	// Git first, then the inbox: a run interrupted after this point leaves a
	// directory that IsVault accepts, so the next run repairs it instead of
	// refusing it.
	g, err := openOrInit(abs, fresh)
	if err != nil {
		return res, err
	}
	if err := w.layoutDirs(opts, inboxMode); err != nil {
		return res, err
	}

	if err := ensureStateDir(abs, gate, &res); err != nil {
		return res, err
	}

	files, err := managedFiles(gate, opts.Reviewers)
	if err != nil {
		return res, err
	}
	head, err := g.head()
	if err != nil {
		return res, err
	}
	toCommit, written, err := w.syncManaged(g, head, files)
	if err != nil {
		return res, err
	}

	if len(toCommit) > 0 {
		msg := commitMessage(fresh, gate, toCommit)
		id, err := g.commit(abs, head, toCommit, msg, now())
		if err != nil {
			return res, err
		}
		res.Commit = id
		res.Committed = toCommit
	}
	if err := g.updateIndex(abs, append(written, toCommit...), gate); err != nil {
		return res, err
	}
	if err := w.gitDir(); err != nil {
		return res, err
	}
	if res.Head, err = vault.ReadHead(abs); err != nil {
		return res, err
	}
	if !vault.IsVault(abs) {
		return res, fmt.Errorf("init %s: internal error: result is not a vault", abs)
	}
	if res.Actions == nil {
		res.Actions = []Action{}
	}
	return res, nil
}

// initDir makes dir if it does not exist and returns its absolute path,
// symlinks resolved, and its entries (sorted by name).
func initDir(dir string) (string, []os.DirEntry, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, fmt.Errorf("init %q: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(abs, DirMode); err != nil {
			return "", nil, fmt.Errorf("init: create %s: %w", abs, err)
		}
	case err != nil:
		return "", nil, fmt.Errorf("init: %w", err)
	case !fi.IsDir():
		return "", nil, fmt.Errorf("init: %s is not a directory", abs)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", nil, fmt.Errorf("init: %w", err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return abs, nil, fmt.Errorf("init: read %s: %w", abs, err)
	}
	return abs, entries, nil
}

// refused is the error for a directory that holds files and is not a vault:
// it names the first five entries.
func refused(abs string, entries []os.DirEntry) *RefusedError {
	re := &RefusedError{Dir: abs}
	for i, e := range entries { // ReadDir sorts by name
		if i == 5 {
			re.More = len(entries) - i
			break
		}
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		re.Found = append(re.Found, name)
	}
	return re
}

// layoutDirs makes the vault's root, its folders, the inbox (inboxMode,
// the agent group's when there is one) and the session records' folder.
func (w *writer) layoutDirs(opts InitOptions, inboxMode os.FileMode) error {
	gate := w.gate
	if err := w.dir(".", DirMode, gate.GID, false); err != nil {
		return err
	}
	for _, f := range vault.Folders {
		mode, gid := os.FileMode(DirMode), gate.GID
		if f == vault.InboxDir {
			mode = inboxMode
			if opts.AgentGroup != nil {
				gid = opts.AgentGroup.GID
			}
		}
		// The inbox itself sits in the gate's root folder, where nobody else
		// can create it; only entries inside it may be someone else's.
		if err := w.dir(f, mode, gid, false); err != nil {
			return err
		}
	}
	sessGID := gate.GID
	if opts.AgentGroup != nil {
		sessGID = opts.AgentGroup.GID
	}
	sessMode := inboxMode
	if opts.LauncherGroup != nil {
		sessGID, sessMode = opts.LauncherGroup.GID, SessionsModeLauncher
	}
	return w.dir(vault.SessionsDir, sessMode, sessGID, true)
}

// syncManaged brings each managed file in line with HEAD: it returns the
// files to commit (created, or left by an interrupted init) and those
// restored from HEAD; a file that differs from HEAD is left as it is, with a
// warning.
func (w *writer) syncManaged(g *gitRepo, head headState, files []managedFile) (toCommit, written []string, err error) {
	for _, mf := range files {
		inHead, headBlob, err := g.inTree(head, mf.path)
		if err != nil {
			return nil, nil, err
		}
		if mf.keep && !inHead {
			tracked, err := g.hasTrackedContent(head, path.Dir(mf.path))
			if err != nil {
				return nil, nil, err
			}
			if tracked {
				continue // the folder is tracked through its notes
			}
		}
		inInbox := strings.HasPrefix(mf.path, vault.InboxDir+"/")
		exists, err := w.file(mf.path, inInbox)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case exists && inHead:
			differs, err := w.differs(mf.path, headBlob)
			if err != nil {
				return nil, nil, err
			}
			if differs {
				w.res.Warnings = append(w.res.Warnings, fmt.Sprintf("%s differs from HEAD: edited outside the gate; left as it is (see git diff)", mf.path))
			}
		case exists && !inHead:
			// Left by an interrupted init: commit it as it is.
			toCommit = append(toCommit, mf.path)
		case !exists && inHead:
			content, err := g.blob(headBlob)
			if err != nil {
				return nil, nil, err
			}
			if err := w.create(mf.path, content, "restored from HEAD"); err != nil {
				return nil, nil, err
			}
			written = append(written, mf.path)
		case !exists && !inHead:
			if err := w.create(mf.path, mf.content, "created"); err != nil {
				return nil, nil, err
			}
			toCommit = append(toCommit, mf.path)
		}
	}
	return toCommit, written, nil
}

func commitMessage(fresh bool, gate vault.Owner, paths []string) string {
	var b strings.Builder
	if fresh {
		b.WriteString("fedmem init: create the vault\n\n")
	} else {
		b.WriteString("fedmem init: restore missing vault files\n\n")
	}
	who := fmt.Sprintf("uid %d, gid %d", gate.UID, gate.GID)
	if gate.Name != "" {
		who = gate.Name + ", " + who
	}
	fmt.Fprintf(&b, "Gate user: %s.\n", who)
	b.WriteString("Files:\n")
	for _, p := range paths {
		fmt.Fprintf(&b, "  %s\n", p)
	}
	return b.String()
}

// managedFiles lists the tracked files Init guarantees, in creation order.
func managedFiles(gate vault.Owner, reviewers []string) ([]managedFile, error) {
	var missing error
	read := func(name string) []byte {
		b, err := templates.ReadFile("templates/" + name)
		if err != nil && missing == nil {
			missing = fmt.Errorf("embedded template %s: %w", name, err)
		}
		return b
	}
	if len(reviewers) == 0 {
		r := gate.Name
		if r == "" {
			r = fmt.Sprint(gate.UID)
		}
		reviewers = []string{r}
	}
	policySrc := read("policy.yaml")
	tmpl, err := template.New("policy.yaml").Parse(string(policySrc))
	if err != nil {
		return nil, fmt.Errorf("policy template: %w", err)
	}
	var policy bytes.Buffer
	if err := tmpl.Execute(&policy, struct{ Reviewers []string }{reviewers}); err != nil {
		return nil, fmt.Errorf("policy template: %w", err)
	}
	files := []managedFile{
		{path: ".gitignore", content: read("gitignore")},
		{path: vault.AgentContract, content: read("AGENT.md")},
		{path: vault.RulesFile, content: read("RULES.md")},
		{path: vault.PolicyFile, content: policy.Bytes()},
	}
	if missing != nil {
		return nil, missing
	}
	for _, f := range leafFolders() {
		if f == vault.GlobalDir {
			continue
		}
		files = append(files, managedFile{path: f + "/" + GitKeep, keep: true})
	}
	return files, nil
}

// leafFolders returns the folders of vault.Folders that have no sub-folder in
// the list: those need a placeholder for Git to track them.
func leafFolders() []string {
	var out []string
	for _, f := range vault.Folders {
		leaf := true
		for _, g := range vault.Folders {
			if strings.HasPrefix(g, f+"/") {
				leaf = false
				break
			}
		}
		if leaf {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

func octal(m os.FileMode) string {
	n := uint32(m.Perm())
	if m&os.ModeSetuid != 0 {
		n |= 0o4000
	}
	if m&os.ModeSetgid != 0 {
		n |= 0o2000
	}
	if m&os.ModeSticky != 0 {
		n |= 0o1000
	}
	return fmt.Sprintf("%05o", n)
}

// ensureStateDir creates the gate's private state directory beside the
// vault (vault.GateStateDir), owned by the gate and mode 0700, so that it
// exists before any agent runs: fedmem-run masks it, and an agent whose
// workdir contains the vault's parent cannot plant one for the gate to
// trust. An existing one must be a real directory owned by the gate.
func ensureStateDir(vaultDir string, gate vault.Owner, res *Result) error {
	st := vault.GateStateDir(vaultDir)
	fi, err := os.Lstat(st)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.Mkdir(st, 0o700); err != nil {
			return fmt.Errorf("init: create the gate's state directory %s: %w", st, err)
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(st, gate.UID, gate.GID); err != nil {
				return fmt.Errorf("init: chown %s: %w", st, err)
			}
		}
		res.Actions = append(res.Actions, Action{Path: st, What: "created the gate's state directory (mode 0700)"})
		return nil
	case err != nil:
		return fmt.Errorf("init: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("init: the gate's state directory %s is not a directory (%s)", st, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != gate.UID {
		return fmt.Errorf("init: the gate's state directory %s is owned by uid %d, not the gate (uid %d): remove it or fix its owner", vault.GateStateDir(vaultDir), st.Uid, gate.UID)
	}
	return nil
}
