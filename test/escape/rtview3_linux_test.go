package escape

// Third red-team round of `vault.view: in-force`, against commit 3812aeb
// (the sandbox's overlay has the gate's view tree, .git/fedmem-view-tree,
// as its lower layer). Each test fails with "BREACH:" when the agent
// reaches text of a note not in force (or the tree, or .git), or when a
// session that should start does not. Tests marked "held" pass on
// 3812aeb and stay as regression tests.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/test/testutil"
)

// rtview3Git runs git in e's vault with stdin and returns its trimmed
// output.
func rtview3Git(t *testing.T, e *env, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", e.vault.Dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// rtview3Run runs script (sh -c, $1 the vault) under prof and fails the
// test unless it printed SHOWN-OK; it reports every "FOUND" line as a
// breach of what.
func rtview3Run(t *testing.T, e *env, prof, what, script string, args ...string) *run {
	t.Helper()
	r := e.run(t, []string{"--profile", prof}, append([]string{"sh", "-c", script, "sh", e.vault.Dir}, args...)...)
	out := string(r.stdout)
	if !strings.Contains(out, "SHOWN-OK") {
		t.Fatalf("%s: exit %d, the agent did not finish\nstdout:\n%s\nstderr:\n%s", what, r.code, out, r.stderr)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "FOUND") {
			t.Errorf("BREACH: %s: %s", what, line)
		}
	}
	return r
}

// TestRTView3ZeroPaddedTreeMode (BREACH): a commit (from a remote the gate
// syncs, a curator's push) whose tree names a folder with the
// zero-padded mode "040000" (Git writes it as a warning only,
// fsck.zeroPaddedFilemode; old Git and other tools wrote it) holds a note
// that is not in force. The gate's conflict index does not walk a folder
// whose raw mode is not exactly "40000", so the note is never judged and
// is not in the manifest; the view tree's writer (go-git's tree walker,
// which reads "040000" as a folder) writes it into the tree; the overlay
// shows it. Root cause: gate/decide/conflictindex.go addEntry/diffDir
// (`string(c.mode) != "40000"`: not walked, not hidden) against
// gate/viewfile/tree.go rebuildTree/syncTree (repo.Files / repo.Diff).
func TestRTView3ZeroPaddedTreeMode(t *testing.T) {
	for _, via := range []string{"commit", "sync"} {
		t.Run(via, func(t *testing.T) {
			e := setup(t, layout{name: "beside/root"})
			var bare string
			if via == "sync" {
				// The gate syncs with a remote (policy remote.url) that a
				// hostile party can push to.
				bare = filepath.Join(e.base, "remote.git")
				pol := filepath.Join(e.vault.Dir, "00-global", "policy.yaml")
				b, err := os.ReadFile(pol)
				must(t, err)
				rtviewWrite(t, e, map[string]string{"00-global/policy.yaml": string(b) + "\nremote:\n  url: file://" + bare + "\n"}, true)
				rtview3Git(t, e, "", "clone", "-q", "--bare", e.vault.Dir, bare)
			}
			rtviewGate(t, e, "once") // a tree at this commit: the next is moved by difference
			blob := rtview3Git(t, e, "---\ntitle: Padded\nstatus: deprecated\n---\nRTVIEW3-PADDED deprecated text\n", "hash-object", "-w", "--stdin")
			inner := rtview3Git(t, e, "100644 blob "+blob+"\tsecret.md\n", "mktree")
			raw := "040000 inner\x00" + string(hexBytes(t, inner))
			outer := rtview3Git(t, e, raw, "hash-object", "-t", "tree", "-w", "--literally", "--stdin")
			ls := rtview3Git(t, e, "", "ls-tree", "HEAD")
			root := rtview3Git(t, e, ls+"\n040000 tree "+outer+"\t25-padded\n", "mktree")
			commit := rtview3Git(t, e, "", "commit-tree", root, "-p", "HEAD", "-m", "a remote's commit")
			if via == "sync" {
				rtview3Git(t, e, "", "push", "-q", bare, commit+":refs/heads/main")
			} else {
				rtview3Git(t, e, "", "update-ref", "HEAD", commit)
				rtview3Git(t, e, "", "reset", "-q", "--hard")
			}
			if uid := e.vaultOwner(); uid != 0 {
				must(t, testutil.ChownTree(e.vault.Dir, uid, uid))
			}
			out := rtviewGate(t, e, "once")
			if head := rtview3Git(t, e, "", "rev-parse", "HEAD"); head != commit {
				t.Fatalf("HEAD is %s, not the hostile commit %s:\n%s", head, commit, out)
			}
			m := rtviewManifest(t, e)
			if m == nil || !strings.Contains(m["text"].(string), "\nt fedmem-view-tree") {
				t.Fatalf("no manifest naming a view tree:\n%s\n%v", out, m)
			}
			rtviewHunt(t, e, rtviewProfile(t, e, "{view: in-force}"), "a note under a zero-padded folder mode (via "+via+")", "RTVIEW3-PADDED")
		})
	}
}

