package escape

// Fourth red-team round of `vault.view: in-force`, against commits
// 77fa6f7 and 9f2c653 (the view tree is the conflict index's allow-list,
// its folder pages are filtered by the gate, TreeVersion 2: a session
// whites out, and filters pages for, only the hidden paths the tree still
// holds). Each test fails with "BREACH:" when the agent reaches text or a
// listing of a note not in force. Tests marked "held" pass and stay as
// regression tests. Unit-level versions: gate/viewfile/rt4_test.go,
// gate/decide/rt4_test.go.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
)

// rtview4Git is rtview3Git that also works in a vault another user owns
// (safe.directory); objects it writes are chowned by rtview4Top.
func rtview4Git(t *testing.T, e *env, stdin string, args ...string) string {
	t.Helper()
	return rtview3Git(t, e, stdin, append([]string{"-c", "safe.directory=*"}, args...)...)
}

// rtview4Top commits HEAD's tree with the top-level folder name holding
// the raw tree built from entries (mode, name, object) — a remote's
// commit that no Git porcelain would write — and checks it out.
func rtview4Top(t *testing.T, e *env, name string, entries ...[3]string) string {
	t.Helper()
	var raw strings.Builder
	for _, en := range entries {
		raw.WriteString(en[0] + " " + en[1] + "\x00" + string(hexBytes(t, en[2])))
	}
	sub := rtview4Git(t, e, raw.String(), "hash-object", "-t", "tree", "-w", "--literally", "--stdin")
	var keep []string
	for _, l := range strings.Split(rtview4Git(t, e, "", "ls-tree", "HEAD"), "\n") {
		if l != "" && !strings.HasSuffix(l, "\t"+name) {
			keep = append(keep, l)
		}
	}
	root := rtview4Git(t, e, strings.Join(keep, "\n")+"\n040000 tree "+sub+"\t"+name+"\n", "mktree")
	commit := rtview4Git(t, e, "", "commit-tree", root, "-p", "HEAD", "-m", "a remote's commit")
	rtview4Git(t, e, "", "update-ref", "HEAD", commit)
	rtview4Git(t, e, "", "reset", "-q", "--hard")
	if uid := e.vaultOwner(); uid != 0 {
		must(t, testutil.ChownTree(e.vault.Dir, uid, uid))
	}
	return commit
}

// rtview4TreeAtHead fails the test unless the gate's manifest names a
// view tree (else the session scans the work tree: another test).
func rtview4TreeAtHead(t *testing.T, e *env, out string) {
	t.Helper()
	m := rtviewManifest(t, e)
	head := rtview4Git(t, e, "", "rev-parse", "HEAD")
	if m == nil || !strings.Contains(m["text"].(string), "\nt fedmem-view-tree\t2 "+head) {
		t.Fatalf("no manifest naming a view tree at HEAD %s:\n%s\n%v", head, out, m)
	}
}

// TestRTView4PaddedFolderKeptPath (BREACH): a note in force is in the
// view tree; a later remote commit (a sync, a curator's push) gives its
// folder the zero-padded mode "040000" and withholds it. The conflict
// index no longer walks the folder, so the note is neither shown nor
// hidden in the manifest; the tree's writer (go-git's diff reads 040000
// as a folder) finds the note changed and not shown and keeps the path
// with its old text; no whiteout, since the manifest does not hide it.
// Every new session reads a note withheld at HEAD. Root cause:
// gate/viewfile/tree.go syncTree (a kept path relies on the manifest to
// hide it) with gate/decide/conflictindex.go diffDir/addEntry (a folder
// not walked: its notes leave idx.view and idx.shown).
func TestRTView4PaddedFolderKeptPath(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	inForce := rtview4Git(t, e, "---\ntitle: Padded kept\n---\nRTVIEW4-PADKEPT text\n", "hash-object", "-w", "--stdin")
	inner := rtview4Git(t, e, "100644 blob "+inForce+"\tsecret.md\n", "mktree")
	rtview4Top(t, e, "25-pad", [3]string{"40000", "inner", inner})
	rtview4TreeAtHead(t, e, rtviewGate(t, e, "once"))
	withheld := rtview4Git(t, e, "---\ntitle: Padded kept\nwithheld: {by: \"human:curator\", reason: poisoned}\n---\nRTVIEW4-PADKEPT text\n", "hash-object", "-w", "--stdin")
	inner = rtview4Git(t, e, "100644 blob "+withheld+"\tsecret.md\n", "mktree")
	rtview4Top(t, e, "25-pad", [3]string{"040000", "inner", inner})
	rtview4TreeAtHead(t, e, rtviewGate(t, e, "once"))
	rtviewHunt(t, e, rtviewProfile(t, e, "{view: in-force}"), "a note withheld at HEAD under a folder turned to mode 040000", "RTVIEW4-PADKEPT")
}

