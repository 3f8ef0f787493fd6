package repo_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/repo"
	"github.com/fedmem/fedmem/vault/repo/repotest"
)

func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }

// wantTracked is every file a new vault commits.
var wantTracked = []string{
	".gitignore",
	"00-global/AGENT.md",
	"00-global/RULES.md",
	"00-global/policy.yaml",
	"10-projects/.gitkeep",
	"20-domains/.gitkeep",
	"30-clients/.gitkeep",
	"40-workflows/.gitkeep",
	"50-skills/deprecated/.gitkeep",
	"50-skills/proposed/.gitkeep",
	"50-skills/published/.gitkeep",
	"60-context-packs/.gitkeep",
	"70-decisions/.gitkeep",
	"80-agent-adapters/.gitkeep",
	"90-inbox/.gitkeep",
	"99-archive/.gitkeep",
}

func mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := repotest.Git(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

func checkGit(t *testing.T, dir string) {
	t.Helper()
	if err := repotest.FsckStrict(dir); err != nil {
		t.Error(err)
	}
	if err := repotest.Clean(dir); err != nil {
		t.Error(err)
	}
}

func TestInitCreatesVault(t *testing.T) {
	dir := filepath.Join(testutil.TempDir(t), "vault") // does not exist yet
	res, err := repo.Init(dir, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.Commit == "" || res.Commit != res.Head {
		t.Fatalf("result: created=%v commit=%q head=%q", res.Created, res.Commit, res.Head)
	}
	if res.Dir != dir || res.Gate.UID != os.Getuid() || res.InboxMode != "01777" {
		t.Errorf("result: dir=%q gate=%+v inbox=%s", res.Dir, res.Gate, res.InboxMode)
	}
	for _, f := range append(vault.Folders, vault.SessionsDir) {
		fi, err := os.Lstat(filepath.Join(dir, f))
		if err != nil || !fi.IsDir() {
			t.Errorf("folder %s: %v", f, err)
		}
	}
	if !vault.IsVault(dir) {
		t.Error("IsVault is false")
	}

	// Git's own view: the files, the branch, the author, a sound repository.
	files := strings.Split(mustGit(t, dir, "ls-files"), "\n")
	sort.Strings(files)
	if strings.Join(files, "\n") != strings.Join(wantTracked, "\n") {
		t.Errorf("tracked files:\n%s\nwant:\n%s", strings.Join(files, "\n"), strings.Join(wantTracked, "\n"))
	}
	if b := mustGit(t, dir, "symbolic-ref", "HEAD"); b != "refs/heads/main" {
		t.Errorf("HEAD -> %s, want refs/heads/main", b)
	}
	log := mustGit(t, dir, "log", "--format=%H|%an <%ae>|%cn <%ce>|%s")
	if want := res.Commit + "|fedmem-gate <gate@fedmem.invalid>|fedmem-gate <gate@fedmem.invalid>|fedmem init: create the vault"; log != want {
		t.Errorf("git log:\n%s\nwant:\n%s", log, want)
	}
	if h, err := vault.ReadHead(dir); err != nil || h != res.Head {
		t.Errorf("ReadHead = %q, %v; want %q", h, err, res.Head)
	}
	checkGit(t, dir)

	// The contract says what the brief promises agents.
	agent, err := os.ReadFile(filepath.Join(dir, vault.AgentContract))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"$FEDMEM_INBOX", "name.md.tmp", "type: ", "confidence: verified", "hypothesis", "supersedes", "sources", "`status`, `verified` and `generated`", "receipt next to your drafts"} {
		if !strings.Contains(string(agent), s) {
			t.Errorf("AGENT.md does not mention %q", s)
		}
	}
	policy, err := os.ReadFile(filepath.Join(dir, vault.PolicyFile))
	if err != nil {
		t.Fatal(err)
	}
	if me := vault.CurrentOwner(); me.Name != "" && !strings.Contains(string(policy), "reviewers:\n  - \""+me.Name+"\"") {
		t.Errorf("policy.yaml does not name %q as reviewer:\n%s", me.Name, policy)
	}

	// Drafts and session records never dirty the worktree.
	sess := filepath.Join(dir, vault.InboxDir, "s-1")
	if err := os.Mkdir(sess, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(sess, "draft.md"), filepath.Join(sess, "x.md.tmp"), filepath.Join(dir, vault.SessionsDir, "s-1.json")} {
		if err := os.WriteFile(p, []byte("---\ntype: Fact\n---\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := repotest.Clean(dir); err != nil {
		t.Errorf("with drafts in the inbox: %v", err)
	}
}

func TestInitIsIdempotentAndRepairs(t *testing.T) {
	dir := testutil.TempDir(t)
	first, err := repo.Init(dir, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := repo.Init(dir, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Created || again.Commit != "" || again.Head != first.Head || len(again.Actions) != 0 {
		t.Fatalf("second run: created=%v commit=%q head=%q (want %q) actions=%v", again.Created, again.Commit, again.Head, first.Head, again.Actions)
	}

	// Damage it the ways a careless human might.
	mustChmod(t, filepath.Join(dir, vault.GlobalDir), 0o777)
	mustChmod(t, filepath.Join(dir, vault.InboxDir), 0o755)
	mustChmod(t, filepath.Join(dir, vault.RulesFile), 0o666)
	if err := os.RemoveAll(filepath.Join(dir, "10-projects")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, vault.SessionsDir)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, vault.AgentContract)); err != nil {
		t.Fatal(err)
	}
	fixed, err := repo.Init(dir, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fixed.Commit != "" || fixed.Head != first.Head {
		t.Errorf("repair committed: commit=%q head=%q want head %q", fixed.Commit, fixed.Head, first.Head)
	}
	got := map[string]string{}
	for _, a := range fixed.Actions {
		got[a.Path] = a.What
	}
	want := map[string]string{
		vault.GlobalDir:        "mode 0777 -> 0755",
		vault.InboxDir:         "mode 0755 -> 1777",
		vault.RulesFile:        "mode 0666 -> 0644",
		"10-projects":          "created folder",
		vault.SessionsDir:      "created folder",
		"10-projects/.gitkeep": "restored from HEAD",
		vault.AgentContract:    "restored from HEAD",
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("action for %s = %q, want %q (all: %v)", p, got[p], w, fixed.Actions)
		}
	}
	if len(got) != len(want) {
		t.Errorf("actions %v, want exactly %v", got, want)
	}
	assertMode(t, filepath.Join(dir, vault.GlobalDir), fs.ModeDir|0o755)
	assertMode(t, filepath.Join(dir, vault.InboxDir), fs.ModeDir|fs.ModeSticky|0o777)
	assertMode(t, filepath.Join(dir, vault.SessionsDir), fs.ModeDir|fs.ModeSticky|0o777)
	checkGit(t, dir)

	// A third run has nothing left to do.
	third, err := repo.Init(dir, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(third.Actions) != 0 || third.Commit != "" {
		t.Errorf("third run: actions=%v commit=%q", third.Actions, third.Commit)
	}
}

func TestInitCommitsContractMissingFromHistory(t *testing.T) {
	dir := testutil.TempDir(t)
	first, err := repo.Init(dir, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustGit(t, dir, "rm", "-q", vault.PolicyFile)
	mustGit(t, dir, "-c", "user.name=someone", "-c", "user.email=someone@example.invalid", "commit", "-q", "-m", "drop the policy")
	dropped := mustGit(t, dir, "rev-parse", "HEAD")

	res, err := repo.Init(dir, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit == "" || res.Head != res.Commit || len(res.Committed) != 1 || res.Committed[0] != vault.PolicyFile {
		t.Fatalf("result: commit=%q head=%q committed=%v", res.Commit, res.Head, res.Committed)
	}
	if p := mustGit(t, dir, "rev-parse", "HEAD^"); p != dropped {
		t.Errorf("parent of the repair commit = %s, want %s", p, dropped)
	}
	if n := mustGit(t, dir, "rev-list", "--count", "HEAD"); n != "3" {
		t.Errorf("%s commits, want 3", n)
	}
	if a := mustGit(t, dir, "log", "-1", "--format=%an <%ae> %s"); a != "fedmem-gate <gate@fedmem.invalid> fedmem init: restore missing vault files" {
		t.Errorf("repair commit: %s", a)
	}
	// The restored policy is the template again, and only it changed.
	if d := mustGit(t, dir, "diff", "--name-only", first.Head, "HEAD"); d != "" {
		t.Errorf("tree differs from the first commit: %s", d)
	}
	checkGit(t, dir)
}

// TestInitWarnsAboutEditedContract: a contract file changed in the worktree
// (behind the gate's back) is reported and left alone.
func TestInitWarnsAboutEditedContract(t *testing.T) {
	dir := testutil.TempDir(t)
	if _, err := repo.Init(dir, repo.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, vault.AgentContract)
	mustWrite(t, p, "agents may write anywhere\n")
	res, err := repo.Init(dir, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := vault.AgentContract + " differs from HEAD: edited outside the gate; left as it is (see git diff)"
	if len(res.Warnings) != 1 || res.Warnings[0] != want {
		t.Errorf("warnings %q, want [%q]", res.Warnings, want)
	}
	if b, _ := os.ReadFile(p); string(b) != "agents may write anywhere\n" {
		t.Errorf("init changed the edited file: %q", b)
	}
	if res.Commit != "" {
		t.Errorf("init committed the edit: %s", res.Commit)
	}
}

// TestInitFinishesInterruptedInit: a run stopped after `git init` and the
// inbox (what init makes first) is finished by the next run, with one commit.
func TestInitFinishesInterruptedInit(t *testing.T) {
	dir := testutil.TempDir(t)
	mustGit(t, dir, "init", "-q", "-b", "main")
	if err := os.Mkdir(filepath.Join(dir, vault.InboxDir), 0o700); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dir, ".gitignore"), "/90-inbox/*\n!/90-inbox/.gitkeep\n")
	res, err := repo.Init(dir, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Created || res.Commit == "" || len(res.Committed) != len(wantTracked) {
		t.Fatalf("result: created=%v commit=%q committed=%v", res.Created, res.Commit, res.Committed)
	}
	if n := mustGit(t, dir, "rev-list", "--count", "HEAD"); n != "1" {
		t.Errorf("%s commits, want 1", n)
	}
	// The half-written .gitignore was committed as found.
	if b := mustGit(t, dir, "show", "HEAD:.gitignore"); b != "/90-inbox/*\n!/90-inbox/.gitkeep" {
		t.Errorf(".gitignore in HEAD: %q", b)
	}
	assertMode(t, filepath.Join(dir, vault.InboxDir), fs.ModeDir|fs.ModeSticky|0o777)
	checkGit(t, dir)
}

func TestInitRefusesNonVault(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		found string
	}{
		{"files", func(t *testing.T, dir string) {
			mustWrite(t, filepath.Join(dir, "notes.txt"), "mine")
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "(found: notes.txt, sub/)"},
		{"other git repo", func(t *testing.T, dir string) {
			mustGit(t, dir, "init", "-q")
			mustWrite(t, filepath.Join(dir, "README"), "a project")
		}, "(found: .git/, README)"},
		{"many", func(t *testing.T, dir string) {
			for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
				mustWrite(t, filepath.Join(dir, n), n)
			}
		}, "(found: a, b, c, d, e and 2 more)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testutil.TempDir(t)
			tc.setup(t, dir)
			before, _ := os.ReadDir(dir)
			_, err := repo.Init(dir, repo.InitOptions{})
			if !errors.Is(err, repo.ErrNotEmpty) {
				t.Fatalf("err = %v, want ErrNotEmpty", err)
			}
			var re *repo.RefusedError
			if !errors.As(err, &re) || re.Dir != dir {
				t.Fatalf("err = %#v, want a RefusedError for %s", err, dir)
			}
			msg := err.Error()
			if !strings.Contains(msg, "refusing to initialise "+dir+": directory is not empty and is not a fedmem vault") || !strings.Contains(msg, tc.found) {
				t.Errorf("message %q does not name the directory and %q", msg, tc.found)
			}
			after, _ := os.ReadDir(dir)
			if len(after) != len(before) {
				t.Errorf("refused init changed the directory: %d entries -> %d", len(before), len(after))
			}
		})
	}
}

func TestInitRefusesFile(t *testing.T) {
	p := filepath.Join(testutil.TempDir(t), "file")
	mustWrite(t, p, "x")
	_, err := repo.Init(p, repo.InitOptions{})
	if err == nil || !strings.Contains(err.Error(), p+" is not a directory") {
		t.Fatalf("err = %v, want %q", err, p+" is not a directory")
	}
}

// TestInitRefusesPlantedContractPath: a contract path that is a symlink is
// not followed nor replaced; init stops and names it.
func TestInitRefusesPlantedContractPath(t *testing.T) {
	dir := testutil.TempDir(t)
	if _, err := repo.Init(dir, repo.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(testutil.TempDir(t), "elsewhere")
	mustWrite(t, target, "not yours")
	mustChmod(t, target, 0o600)
	p := filepath.Join(dir, vault.RulesFile)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	_, err := repo.Init(dir, repo.InitOptions{})
	if err == nil || !strings.Contains(err.Error(), p+": expected a regular file, found a symbolic link") {
		t.Fatalf("err = %v, want a refusal naming the symlink", err)
	}
	assertMode(t, target, 0o600)
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustChmod(t *testing.T, p string, m fs.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}

func assertMode(t *testing.T, p string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != want {
		t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
	}
}

func owner(t *testing.T, p string) (uid, gid uint32) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid
}