func hexBytes(t *testing.T, h string) []byte {
	t.Helper()
	b := make([]byte, len(h)/2)
	for i := range b {
		var v byte
		for _, c := range h[2*i : 2*i+2] {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= byte(c - '0')
			case c >= 'a' && c <= 'f':
				v |= byte(c-'a') + 10
			default:
				t.Fatalf("not hex: %q", h)
			}
		}
		b[i] = v
	}
	return b
}

// TestRTView3VisibleFolderNotInTree (BREACH, denial of service):
// vault.visible naming a folder the work tree has but the view tree does
// not — a folder `fedmem init` made that holds only its .gitkeep (a dot
// entry, never written), or one whose notes are all not in force (never
// written) — makes every session under the profile fail to start: the
// plan binds Mount.ViewTree = TREE/folder, which does not exist, and the
// init's open_tree of it fails (exit 125). Before 3812aeb the same
// profile showed an empty folder. Anyone who can make a folder's notes
// not in force (a sweep withholding them, a remote deprecating them, a
// reviewer) stops those sessions. Root cause: mounts/plan.go viewed
// (ViewTree set without checking the tree has the folder) and
// sandbox/pid1/mount_linux.go cloneSources (cloneTree of it, fatal).
func TestRTView3VisibleFolderNotInTree(t *testing.T) {
	for _, c := range []struct{ name, folder string }{
		{"gitkeep-only", "50-skills/proposed"},
		{"all-hidden", "30-clients/old"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := setup(t, layout{name: "beside/root"})
			rtviewWrite(t, e, map[string]string{
				"30-clients/old/a.md": "---\ntitle: A\nstatus: deprecated\n---\nRTVIEW3-VIS-A\n",
				"30-clients/old/b.md": "---\ntitle: B\nwithheld: {reason: poisoned}\n---\nRTVIEW3-VIS-B\n",
			}, true)
			rtviewGate(t, e, "once")
			if fi, err := os.Stat(filepath.Join(e.vault.Dir, c.folder)); err != nil || !fi.IsDir() {
				t.Fatalf("%s is not a folder of the vault: %v", c.folder, err)
			}
			prof := rtviewProfile(t, e, "{view: in-force, visible: [00-global, \""+c.folder+"\"]}")
			r := e.run(t, []string{"--profile", prof}, "sh", "-c", `grep -rl RTVIEW3-VIS "$1" 2>/dev/null | sed 's/^/FOUND /'; cat "$1/00-global/AGENT.md" >/dev/null && echo SHOWN-OK`, "sh", e.vault.Dir)
			if !strings.Contains(string(r.stdout), "SHOWN-OK") {
				t.Fatalf("BREACH (denial of service): vault.visible %s (in the work tree, not in the gate's view tree) stops the session: exit %d\nstderr:\n%s", c.folder, r.code, r.stderr)
			}
			for _, line := range strings.Split(string(r.stdout), "\n") {
				if strings.HasPrefix(line, "FOUND") {
					t.Errorf("BREACH: %s", line)
				}
			}
		})
	}
}

// TestRTView3WithheldLaterWhitedOut (held): a note in force when the
// gate first wrote the tree is withheld by a later commit whose content
// carries new text: the tree keeps the path with that content; the next
// session (vault root and a vault.visible folder, every backend) must
// not see it, nor reach the tree by a committed link into .git, the
// tree's own path or the runtime's staging path.
func TestRTView3WithheldLaterWhitedOut(t *testing.T) {
	for _, vis := range []string{"", ", visible: [00-global, 20-domains]"} {
		name := "root"
		if vis != "" {
			name = "visible"
		}
		t.Run(name, func(t *testing.T) {
			e := setup(t, layout{name: "beside/root"})
			note := "20-domains/infra/kept.md"
			rtviewWrite(t, e, map[string]string{note: "---\ntitle: Kept\n---\nfine at first\n"}, true)
			rtviewGate(t, e, "once")
			rtviewWrite(t, e, map[string]string{note: "---\ntitle: Kept\nwithheld: {by: \"human:curator\", reason: poisoned}\n---\nRTVIEW3-KEPT poisoned text\n"}, true)
			for name, target := range map[string]string{
				"20-domains/l-tree":     "../.git/fedmem-view-tree",
				"20-domains/l-abs-tree": filepath.Join(e.vault.Dir, ".git", "fedmem-view-tree"),
				"20-domains/l-stage0":   "/tmp/.fedmem-view-tree-0",
				"20-domains/l-stage1":   "/tmp/.fedmem-view-tree-1",
			} {
				must(t, os.Symlink(target, filepath.Join(e.vault.Dir, name)))
			}
			rtviewGit(t, e, "add", "-A", ".")
			rtviewGit(t, e, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "links")
			if uid := e.vaultOwner(); uid != 0 {
				must(t, testutil.ChownTree(e.vault.Dir, uid, uid))
			}
			rtviewGate(t, e, "once")
			kept, err := os.ReadFile(filepath.Join(e.vault.Dir, ".git", "fedmem-view-tree", note))
			if err != nil || !strings.Contains(string(kept), "RTVIEW3-KEPT") {
				t.Logf("the tree does not keep the withheld note's new content (%v): nothing to hide", err)
			}
			rtview3Run(t, e, rtviewProfile(t, e, "{view: in-force"+vis+"}"), "a note withheld after the tree held it",
				`grep -rlR RTVIEW3-KEPT "$1" /tmp 2>/dev/null | sed 's/^/FOUND /'; [ -e "$1/`+note+`" ] && echo "FOUND `+note+`"; cat "$1/00-global/AGENT.md" >/dev/null && echo SHOWN-OK`)
		})
	}
}