// TestRTView4StaleNotShownListed (BREACH): a note in force until a
// stale_after of mode 100664 (judged, never shown: not in the tree)
// listed by its folder's index.md. The gate filters the tree's pages of
// the notes hidden at its commit only (m.Hidden), not of those stale by
// a time (m.Stale); the launcher filters pages only for the hidden paths
// the tree holds. A session after stale_after reads a page listing a
// note not in force (title and link). Root cause: gate/viewfile/
// viewfile.go newJudged (names from m.Hidden only) with mounts/view.go
// LoadView (v.hide: only paths the tree has).
func TestRTView4StaleNotShownListed(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	rtviewGate(t, e, "once")
	note := rtview4Git(t, e, "---\ntitle: Soon stale\nstale_after: 2001-01-01T00:00:00Z\n---\nstale body\n", "hash-object", "-w", "--stdin")
	page := rtview4Git(t, e, "# Index\n\nNotes in this folder. Written by the fedmem gate.\n\n- [RTVIEW4-STALETITLE](s.md)\n- [Other](o.md)\n", "hash-object", "-w", "--stdin")
	other := rtview4Git(t, e, "---\ntitle: Other\n---\no\n", "hash-object", "-w", "--stdin")
	rtview4Top(t, e, "25-stale", [3]string{"100644", "index.md", page}, [3]string{"100644", "o.md", other}, [3]string{"100664", "s.md", note})
	rtview4TreeAtHead(t, e, rtviewGate(t, e, "once"))
	r := rtview3Run(t, e, rtviewProfile(t, e, "{view: in-force}"), "a page listing a stale note the tree lacks",
		`grep -l RTVIEW4-STALETITLE "$1/25-stale/index.md" 2>/dev/null | sed 's/^/FOUND /'; grep -q 'o.md' "$1/25-stale/index.md" && cat "$1/00-global/AGENT.md" >/dev/null && echo SHOWN-OK`)
	_ = r
}

// TestRTView4StaleAtSessionStart (held): a note in force when the gate
// wrote the tree (its stale_after passed, not swept yet) is hidden at
// session start: the tree holds it, so the session whites it out and
// filters its folder's pages (index.md, log.md, an archive page) of
// its lines; under the whole vault and a vault.visible folder.
func TestRTView4StaleAtSessionStart(t *testing.T) {
	for _, vis := range []string{"", ", visible: [00-global, 20-domains]"} {
		name := map[bool]string{true: "root", false: "visible"}[vis == ""]
		t.Run(name, func(t *testing.T) {
			e := setup(t, layout{name: "beside/root"})
			rtviewWrite(t, e, map[string]string{
				"20-domains/st/s.md":            "---\ntitle: Stale one\nstale_after: 2001-01-01T00:00:00Z\n---\nRTVIEW4-STALEBODY\n",
				"20-domains/st/o.md":            "---\ntitle: Other\n---\no\n",
				"20-domains/st/index.md":        "# Index\n\n- [RTVIEW4-STALEIDX](s.md)\n- [Other](o.md)\n",
				"20-domains/st/log.md":          "# Log\n\n- promoted [RTVIEW4-STALELOG](s.md) from session x\n",
				"20-domains/st/index/000001.md": "# Index\n\n- [RTVIEW4-STALEARCH](../s.md)\n",
			}, true)
			rtview4TreeAtHead(t, e, rtviewGate(t, e, "once"))
			rtviewHunt(t, e, rtviewProfile(t, e, "{view: in-force"+vis+"}"), "a note stale at session start", "RTVIEW4-STALEBODY", "RTVIEW4-STALEIDX", "RTVIEW4-STALELOG", "RTVIEW4-STALEARCH")
		})
	}
}

