package viewfile

// Red team (round 3) of the gate's view tree (commit 3812aeb). Failing
// tests say "BREACH:"; the others are attacks that held, kept as
// regression tests.

import (
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/gate/internal/vaulttest"
	"github.com/fedmem/fedmem/vault/repo"
	"github.com/fedmem/fedmem/vault/view"
)

// rtGit runs git in v with stdin; it returns the trimmed output.
func rtGit(t *testing.T, v, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", v}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// rtRawTree writes a tree object from raw entries (mode, name, object),
// as a remote may send it: no normalisation, no check.
func rtRawTree(t *testing.T, v string, entries ...[3]string) string {
	t.Helper()
	var b strings.Builder
	for _, e := range entries {
		h, err := hex.DecodeString(e[2])
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(e[0] + " " + e[1] + "\x00" + string(h))
	}
	return rtGit(t, v, b.String(), "hash-object", "-t", "tree", "-w", "--literally", "--stdin")
}

// rtCommitTop makes HEAD a commit of HEAD's tree plus the top-level
// folder name holding tree sub (a remote's commit the gate syncs).
func rtCommitTop(t *testing.T, v, name, sub string) repo.Hash {
	t.Helper()
	ls := rtGit(t, v, "", "ls-tree", "HEAD")
	root := rtGit(t, v, ls+"\n040000 tree "+sub+"\t"+name+"\n", "mktree")
	c := rtGit(t, v, "", "commit-tree", root, "-p", "HEAD", "-m", "a remote's commit")
	rtGit(t, v, "", "update-ref", "HEAD", c)
	return repo.NewHash(c)
}

func rtWrite(t *testing.T, v string) (*view.Manifest, repo.Hash) {
	t.Helper()
	r := vaulttest.Open(t, v)
	_, head, err := r.Head()
	must(t, err)
	if err := Write(r, v, head); err != nil {
		t.Logf("Write: %v", err)
	}
	m, err := view.Read(v, head.String())
	must(t, err)
	return m, head
}

// rtShown lists the files of the view tree that hold marker and that m
// does not hide (what a session's overlay shows).
func rtShown(t *testing.T, v string, m *view.Manifest, marker string) []string {
	t.Helper()
	hidden := hiddenSet(m)
	var out []string
	tree := view.TreeDir(v)
	_ = filepath.WalkDir(tree, func(full string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(tree, full)
		if b, err := os.ReadFile(full); err == nil && strings.Contains(string(b), marker) && !hidden(filepath.ToSlash(rel)) {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

// TestRTView3OddTreeModes (BREACH): a remote's commit whose tree entries
// have modes Git reads but the conflict index does not take for what
// they are — a folder "040000" (zero-padded: fsck's zeroPaddedFilemode,
// a warning) or a file "100600"/"100775" (badFilemode, a warning; Git
// checks them out as ordinary files) — holding a note not in force. The
// conflict index skips the entry (a folder whose raw mode is not exactly
// "40000" is not walked; a file whose filemode.IsFile is false is not
// judged), so the manifest does not hide the note; the view tree's
// writer (go-git's walker, which reads 040000 as a folder, and writes any
// non-folder, non-link, non-gitlink entry as a file) writes it: the
// overlay shows it to every session. Root cause: gate/decide/
// conflictindex.go addEntry (`string(c.mode) != "40000"`, `!m.IsFile()`:
// return, not hidden) against gate/viewfile/tree.go rebuildTree/syncTree
// (everything not in the manifest's hidden set is written). Both rebuilt
// and moved by difference.
func TestRTView3OddTreeModes(t *testing.T) {
	note := "---\ntitle: Odd\nstatus: deprecated\n---\nRTVIEW3-ODD deprecated text\n"
	for _, c := range []struct{ name, mode string }{{"dir-040000", "040000"}, {"file-100600", "100600"}, {"file-100775", "100775"}} {
		for _, moved := range []bool{false, true} {
			t.Run(c.name+map[bool]string{false: "/rebuilt", true: "/moved"}[moved], func(t *testing.T) {
				v := vaulttest.New(t)
				if moved {
					rtWrite(t, v) // a tree at the first commit
				}
				blob := rtGit(t, v, note, "hash-object", "-w", "--stdin")
				var sub string
				if c.mode == "040000" {
					inner := rtGit(t, v, "100644 blob "+blob+"\tsecret.md\n", "mktree")
					sub = rtRawTree(t, v, [3]string{"040000", "inner", inner})
				} else {
					sub = rtRawTree(t, v, [3]string{c.mode, "secret.md", blob})
				}
				rtCommitTop(t, v, "25-odd", sub)
				m, head := rtWrite(t, v)
				if m.Tree != head.String() {
					t.Fatalf("the manifest names no tree at HEAD (%q): nothing shown", m.Tree)
				}
				if shown := rtShown(t, v, m, "RTVIEW3-ODD"); len(shown) > 0 {
					t.Errorf("BREACH: a deprecated note under tree mode %s is in the view tree and not hidden by the manifest: %v", c.mode, shown)
				}
			})
		}
	}
}

// TestRTView3HostileNames (held): a remote's tree entries named "..",
// "a/../../x", "" or ".git" never make the gate write outside its tree
// (view.CleanRel); the tree is then not used (the manifest names none:
// sessions scan the work tree).
func TestRTView3HostileNames(t *testing.T) {
	for _, name := range []string{"..", "a/../../../../escaped", "/abs-escaped", ".git"} {
		t.Run(name, func(t *testing.T) {
			v := vaulttest.New(t)
			rtWrite(t, v)
			blob := rtGit(t, v, "---\ntitle: Esc\n---\nRTVIEW3-ESC\n", "hash-object", "-w", "--stdin")
			leaf := rtGit(t, v, "100644 blob "+blob+"\tx.md\n", "mktree")
			sub := rtRawTree(t, v, [3]string{"40000", name, leaf}, [3]string{"100644", "f.md", blob})
			rtCommitTop(t, v, "25-esc", sub)
			r := vaulttest.Open(t, v)
			_, head, err := r.Head()
			must(t, err)
			t.Logf("Write: %v", Write(r, v, head))
			base := filepath.Dir(v)
			_ = filepath.WalkDir(base, func(full string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || strings.HasPrefix(full, view.TreeDir(v)+"/") || strings.HasPrefix(full, filepath.Join(v, ".git")+"/objects/") {
					return nil
				}
				if b, err := os.ReadFile(full); err == nil && strings.Contains(string(b), "RTVIEW3-ESC") {
					rel, _ := filepath.Rel(base, full)
					if rel != "vault/25-esc/f.md" {
						t.Errorf("BREACH: the gate wrote a tree entry named %q outside its view tree: %s", name, rel)
					}
				}
				return nil
			})
		})
	}
}

// TestRTView3ManifestUndecodable (BREACH, denial of service of the
// view tree): a remote's commit with a tree entry named ".." (Git's fsck
// refuses it, a push without receive.fsckObjects does not) — the
// conflict index takes it for a dot entry and hides "25-esc/..", a path
// view.Decode refuses: the gate writes a manifest no launcher can read,
// and every session scans the live work tree instead of using the view
// tree (the round-2 breaches the tree closed — a note arriving during the
// session shows — are back) until that commit is gone. Any other entry
// go-git refuses ("a/../x", ".git") makes the tree unwritable the same
// way (a manifest naming no tree), forever. Root cause:
// gate/decide/conflictindex.go addEntry (a name starting with "." is a
// dot entry, ".." too) and view.Encode writing a path Decode rejects;
// gate/viewfile/tree.go rebuildTree (one refused entry fails the whole
// tree, instead of leaving that entry out).
func TestRTView3ManifestUndecodable(t *testing.T) {
	v := vaulttest.New(t)
	rtWrite(t, v)
	blob := rtGit(t, v, "---\ntitle: Esc\n---\nx\n", "hash-object", "-w", "--stdin")
	leaf := rtGit(t, v, "100644 blob "+blob+"\tx.md\n", "mktree")
	rtCommitTop(t, v, "25-esc", rtRawTree(t, v, [3]string{"40000", "..", leaf}, [3]string{"100644", "f.md", blob}))
	r := vaulttest.Open(t, v)
	_, head, err := r.Head()
	must(t, err)
	werr := Write(r, v, head)
	m, err := view.Read(v, head.String())
	if err != nil {
		t.Fatalf("BREACH: the gate wrote a manifest at HEAD that the launcher cannot read (every session scans the work tree): %v (Write: %v)", err, werr)
	}
	if m.Tree != head.String() {
		t.Errorf("BREACH: one hostile entry name makes the whole view tree unwritable (sessions scan the work tree): %v", werr)
	}
}

// TestRTView3UnwritableTree (BREACH, denial of service of the view
// tree): a path in HEAD that go-git's tree walker refuses — a tab or any
// control character other than the NUL, CR and LF the sync refuses
// (gate/remote.PathError), an NTFS or HFS+ alias of .git ("git~1",
// ".git."), which the sync lets through — makes every rebuild of the
// tree fail (repo.Files: object.TreeWalker validates names): the manifest
// then names no tree and every session scans the work tree, until the
// path is gone. A rebuild is what the first run, a lost manifest (a
// crash between its removal and the tree reaching HEAD) or a rewritten
// history do. Moved by difference (repo.Diff, no validation) the same
// commit is written. Root cause: gate/viewfile/tree.go rebuildTree
// (r.Files aborts the whole walk on one refused name) — vault/repo/
// read.go Files (a TreeWalker without SkipPathValidation, or a skip of
// the refused entry).
func TestRTView3UnwritableTree(t *testing.T) {
	for _, name := range []string{"tab\tx.md", "ctl\x01.md", "git~1", ".git."} {
		t.Run(strings.NewReplacer("\t", "TAB", "\x01", "CTL").Replace(name), func(t *testing.T) {
			v := vaulttest.New(t)
			blob := rtGit(t, v, "---\ntitle: Odd name\n---\nx\n", "hash-object", "-w", "--stdin")
			leaf := rtGit(t, v, "100644 blob "+blob+"\tx.md\n", "mktree")
			entry := [3]string{"100644", name, blob}
			if !strings.HasSuffix(name, ".md") {
				entry = [3]string{"40000", name, leaf}
			}
			rtCommitTop(t, v, "25-odd", rtRawTree(t, v, entry, [3]string{"100644", "zz.md", blob}))
			r := vaulttest.Open(t, v)
			_, head, err := r.Head()
			must(t, err)
			werr := Write(r, v, head) // no manifest yet: a rebuild
			m, err := view.Read(v, head.String())
			if err != nil {
				t.Fatalf("no manifest: %v (Write: %v)", err, werr)
			}
			if m.Tree != head.String() {
				t.Errorf("BREACH: a path named %q in HEAD makes the view tree unwritable on a rebuild (every session scans the work tree): %v", name, werr)
			}
		})
	}
}

// TestRTView3CrashLeftovers (held): a gate killed while it moved the
// tree leaves its temporary file (.fedmem-view-PID-HASH, which no
// manifest hides) and no manifest (it was removed first): the next Write
// rebuilds the tree whole and removes the leftover.
func TestRTView3CrashLeftovers(t *testing.T) {
	v := vaulttest.New(t)
	vaulttest.Commit(t, v, map[string]string{"20-domains/a.md": "---\ntitle: A\n---\na\n"})
	rtWrite(t, v)
	vaulttest.Commit(t, v, map[string]string{"20-domains/a.md": "---\ntitle: A\nwithheld: {reason: poisoned}\n---\nRTVIEW3-CRASH\n"})
	left := filepath.Join(view.TreeDir(v), "20-domains", ".fedmem-view-99999-0123456789ab")
	must(t, os.WriteFile(left, []byte("---\ntitle: A\nwithheld: {reason: poisoned}\n---\nRTVIEW3-CRASH\n"), 0o644))
	must(t, os.Remove(view.Path(v))) // removeManifest ran, the tree did not reach HEAD
	m, _ := rtWrite(t, v)
	if _, err := os.Lstat(left); err == nil {
		t.Errorf("BREACH: the crashed gate's temporary file stays in the view tree, shown (%v)", rtShown(t, v, m, "RTVIEW3-CRASH"))
	}
	if shown := rtShown(t, v, m, "RTVIEW3-CRASH"); len(shown) > 0 {
		t.Errorf("BREACH: withheld text in the tree, not hidden: %v", shown)
	}
}

// TestRTView3KeptPathHidden (held): a path in force when the tree was
// written and withheld by a later commit keeps its place in the tree with
// the new content, and the manifest hides it — also when the note is
// then renamed, and when the withhold and a deletion come in one commit.
func TestRTView3KeptPathHidden(t *testing.T) {
	v := vaulttest.New(t)
	vaulttest.Commit(t, v, map[string]string{"20-domains/k.md": "---\ntitle: K\n---\nk\n", "20-domains/r.md": "---\ntitle: R\n---\nr\n"})
	rtWrite(t, v)
	vaulttest.Commit(t, v, map[string]string{"20-domains/k.md": "---\ntitle: K\nstatus: deprecated\n---\nRTVIEW3-KEPT\n"})
	m, _ := rtWrite(t, v)
	if shown := rtShown(t, v, m, "RTVIEW3-KEPT"); len(shown) > 0 {
		t.Errorf("BREACH: kept path shown: %v", shown)
	}
	vaulttest.Git(t, v, "mv", "20-domains/k.md", "20-domains/k2.md")
	vaulttest.Git(t, v, "rm", "-q", "20-domains/r.md")
	vaulttest.Commit(t, v, map[string]string{"20-domains/r2.md": "---\ntitle: R\nwithheld: {reason: x}\n---\nRTVIEW3-KEPT r\n"})
	m, _ = rtWrite(t, v)
	if shown := rtShown(t, v, m, "RTVIEW3-KEPT"); len(shown) > 0 {
		t.Errorf("BREACH: renamed or replaced path shown: %v", shown)
	}
}