// TestRTView3StagingTreeGone (held): under every backend the tree's
// staging mount (/tmp/.fedmem-view-tree-N, the layer's /tmp/.fedmem-view-N)
// is gone before the agent runs: not a path, not in the mount table, not
// a descriptor of any process the agent sees, not through /proc/*/root.
// (The overlay's options in mountinfo still name the staging paths,
// lowerdir+=/tmp/.fedmem-view-tree-N: a name, nothing reachable.)
func TestRTView3StagingTreeGone(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	note := "20-domains/infra/kept.md"
	rtviewWrite(t, e, map[string]string{note: "---\ntitle: Kept\n---\nfine at first\n"}, true)
	rtviewGate(t, e, "once")
	rtviewWrite(t, e, map[string]string{note: "---\ntitle: Kept\nstatus: deprecated\n---\nRTVIEW3-STAGE deprecated text\n"}, true)
	rtviewGate(t, e, "once")
	script := `
ls -a /tmp | grep fedmem-view | sed 's/^/FOUND tmp /'
cat /proc/self/mountinfo /proc/[0-9]*/mountinfo 2>/dev/null | awk '$5 ~ /fedmem-view/ {print "FOUND mount point " $5}' | sort -u
for f in /proc/[0-9]*/fd/* /proc/[0-9]*/cwd /proc/[0-9]*/root; do l=$(readlink "$f" 2>/dev/null); case "$l" in *fedmem-view*) echo "FOUND fd $f -> $l";; esac; done
for p in /proc/[0-9]*/root/tmp/.fedmem-view-tree-0 /proc/[0-9]*/root/tmp/.fedmem-view-tree-1; do [ -e "$p" ] && echo "FOUND $p"; done
grep -rl RTVIEW3-STAGE "$1" /tmp /proc/1/root/tmp 2>/dev/null | sed 's/^/FOUND /'
cat "$1/00-global/AGENT.md" >/dev/null && echo SHOWN-OK`
	for _, vis := range []string{"", ", visible: [00-global, 20-domains]"} {
		rtview3Run(t, e, rtviewProfile(t, e, "{view: in-force"+vis+"}"), "the view tree's staging"+vis, script)
	}
}