// TestRTView4HiddenFolderPages (held): notes hidden from their first
// commit — withheld, a dot file, a dot folder's files, a draft at the
// vault's root — never reach the tree, and the pages that list them
// (the root's index.md, an archive page, a page renamed into place in a
// later commit that touches no other file of its folder) are filtered:
// the session, which makes no whiteout for them, shows none.
func TestRTView4HiddenFolderPages(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	rtviewGate(t, e, "once")
	rtviewWrite(t, e, map[string]string{
		"20-domains/h/w.md":      "---\ntitle: W\nwithheld: {reason: x}\n---\nRTVIEW4-HW\n",
		"20-domains/h/.dot.md":   "RTVIEW4-HDOT\n",
		"20-domains/h/.d/in.md":  "RTVIEW4-HDOTDIR\n",
		"20-domains/h/ok.md":     "ok\n",
		"root-draft.md":          "---\nstatus: draft\n---\nRTVIEW4-HRD\n",
		"index.md":               "# Index\n\n- [RTVIEW4-HROOT](root-draft.md)\n",
		"20-domains/h/notes.txt": "- [RTVIEW4-HREN](w.md)\n- [RTVIEW4-HRENDOT](.dot.md)\n",
	}, true)
	rtviewGate(t, e, "once")
	rtviewWrite(t, e, map[string]string{"20-domains/h/index/000001.md": "# Index\n\n- [RTVIEW4-HARCH](../w.md)\n"}, true)
	rtviewGate(t, e, "once")
	rtviewGit(t, e, "mv", "20-domains/h/notes.txt", "20-domains/h/log.md")
	rtviewGit(t, e, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "rename into a page")
	if uid := e.vaultOwner(); uid != 0 {
		must(t, testutil.ChownTree(e.vault.Dir, uid, uid))
	}
	rtview4TreeAtHead(t, e, rtviewGate(t, e, "once"))
	rtviewHunt(t, e, rtviewProfile(t, e, "{view: in-force}"), "hidden-from-start notes and their pages", "RTVIEW4-HW", "RTVIEW4-HDOT", "RTVIEW4-HDOTDIR", "RTVIEW4-HRD", "RTVIEW4-HROOT", "RTVIEW4-HREN", "RTVIEW4-HRENDOT", "RTVIEW4-HARCH")
	if _, err := os.Stat(filepath.Join(e.vault.Dir, ".git", "fedmem-view-tree", "20-domains", "h", "log.md")); err != nil {
		t.Logf("the renamed page is not in the tree: %v", err)
	}
}

// TestRTView4WithheldTextResurfaces (BREACH): a note in force (text A)
// is in the tree; a curator withholds it (the tree keeps A, the manifest
// hides it: every session is fine); a later remote commit brings a clean
// text B under the deprecated file mode 100664 (or "0100644", or with the
// folder at "040000": gate/viewfile TestRTView4WithheldTextResurfaces).
// The conflict index judges B in force (not hidden) but does not show
// it; the tree keeps the path with A; no whiteout. Every new session
// reads the withheld text A. Root cause: gate/viewfile/tree.go syncTree
// (a kept path survives any change to some file mode: sameKind) relying
// on the manifest to hide it.
func TestRTView4WithheldTextResurfaces(t *testing.T) {
	for _, c := range []struct {
		name, via, vis string
		l              layout
	}{
		{"commit", "commit", "", layout{name: "beside/root"}},
		{"visible", "commit", ", visible: [00-global, 25-res]", layout{name: "beside/root"}},
		{"sync", "sync", "", layout{name: "beside/root"}},
		{"gate-owned-user", "commit", "", layout{name: "beside/user", gateOwned: true, user: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := setup(t, c.l)
			var bare string
			if c.via == "sync" {
				// The gate syncs with a remote (policy remote.url) a
				// hostile party can push to.
				bare = filepath.Join(e.base, "remote.git")
				pol := filepath.Join(e.vault.Dir, "00-global", "policy.yaml")
				b, err := os.ReadFile(pol)
				must(t, err)
				rtviewWrite(t, e, map[string]string{"00-global/policy.yaml": string(b) + "\nremote:\n  url: file://" + bare + "\n"}, true)
				rtview4Git(t, e, "", "clone", "-q", "--bare", e.vault.Dir, bare)
			}
			rtviewWrite(t, e, map[string]string{"25-res/r.md": "---\ntitle: Resurface\n---\nRTVIEW4-POISON text A\n"}, true)
			if c.via == "sync" {
				rtview4Git(t, e, "", "push", "-q", bare, "HEAD:refs/heads/main")
			}
			rtview4TreeAtHead(t, e, rtviewGate(t, e, "once"))
			rtviewWrite(t, e, map[string]string{"25-res/r.md": "---\ntitle: Resurface\nwithheld: {by: \"human:curator\", reason: poisoned}\n---\nRTVIEW4-POISON text A\n"}, true)
			if c.via == "sync" {
				rtview4Git(t, e, "", "push", "-q", bare, "HEAD:refs/heads/main")
			}
			rtview4TreeAtHead(t, e, rtviewGate(t, e, "once"))
			prof := rtviewProfile(t, e, "{view: in-force"+c.vis+"}")
			rtviewHunt(t, e, prof, "a withheld note (control)", "RTVIEW4-POISON")
			clean := rtview4Git(t, e, "---\ntitle: Resurface\n---\nclean text B\n", "hash-object", "-w", "--stdin")
			commit := rtview4Top(t, e, "25-res", [3]string{"100664", "r.md", clean})
			if c.via == "sync" {
				// The remote's commit; the gate's HEAD goes back to the
				// withhold and fast-forwards by its sync.
				rtview4Git(t, e, "", "push", "-q", bare, commit+":refs/heads/main")
				rtview4Git(t, e, "", "reset", "-q", "--hard", "HEAD~1")
				if uid := e.vaultOwner(); uid != 0 {
					must(t, testutil.ChownTree(e.vault.Dir, uid, uid))
				}
			}
			out := rtviewGate(t, e, "once")
			if head := rtview4Git(t, e, "", "rev-parse", "HEAD"); head != commit {
				t.Fatalf("HEAD is %s, not the remote's commit %s:\n%s", head, commit, out)
			}
			rtview4TreeAtHead(t, e, out)
			rtviewHunt(t, e, prof, "a withheld text after a later version of mode 100664 (via "+c.via+")", "RTVIEW4-POISON")
		})
	}
}