// TestRTView3NewFolderReceipt (held): a note in force the gate writes
// into new nested folders of the tree while a session runs shows to it
// (docs/profiles.md, "During a session"); the agent's read of it must be
// in the read receipt (the recorder marks the tree's folders for new
// subfolders, overlay_linux.go viewMarks/newDir).
func TestRTView3NewFolderReceipt(t *testing.T) {
	for _, vis := range []string{"", ", visible: [00-global, 10-projects]"} {
		name := "root"
		if vis != "" {
			name = "visible"
		}
		t.Run(name, func(t *testing.T) {
			e := setup(t, layout{name: "beside/root"})
			rtviewGate(t, e, "once")
			rel := "10-projects/fresh/deeper/late.md" // 10-projects holds a note in force: in the tree
			wait := rtview3Session(t, e, rtviewProfile(t, e, "{view: in-force"+vis+"}"), rtview3Wait+`cat "$1/`+rel+`" 2>&1; echo; echo SHOWN-OK`)
			rtviewWrite(t, e, map[string]string{rel: "---\ntitle: Late\n---\nRTVIEW3-LATE in force\n"}, true)
			rtviewGate(t, e, "once")
			r := wait()
			if !strings.Contains(string(r.stdout), "SHOWN-OK") {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(string(r.stdout), "RTVIEW3-LATE") {
				t.Fatalf("the note written during the session was not shown to it (docs/profiles.md says it is): %s", r.stdout)
			}
			vr, _ := r.report["vault_reads"].(map[string]any)
			reads, _ := vr["reads"].([]any)
			for _, x := range reads {
				if m, _ := x.(map[string]any); m["path"] == rel {
					return
				}
			}
			t.Errorf("BREACH: the agent read %s (written into new folders of the view tree during the session), the receipt does not list it: %v", rel, vr)
		})
	}
}

// TestRTView3Layouts (held): in every layout (workdir in the vault, the
// vault in the workdir, gate-owned, an unprivileged caller), a note the
// tree kept after a later commit withheld it, an untracked note and a
// note edited in place after the gate ran are not shown — in the vault
// and through the workdir.
func TestRTView3Layouts(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			rel, err := filepath.Rel(e.vault.Dir, e.workdir)
			if err != nil || strings.HasPrefix(rel, "..") {
				rel = "20-domains"
			}
			kept := filepath.Join(rel, "kept.md")
			edited := filepath.Join(rel, "edited.md")
			rtviewWrite(t, e, map[string]string{kept: "---\ntitle: Kept\n---\nfine\n", edited: "---\ntitle: Edited\n---\nfine\n"}, true)
			rtviewGate(t, e, "once")
			rtviewWrite(t, e, map[string]string{kept: "---\ntitle: Kept\nstatus: deprecated\n---\nRTVIEW3-L-KEPT\n"}, true)
			rtviewGate(t, e, "once")
			rtviewWrite(t, e, map[string]string{
				filepath.Join(rel, "untracked.md"): "---\ntitle: U\nstatus: draft\n---\nRTVIEW3-L-UNTRACKED\n",
				edited:                             "---\ntitle: Edited\nwithheld: {reason: poisoned}\n---\nRTVIEW3-L-EDITED\n",
			}, false)
			r := e.run(t, []string{"--profile", rtviewProfile(t, e, "{view: in-force}")}, "sh", "-c", rtviewGrepScript+`
grep -rl RTVIEW3-L "$PWD" . 2>/dev/null | sed 's/^/FOUND cwd /'; true`, "sh", e.vault.Dir, "RTVIEW3-L-KEPT", "RTVIEW3-L-UNTRACKED", "RTVIEW3-L-EDITED")
			out := string(r.stdout)
			if r.code != 0 || !strings.Contains(out, "SHOWN-OK") {
				t.Fatalf("exit %d\n%s\n%s", r.code, out, r.stderr)
			}
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(line, "FOUND ") {
					t.Errorf("BREACH: layout %s: %s", l.name, line)
				}
			}
			if strings.Contains(string(r.stderr), "view") {
				t.Logf("fedmem-run: %s", r.stderr)
			}
		})
	}
}

// rtview3Inflate inflates every loose object below argv[1] and prints
// FOUND for one holding the marker (a note's text in the history).
const rtview3Inflate = `
import os, sys, zlib
for d, _, fs in os.walk(sys.argv[1]):
    for f in fs:
        try:
            b = zlib.decompress(open(os.path.join(d, f), "rb").read())
        except Exception:
            continue
        if b"RTVIEW3-VISLINK withheld" in b:
            print("FOUND the withheld note's text in object", os.path.join(d, f))
`