// TestRTView4StaleArrivesDuringSession (BREACH): the tree takes, during
// a session, "files the gate adds, which are in force" — but the gate
// takes a note whose stale_after has already passed for one in force
// (it judges stale_after as a time for the launcher to apply at the next
// session start) and writes it into the tree. A running session, whose
// whiteouts were fixed before that note existed (or was stale), reads a
// note that is not in force: a new note already past its stale_after,
// and a note in force at start whose new version is past it. Root cause:
// gate/viewfile/tree.go syncTree/writeAt (writes every shown file) with
// gate/decide/conflictindex.go addEntry (shown: f.Hidden == "", a
// stale_after in the past counts as in force).
func TestRTView4StaleArrivesDuringSession(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	rtviewWrite(t, e, map[string]string{"20-domains/sd/old.md": "---\ntitle: Old\n---\nfine at start\n"}, true)
	rtview4TreeAtHead(t, e, rtviewGate(t, e, "once"))
	wait := rtview3Session(t, e, rtviewProfile(t, e, "{view: in-force}"), rtview3Wait+`cat "$1/20-domains/sd/new.md" "$1/20-domains/sd/old.md" 2>&1; echo SHOWN-OK`)
	rtviewWrite(t, e, map[string]string{
		"20-domains/sd/new.md": "---\ntitle: New\nstale_after: 2001-01-01T00:00:00Z\n---\nRTVIEW4-STALENEW\n",
		"20-domains/sd/old.md": "---\ntitle: Old\nstale_after: 2001-01-01T00:00:00Z\n---\nRTVIEW4-STALEOLD\n",
	}, true)
	rtview4TreeAtHead(t, e, rtviewGate(t, e, "once"))
	r := wait()
	if !strings.Contains(string(r.stdout), "SHOWN-OK") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, mk := range []string{"RTVIEW4-STALENEW", "RTVIEW4-STALEOLD"} {
		if strings.Contains(string(r.stdout), mk) {
			t.Errorf("BREACH: the running agent reads %s, a note past its stale_after the gate wrote into the tree during the session", mk)
		}
	}
}

// TestRTView4KeptPageNotRefiltered (BREACH, new with TreeVersion 2): a
// folder page in the tree lists a note that does not exist (pages keep
// the lines of deleted notes); a remote commit makes the page 100664
// (same blob: go-git's diff sees nothing, the index stops showing it, the
// tree keeps it); then the note comes back withheld. The gate re-filters
// only pages it shows; the note never reaches the tree, so the launcher
// makes no whiteout and filters no page for it. The agent reads a page
// that lists the withheld note's title. Root cause: gate/viewfile/
// tree.go refreshPages (shown pages only) with mounts/view.go LoadView
// (v.hide: only hidden paths the tree holds).
func TestRTView4KeptPageNotRefiltered(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	page := rtview4Git(t, e, "# Index\n\n- [RTVIEW4-KEPTPAGE secret title](x.md)\n- [Other](o.md)\n", "hash-object", "-w", "--stdin")
	other := rtview4Git(t, e, "o\n", "hash-object", "-w", "--stdin")
	rtview4Top(t, e, "25-kp", [3]string{"100644", "index.md", page}, [3]string{"100644", "o.md", other})
	rtview4TreeAtHead(t, e, rtviewGate(t, e, "once"))
	rtview4Top(t, e, "25-kp", [3]string{"100664", "index.md", page}, [3]string{"100644", "o.md", other})
	rtview4TreeAtHead(t, e, rtviewGate(t, e, "once"))
	x := rtview4Git(t, e, "---\ntitle: RTVIEW4-KEPTPAGE secret title\nwithheld: {reason: poisoned}\n---\nx\n", "hash-object", "-w", "--stdin")
	rtview4Top(t, e, "25-kp", [3]string{"100664", "index.md", page}, [3]string{"100644", "o.md", other}, [3]string{"100644", "x.md", x})
	rtview4TreeAtHead(t, e, rtviewGate(t, e, "once"))
	rtviewHunt(t, e, rtviewProfile(t, e, "{view: in-force}"), "a kept page listing a withheld note", "RTVIEW4-KEPTPAGE")
}