// TestRTView3VisibleThroughLink (BREACH): a committed link in force (links
// are not judged: a link is in force, and the view tree holds it as a
// link) that leads a vault.visible folder into the vault's .git or the
// view tree — `10-projects/l -> VAULT/.git`, `visible: [10-projects/l/objects]`
// — must not show the repository's objects (every version of every note),
// the view tree (which keeps a withheld note's path with its withheld
// text) or another folder of the vault (`10-projects/l -> VAULT`, `visible: [10-projects/l/20-domains]`):
// each is shown, its notes not in force included, because the visible
// folder's hide list is computed for the path as named (hideUnder of
// "10-projects/l/..."), while the bind — Mount.Source in the live vault
// and Mount.ViewTree in the tree, both cloned by path (open_tree follows
// links) — is of the link's target. Root cause: mounts/plan.go addVault
// (b.exists Lstat's only the last component; the visible path is not
// resolved nor refused when a folder on it is a link) and viewed
// (ViewTree joined under the tree without a check), sandbox/pid1/
// mount_linux.go cloneTree (no AT_SYMLINK_NOFOLLOW / RESOLVE_NO_SYMLINKS
// for the tree; the source itself is pinned only when writable).
func TestRTView3VisibleThroughLink(t *testing.T) {
	for _, c := range []struct{ vis, target string }{
		{"10-projects/l/objects", ".git"},
		{"10-projects/l/20-domains", ".git/fedmem-view-tree"},
		{"10-projects/l/20-domains", "."},
	} {
		t.Run(c.target, func(t *testing.T) {
			e := setup(t, layout{name: "beside/root"})
			rtviewWrite(t, e, map[string]string{"20-domains/w.md": "---\ntitle: W\n---\nRTVIEW3-VISLINK was in force\n"}, true)
			rtviewGate(t, e, "once")
			rtviewWrite(t, e, map[string]string{"20-domains/w.md": "---\ntitle: W\nwithheld: {reason: poisoned}\n---\nRTVIEW3-VISLINK withheld\n"}, true)
			must(t, os.Symlink(filepath.Join(e.vault.Dir, c.target), filepath.Join(e.vault.Dir, "10-projects/l")))
			rtviewGit(t, e, "add", "-A", ".")
			rtviewGit(t, e, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "link")
			rtviewGate(t, e, "once")
			if _, err := os.Lstat(filepath.Join(e.vault.Dir, ".git/fedmem-view-tree/10-projects/l")); err != nil {
				t.Logf("the link is not in the view tree: %v", err)
			}
			prof := rtviewProfile(t, e, "{view: in-force, visible: [00-global, \""+c.vis+"\"]}")
			r := e.run(t, []string{"--profile", prof}, "sh", "-c", `d="$1/`+c.vis+`"; n=$(ls -A "$d" 2>/dev/null | wc -l); [ "$n" -gt 0 ] && echo "FOUND $n entries in $d: $(ls -A "$d" | head -5 | tr '\n' ' ')"; grep -rl RTVIEW3-VISLINK "$1" 2>/dev/null | sed 's/^/FOUND /'; python3 -c "$2" "$d" 2>/dev/null; cat "$1/00-global/AGENT.md" >/dev/null && echo SHOWN-OK`, "sh", e.vault.Dir, rtview3Inflate)
			if r.code == 125 {
				t.Logf("refused (fail closed): %s", r.stderr)
				return
			}
			if !strings.Contains(string(r.stdout), "SHOWN-OK") {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			for _, line := range strings.Split(string(r.stdout), "\n") {
				if strings.HasPrefix(line, "FOUND") {
					t.Errorf("BREACH: vault.visible through a committed link: %s", line)
				}
			}
		})
	}
}

// rtview3Session starts script under prof in the background (it must
// touch "$FEDMEM_INBOX/ready" and wait for "$FEDMEM_INBOX/go"); it returns
// once the agent is ready, with a function that says go and waits for
// the run.
func rtview3Session(t *testing.T, e *env, prof, script string, args ...string) func() *run {
	t.Helper()
	done := make(chan *run, 1)
	go func() {
		done <- e.run(t, []string{"--profile", prof}, append([]string{"sh", "-c", script, "sh", e.vault.Dir}, args...)...)
	}()
	deadline := time.Now().Add(90 * time.Second)
	for {
		ready, _ := filepath.Glob(filepath.Join(e.vault.Dir, "90-inbox", "*", "ready"))
		if len(ready) > 0 {
			dir := filepath.Dir(ready[0])
			return func() *run {
				must(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o644))
				return <-done
			}
		}
		select {
		case r := <-done:
			t.Fatalf("the agent ended before it was ready: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent never said ready")
		}
		time.Sleep(20 * time.Millisecond) // polling for the agent's file (an event)
	}
}

const rtview3Wait = `touch "$FEDMEM_INBOX/ready"; i=0; while [ $i -lt 900 ] && ! [ -e "$FEDMEM_INBOX/go" ]; do sleep 0.1; i=$((i+1)); done; `

// TestRTView3WithheldDuringSession (BREACH, documented but avoidable): a
// note in force when the session starts, which the agent has not read
// yet, is withheld by a commit during the session (a curator's withhold
// because the new version is poisoned, a remote's sync): the gate
// rewrites the tree's file in place with the withheld text, and the
// running agent reads it. docs/profiles.md ("During a session") accepts
// that the path stays; the text need not: the tree could keep the last
// text in force (or nothing) at a path HEAD hides — the path still
// exists for the running session, and new sessions hide it anyway. Root
// cause: gate/viewfile/tree.go syncTree (a hidden path already in the
// tree is written with HEAD's content) and writeAt/rewrite (in place, so
// running overlays see it).
func TestRTView3WithheldDuringSession(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	note := "20-domains/infra/during.md"
	rtviewWrite(t, e, map[string]string{note: "---\ntitle: During\n---\nfine at start\n"}, true)
	rtviewGate(t, e, "once")
	wait := rtview3Session(t, e, rtviewProfile(t, e, "{view: in-force}"), rtview3Wait+`cat "$1/`+note+`" 2>&1; echo SHOWN-OK`)
	rtviewWrite(t, e, map[string]string{note: "---\ntitle: During\nwithheld: {by: \"human:curator\", reason: poisoned}\n---\nRTVIEW3-DURING poisoned text\n"}, true)
	rtviewGate(t, e, "once")
	r := wait()
	if !strings.Contains(string(r.stdout), "SHOWN-OK") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(string(r.stdout), "RTVIEW3-DURING") {
		t.Errorf("BREACH: the running agent reads the withheld text of a note withheld during its session (the view tree holds it):\n%s", r.stdout)
	}
}

// TestRTView3InboxLeftovers (held): what an agent leaves in its inbox —
// a FIFO, a unix socket, a deep tree of folders, a link to the view tree,
// odd names — does not stop the next session (the inbox is a mount
// point of the view's top layer) nor show it the tree.
func TestRTView3InboxLeftovers(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	e := setup(t, layout{name: "beside/root"})
	rtviewWrite(t, e, map[string]string{"20-domains/k.md": "---\ntitle: K\n---\nfine\n"}, true)
	rtviewGate(t, e, "once")
	rtviewWrite(t, e, map[string]string{"20-domains/k.md": "---\ntitle: K\nstatus: deprecated\n---\nRTVIEW3-LEFT\n"}, true)
	rtviewGate(t, e, "once")
	prof := rtviewProfile(t, e, "{view: in-force}")
	r := e.run(t, []string{"--profile", prof}, "sh", "-c", `cd "$FEDMEM_INBOX" && mkfifo fifo && python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.bind("sock")' && mkdir -p "$(printf 'd/%.0s' $(seq 1 60))" && ln -s "$1/.git/fedmem-view-tree" tree && ln -s /tmp/.fedmem-view-tree-0 stage && mkdir "$(printf 'odd\nname\tx')" && echo LEFT-OK`, "sh", e.vault.Dir)
	if !strings.Contains(string(r.stdout), "LEFT-OK") {
		t.Fatalf("the first agent: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rtview3Run(t, e, prof, "the next session after an inbox full of leftovers", `grep -rlR RTVIEW3-LEFT "$1" 2>/dev/null | sed 's/^/FOUND /'; cat "$1/00-global/AGENT.md" >/dev/null && echo SHOWN-OK`)
}

// TestRTView3TreeIgnoresModes (BREACH): the vault's owner keeps a folder
// from other users — and from agents, which run as an unprivileged uid —
// with its mode (`chmod 700 30-clients/private`). Under vault.view: all
// (and before 3812aeb under in-force: the overlay kept the work tree's
// modes) the agent cannot read it; the view tree makes every file in force
// 0644 in folders 0755 ("readable by all: the sandbox's agent reads it"),
// so under in-force the agent reads it, and so does every host user who
// can reach .git. Root cause: gate/viewfile/tree.go fileMode/mkdirs (the
// tree's modes come from the commit's mode only, never from the work
// tree's folders, which Git does not record).
func TestRTView3TreeIgnoresModes(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	rtviewWrite(t, e, map[string]string{"30-clients/private/p.md": "---\ntitle: Private\n---\nRTVIEW3-PRIVATE in force, owner only\n"}, true)
	must(t, os.Chmod(filepath.Join(e.vault.Dir, "30-clients/private"), 0o700))
	rtviewGate(t, e, "once")
	script := `cat "$1/30-clients/private/p.md" 2>&1 | sed 's/^/GOT /'; echo SHOWN-OK`
	all := e.run(t, []string{"--profile", rtviewProfile(t, e, "{view: all}")}, "sh", "-c", script, "sh", e.vault.Dir)
	if !strings.Contains(string(all.stdout), "SHOWN-OK") {
		t.Fatalf("view all: exit %d\n%s\n%s", all.code, all.stdout, all.stderr)
	}
	if strings.Contains(string(all.stdout), "RTVIEW3-PRIVATE") {
		t.Skipf("the agent reads the owner-only folder even under vault.view: all (its uid may read it here): %s", all.stdout)
	}
	in := e.run(t, []string{"--profile", rtviewProfile(t, e, "{view: in-force}")}, "sh", "-c", script, "sh", e.vault.Dir)
	if !strings.Contains(string(in.stdout), "SHOWN-OK") {
		t.Fatalf("view in-force: exit %d\n%s\n%s", in.code, in.stdout, in.stderr)
	}
	if strings.Contains(string(in.stdout), "RTVIEW3-PRIVATE") {
		fi, _ := os.Stat(filepath.Join(e.vault.Dir, ".git/fedmem-view-tree/30-clients/private"))
		t.Errorf("BREACH: an owner-only folder (0700) the agent cannot read under vault.view: all is readable under in-force through the view tree (its copy is %v):\n%s", fi.Mode(), in.stdout)
	}
}

// TestRTView3HostSubmountReceipt (held): a mount the host has inside the vault
// (a share bound under a folder) is put back over the overlay (docs: "a
// mount the host has inside the vault is put back over the overlay
// read-only"). The recorder takes the view tree's folders' link counts
// for the overlay's (noSubdirs): the tree's 10-projects has no subfolder,
// the overlay's has the mount point. The agent's read of a note on that
// mount must be in the receipt as under vault.view: all.
func TestRTView3HostSubmountReceipt(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	rtviewGate(t, e, "once")
	mnt := filepath.Join(e.vault.Dir, "10-projects", "share")
	must(t, os.MkdirAll(mnt, 0o755))
	if err := unix.Mount("rt3v", mnt, "tmpfs", 0, "size=1m,mode=0755"); err != nil {
		t.Skipf("mount a tmpfs in the vault: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	must(t, os.WriteFile(filepath.Join(mnt, "s.md"), []byte("---\ntitle: Shared\n---\nRTVIEW3-SHARE\n"), 0o644))
	rel := "10-projects/share/s.md"
	for _, v := range []string{"all", "in-force"} {
		r := e.run(t, []string{"--profile", rtviewProfile(t, e, "{view: "+v+"}")}, "sh", "-c", `cat "$1/`+rel+`" && echo SHOWN-OK`, "sh", e.vault.Dir)
		if !strings.Contains(string(r.stdout), "SHOWN-OK") {
			t.Fatalf("view %s: exit %d\n%s\n%s", v, r.code, r.stdout, r.stderr)
		}
		vr, _ := r.report["vault_reads"].(map[string]any)
		reads, _ := vr["reads"].([]any)
		// Listed, or at least counted as an open it could not name (a
		// "maybe" for audit readers): never silent.
		un, _ := vr["unattributed"].(float64)
		found := un > 0
		for _, x := range reads {
			if m, _ := x.(map[string]any); m["path"] == rel {
				found = true
			}
		}
		t.Logf("view %s: %v", v, vr)
		switch {
		case v == "all" && !found:
			t.Logf("vault.view: all does not list a read on a host submount either (%v): not a regression of the view", vr)
			return
		case !found:
			t.Errorf("BREACH: under vault.view: in-force the read of %s (a host mount inside the vault) is not in the receipt, under all it is: %v", rel, vr)
		}
	}
}

// rtview3Reader reads argv[1] over and over until $FEDMEM_INBOX/stop exists and
// prints how many reads were not one whole version (a header line, then
// 256 KiB of one letter).
const rtview3Reader = `
import os, sys
p, stop = sys.argv[1], os.path.join(os.environ["FEDMEM_INBOX"], "stop")
open(os.path.join(os.environ["FEDMEM_INBOX"], "ready"), "w").close()
reads = torn = 0
while not os.path.exists(stop):
    try:
        b = open(p, "rb").read()
    except OSError:
        continue
    reads += 1
    body = b.split(b"---\n", 2)[-1]
    if len(body) != 262144 or body.count(body[:1]) != len(body):
        torn += 1
        if torn < 4:
            print("TORN read: %d bytes" % len(b), flush=True)
print("READS %d TORN %d" % (reads, torn))
print("SHOWN-OK")
`

// TestRTView3TornReads (BREACH): the gate rewrites a file of the view
// tree in place (O_TRUNC, then write) when a commit changes it, so a
// running agent reading the note meanwhile reads it empty or cut short
// (a contract, a policy, a runbook half there). The gate's sync writes
// the work tree by rename so that "a reader (a sandbox) sees either the
// old or the new content of a file, never a mix" (gate/remote/sync.go
// applyWorkTree); the tree gave that up. Root cause: gate/viewfile/
// tree.go writeAt → rewrite (in place, to keep a running overlay's
// inode).
func TestRTView3TornReads(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	e := setup(t, layout{name: "beside/root"})
	note := "20-domains/infra/big.md"
	version := func(c byte) string {
		return "---\ntitle: Big\n---\n" + strings.Repeat(string(c), 262144)
	}
	rtviewWrite(t, e, map[string]string{note: version('a')}, true)
	rtviewGate(t, e, "once")
	done := make(chan *run, 1)
	go func() {
		done <- e.run(t, []string{"--profile", rtviewProfile(t, e, "{view: in-force}")}, "python3", "-c", rtview3Reader, filepath.Join(e.vault.Dir, note))
	}()
	deadline := time.Now().Add(90 * time.Second)
	var ready []string
	for len(ready) == 0 {
		ready, _ = filepath.Glob(filepath.Join(e.vault.Dir, "90-inbox", "*", "ready"))
		select {
		case r := <-done:
			t.Fatalf("the agent ended early: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent never said ready")
		}
		if len(ready) == 0 {
			time.Sleep(20 * time.Millisecond) // polling for the agent's file (an event)
		}
	}
	for i := 0; i < 20; i++ {
		rtviewWrite(t, e, map[string]string{note: version(byte('b' + i))}, true)
		rtviewGate(t, e, "once")
	}
	must(t, os.WriteFile(filepath.Join(filepath.Dir(ready[0]), "stop"), nil, 0o644))
	r := <-done
	out := string(r.stdout)
	if !strings.Contains(out, "SHOWN-OK") {
		t.Fatalf("exit %d\n%s\n%s", r.code, out, r.stderr)
	}
	t.Logf("%s", out)
	if strings.Contains(out, "TORN read") {
		t.Errorf("BREACH: a running agent read a note of the view tree cut short while the gate rewrote it:\n%s", out)
	}
}

// TestRTView3KeptOddNames (held): notes in force when the tree was
// written, withheld later, whose names the manifest writes Go-quoted (a
// tab, a newline, a backslash, a leading quote) or that are not ASCII:
// the tree keeps each path with its withheld text, and the whiteout the
// launcher decodes from the manifest must land on exactly that name.
// (A tab or a newline in a name makes the tree unwritable on a rebuild:
// gate/viewfile TestRTView3UnwritableTree.)
func TestRTView3KeptOddNames(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	names := []string{"20-domains/\"quoted.md", "20-domains/back\\slash.md", "20-domains/ünï.md", "20-domains/sp ace .md"}
	files := map[string]string{}
	for _, n := range names {
		files[n] = "---\ntitle: Odd\n---\nfine\n"
	}
	rtviewWrite(t, e, files, true)
	out := rtviewGate(t, e, "once")
	if ents, err := os.ReadDir(filepath.Join(e.vault.Dir, ".git/fedmem-view-tree/20-domains")); err != nil || len(ents) < len(names) {
		t.Fatalf("the tree does not hold the odd names (%v, %d entries):\n%s\n%v", err, len(ents), out, rtviewManifest(t, e))
	}
	for _, n := range names {
		files[n] = "---\ntitle: Odd\nstatus: deprecated\n---\nRTVIEW3-ODDNAME\n"
	}
	rtviewWrite(t, e, files, true)
	rtviewGate(t, e, "once")
	kept := 0
	for _, n := range names {
		if b, err := os.ReadFile(filepath.Join(e.vault.Dir, ".git/fedmem-view-tree", n)); err == nil && strings.Contains(string(b), "RTVIEW3-ODDNAME") {
			kept++
		}
	}
	t.Logf("%d of %d odd names kept in the tree with their withheld text", kept, len(names))
	rtviewHunt(t, e, rtviewProfile(t, e, "{view: in-force}"), "withheld notes with odd names the tree kept", "RTVIEW3-ODDNAME")
}

// TestRTView3VisibleLinkToHomeSecrets (BREACH with an unprivileged
// caller, under vault.view: all too — not caused by 3812aeb; held for a
// root caller only because the agent's uid cannot read root's 0700
// folders): the same committed link with
// vault.visible, pointed at the caller's home: `10-projects/l -> HOME`,
// `visible: [10-projects/l/.ssh]` binds the home's .ssh (masked at its
// own path) at the vault path, where no mask is. Pre-existing (the
// plan's source resolves the link too); the view tree resolves it the
// same way. Root cause: as TestRTView3VisibleThroughLink (mounts/plan.go
// addVault: a visible path through a link is bound as its target).
func TestRTView3VisibleLinkToHomeSecrets(t *testing.T) {
	for _, c := range []struct {
		v string
		l layout
	}{{"all", layout{name: "beside/root"}}, {"in-force", layout{name: "beside/root"}}, {"all", layout{name: "beside/user", gateOwned: true, user: true}}, {"in-force", layout{name: "beside/user", gateOwned: true, user: true}}} {
		v := c.v
		t.Run(c.l.name+"/"+v, func(t *testing.T) {
			e := setup(t, c.l)
			must(t, os.Symlink(filepath.Join(e.home, ".gnupg"), filepath.Join(e.vault.Dir, "10-projects/l")))
			if uid := e.vaultOwner(); uid != 0 {
				must(t, os.Lchown(filepath.Join(e.vault.Dir, "10-projects/l"), uid, uid))
			}
			rtviewGit(t, e, "add", "-A", ".")
			rtviewGit(t, e, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "link")
			rtviewGate(t, e, "once")
			prof := rtviewProfile(t, e, "{view: "+v+", visible: [00-global, \"10-projects/l/private-keys-v1.d\"]}")
			r := e.run(t, []string{"--profile", prof}, "sh", "-c", `ls -la "$1/10-projects/l/private-keys-v1.d" 2>&1 | sed 's/^/LS /'; grep -rl FAKE-GPG-KEY "$1" "$HOME" 2>/dev/null | sed 's/^/FOUND /'; cat "$1/00-global/AGENT.md" >/dev/null && echo SHOWN-OK`, "sh", e.vault.Dir)
			if r.code == 125 {
				t.Logf("refused (fail closed): %s", r.stderr)
				return
			}
			if !strings.Contains(string(r.stdout), "SHOWN-OK") {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			t.Logf("%s", r.stdout)
			for _, line := range strings.Split(string(r.stdout), "\n") {
				if strings.HasPrefix(line, "FOUND") {
					t.Errorf("BREACH: vault.visible through a committed link to the caller's home (view %s): %s", v, line)
				}
			}
		})
	}
}
