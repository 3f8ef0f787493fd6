package escape

// Second red-team round of `vault.view: in-force` (after the fixes of
// the first round, rtview_linux_test.go). Each test puts a note that is
// not in force where a hostile agent run through fedmem-run looks for
// it and fails with "BREACH:" when the agent reaches its text.

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/fedmem/fedmem/test/testutil"
)

// TestRTView2PreManifestWorkTree: the gate judges HEAD's tree but stamps
// the work tree's folders as they are when it writes the manifest. A
// work-tree state that differs from HEAD *before* the manifest is
// written — an untracked note, a note edited (withheld by a curator) and
// not committed, a nested repository's checkout (a submodule's work
// tree: a gitlink the gate does not walk) — is stamped as judged and
// never judged: the launcher trusted the manifest and showed it (the
// overlay was over the work tree). Fixed by the gate's view tree: the
// overlay's lower layer holds only what a judged commit has, in force,
// written from its objects (gate/viewfile).
func TestRTView2PreManifestWorkTree(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	rtviewWrite(t, e, map[string]string{
		"20-domains/infra/edited.md": "---\ntitle: Edited\n---\nfine at HEAD\n",
	}, true)
	// The work tree moves on before the gate writes its manifest.
	rtviewWrite(t, e, map[string]string{
		"20-domains/infra/untracked.md": "---\ntitle: Untracked\nstatus: deprecated\n---\nRTVIEW2-PRE-UNTRACKED\n",
		"20-domains/infra/edited.md":    "---\ntitle: Edited\nwithheld: {by: \"human:curator\", reason: poisoned}\n---\nRTVIEW2-PRE-EDITED\n",
		"10-projects/sub/.git":          "gitdir: ../../.git/modules/sub\n",
		"10-projects/sub/n.md":          "---\ntitle: In a submodule\nstatus: draft\n---\nRTVIEW2-PRE-SUBMODULE\n",
	}, false)
	// 10-projects/sub is a gitlink at HEAD (a submodule), its checkout the
	// folder's files.
	head, err := testutil.Git(e.vault.Dir, "rev-parse", "HEAD")
	must(t, err)
	rtviewGit(t, e, "update-index", "--add", "--cacheinfo", "160000,"+strings.TrimSpace(string(head))+",10-projects/sub")
	rtviewGit(t, e, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "submodule")
	out := rtviewGate(t, e, "once")
	if rtviewManifest(t, e) == nil {
		t.Fatalf("no manifest:\n%s", out)
	}
	rtviewHunt(t, e, rtviewProfile(t, e, "{view: in-force}"), "work tree differs from HEAD when the manifest is written", "RTVIEW2-PRE-UNTRACKED", "RTVIEW2-PRE-EDITED", "RTVIEW2-PRE-SUBMODULE")
}

// TestRTView2InPlaceEdit: a note in force at HEAD is withheld in the
// work tree by an edit in place (an editor that rewrites the file, as
// VS Code does; `cat >`): its folder's modification time does not move,
// view.Fresh passes, the manifest (HEAD: in force) is used and the note,
// which now says withheld, was shown. Who can: the vault's owner (the gate
// user) or root only. Fixed by the view tree: the work tree is not what
// the sandbox is shown.
func TestRTView2InPlaceEdit(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	p := filepath.Join(e.vault.Dir, "20-domains/infra/inplace.md")
	rtviewWrite(t, e, map[string]string{"20-domains/infra/inplace.md": "---\ntitle: In place\n---\nfine\n"}, true)
	rtviewGate(t, e, "once")
	dir := filepath.Dir(p)
	before, err := os.Stat(dir)
	must(t, err)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	must(t, err)
	_, err = f.WriteString("---\ntitle: In place\nwithheld: {by: \"human:curator\", reason: poisoned}\n---\nRTVIEW2-INPLACE\n")
	must(t, err)
	must(t, f.Close())
	after, err := os.Stat(dir)
	must(t, err)
	if !before.ModTime().Equal(after.ModTime()) {
		t.Fatalf("the folder's time moved (%v → %v): not an in-place edit", before.ModTime(), after.ModTime())
	}
	rtviewHunt(t, e, rtviewProfile(t, e, "{view: in-force}"), "a note withheld in place after the manifest", "RTVIEW2-INPLACE")
}

// TestRTView2NewNoteDuringSession: the docs say which paths exist is
// fixed when the session starts; but the overlay's lower layer is the
// live vault and only the paths hidden at start have whiteouts. A note
// not in force that arrives while the agent runs (a `fedmem gate sync`
// bringing a deprecated note from the remote; root) is visible to it at
// once. Root cause: vault/view/layer_linux.go BuildLayer hides a list of
// paths (a deny-list fixed at start) over a live lower layer.
func TestRTView2NewNoteDuringSession(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	rtviewGate(t, e, "once")
	prof := rtviewProfile(t, e, "{view: in-force}")
	late := filepath.Join(e.vault.Dir, "20-domains/infra/late.md")
	// The agent does not look the path up before it arrives (an overlay
	// keeps a negative lookup): it waits for the test's word in its inbox.
	script := `touch "$FEDMEM_INBOX/ready"; i=0; while [ $i -lt 600 ] && ! [ -e "$FEDMEM_INBOX/go" ]; do sleep 0.1; i=$((i+1)); done; cat "$1" 2>&1; echo SHOWN-OK`
	done := make(chan *run, 1)
	go func() { done <- e.run(t, []string{"--profile", prof}, "sh", "-c", script, "sh", late) }()
	// Wait for the agent (an event: its file in its inbox).
	deadline := time.Now().Add(90 * time.Second)
	for {
		m, _ := filepath.Glob(filepath.Join(e.vault.Dir, "90-inbox", "*", "ready"))
		if len(m) > 0 {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the agent ended before it was ready: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent never said ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
	rtviewWrite(t, e, map[string]string{"20-domains/infra/late.md": "---\ntitle: Late\nstatus: deprecated\n---\nRTVIEW2-LATE deprecated text\n"}, true)
	m, _ := filepath.Glob(filepath.Join(e.vault.Dir, "90-inbox", "*", "ready"))
	// The gate judges the new commit too (as after a sync): the note,
	// never in force, never enters what sessions are shown.
	rtviewGate(t, e, "once")
	must(t, os.WriteFile(filepath.Join(filepath.Dir(m[0]), "go"), nil, 0o644))
	r := <-done
	if !strings.Contains(string(r.stdout), "SHOWN-OK") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(string(r.stdout), "RTVIEW2-LATE") {
		t.Errorf("BREACH: a deprecated note that arrived during the session is readable by the running agent:\n%s", r.stdout)
	}
}

// TestRTView2PageNamedNotes: view.Judged never judges a file whose name
// is a folder page's (index.md, log.md at any depth, <dir>/log/NNNNNN.md,
// <dir>/index/NNNNNN.md), whoever wrote it: a note there that says it is
// deprecated or withheld is shown whole (only lines linking other hidden
// notes are dropped). Root cause: vault/view/view.go Judged (`!IsPage`),
// gate/decide/conflictindex.go addEntry.
func TestRTView2PageNamedNotes(t *testing.T) {
	notes := map[string]string{
		"20-domains/pg/index.md":         "---\ntitle: Index\nstatus: deprecated\n---\nRTVIEW2-PG-INDEX\n",
		"20-domains/pg/log.md":           "---\ntitle: Log\nwithheld: {reason: poisoned}\n---\nRTVIEW2-PG-LOG\n",
		"20-domains/pg/log/000001.md":    "---\ntitle: Archive page\nwithheld: {reason: poisoned}\n---\nRTVIEW2-PG-ARCHLOG\n",
		"20-domains/pg/index/000002.md":  "---\ntitle: Archive index\nstatus: draft\n---\nRTVIEW2-PG-ARCHINDEX\n",
		"20-domains/pg/deploy/log.md":    "---\ntitle: A log note\nsuperseded_by: 20-domains/x.md\n---\nRTVIEW2-PG-SUBLOG\n",
		"20-domains/pg/ordinary-note.md": "---\ntitle: Ordinary\nstatus: deprecated\n---\nordinary\n",
	}
	markers := []string{"RTVIEW2-PG-INDEX", "RTVIEW2-PG-LOG", "RTVIEW2-PG-ARCHLOG", "RTVIEW2-PG-ARCHINDEX", "RTVIEW2-PG-SUBLOG"}
	for _, src := range []string{"manifest", "scan"} {
		t.Run(src, func(t *testing.T) {
			e := setup(t, layout{name: "beside/root"})
			rtviewWrite(t, e, notes, true)
			if src == "manifest" {
				rtviewGate(t, e, "once")
			}
			rtviewHunt(t, e, rtviewProfile(t, e, "{view: in-force}"), "notes named like folder pages ("+src+")", markers...)
		})
	}
}

// TestRTView2ManifestRejected: a note (from a remote's sync, a curator,
// or a draft the gate promotes) whose stale_after is a valid RFC 3339
// time whose UTC form has a five-digit year (9999-12-31T23:59:59-23:59)
// makes the gate write a manifest line `s PATH<TAB>10000-01-01T…Z` that
// view.Decode cannot parse: every later session rejects the manifest and
// scans the whole vault (denial of service: the fast path is gone until
// the note is changed). Root cause: vault/view/view.go Encode
// (Format(RFC3339Nano) of a year past 9999) and Decode (time.Parse).
func TestRTView2ManifestRejected(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	rtviewWrite(t, e, map[string]string{"20-domains/infra/far.md": "---\ntitle: Far\nstale_after: 9999-12-31T23:59:59-23:59\n---\nfar future\n"}, true)
	out := rtviewGate(t, e, "once")
	m := rtviewManifest(t, e)
	if m == nil {
		t.Fatalf("no manifest:\n%s", out)
	}
	prof := rtviewProfile(t, e, "{view: in-force}")
	t.Logf("manifest:\n%s", m["text"])
	r := e.run(t, []string{"--profile", prof, "--explain"}, "true")
	all := string(r.stdout) + string(r.stderr)
	t.Logf("explain:\n%s", all)
	if strings.Contains(all, "judged by fedmem-run") {
		i := strings.Index(all, "vault view:")
		t.Errorf("BREACH (denial of service): the gate's manifest is rejected by every session, which scans the whole vault:\n%s\nmanifest:\n%s", all[i:min(len(all), i+400)], m["text"])
	}
}

// utf16Note is body encoded UTF-16 (le: little endian) with a BOM.
func utf16Note(body string, le bool) string {
	var buf bytes.Buffer
	var order binary.ByteOrder = binary.BigEndian
	if le {
		order = binary.LittleEndian
	}
	_ = binary.Write(&buf, order, uint16(0xfeff))
	for _, u := range utf16.Encode([]rune(body)) {
		_ = binary.Write(&buf, order, u)
	}
	return buf.String()
}

// TestRTView2UTF16Frontmatter: a note stored UTF-16 with a BOM (YAML
// allows it; editors and agents' readers decode it) whose frontmatter
// says deprecated: the judges see no `---` first line (looksOpened knows
// the UTF-8 BOM and CR only), read "no frontmatter: in force" and show
// it. Root cause: vault/view/view.go looksOpened.
func TestRTView2UTF16Frontmatter(t *testing.T) {
	notes := map[string]string{
		"20-domains/enc/le.md": utf16Note("---\ntitle: LE\nstatus: deprecated\n---\nRTVIEW2-UTF16 le\n", true),
		"20-domains/enc/be.md": utf16Note("---\ntitle: BE\nwithheld: {reason: poisoned}\n---\nRTVIEW2-UTF16 be\n", false),
	}
	for _, src := range []string{"manifest", "scan"} {
		t.Run(src, func(t *testing.T) {
			e := setup(t, layout{name: "beside/root"})
			rtviewWrite(t, e, notes, true)
			if src == "manifest" {
				rtviewGate(t, e, "once")
			}
			r := e.run(t, []string{"--profile", rtviewProfile(t, e, "{view: in-force}")}, "sh", "-c", `for f in le be; do [ -e "$1/20-domains/enc/$f.md" ] && echo "FOUND $f"; done; echo SHOWN-OK`, "sh", e.vault.Dir)
			if !strings.Contains(string(r.stdout), "SHOWN-OK") {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			for _, line := range strings.Split(string(r.stdout), "\n") {
				if strings.HasPrefix(line, "FOUND") {
					t.Errorf("BREACH: a UTF-16 note whose frontmatter says it is not in force is shown (%s): %s", src, line)
				}
			}
		})
	}
}

// TestRTView2OtherSessionsInbox: under the view the vault is an overlay
// whose lower layer holds 90-inbox with every other session's drafts:
// they must stay invisible (the inbox is put back on top).
func TestRTView2OtherSessionsInbox(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	rtviewGate(t, e, "once")
	other := filepath.Join(e.vault.Dir, "90-inbox", e.vault.OtherSession)
	must(t, os.MkdirAll(other, 0o755))
	must(t, os.WriteFile(filepath.Join(other, "rtview2-other.md"), []byte("---\ntitle: Other\n---\nRTVIEW2-OTHER-SESSION\n"), 0o644))
	r := e.run(t, []string{"--profile", rtviewProfile(t, e, "{view: in-force}")}, "sh", "-c", `ls -a "$1/90-inbox" | sed 's/^/LS /'; grep -rl RTVIEW2-OTHER "$1" 2>/dev/null | sed 's/^/FOUND /'; [ -e "$2" ] && echo "FOUND $2"; echo SHOWN-OK`, "sh", e.vault.Dir, other)
	if !strings.Contains(string(r.stdout), "SHOWN-OK") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, line := range strings.Split(string(r.stdout), "\n") {
		if strings.HasPrefix(line, "FOUND") || line == "LS "+e.vault.OtherSession {
			t.Errorf("BREACH: another session's inbox under the view: %s", line)
		}
	}
}

// TestRTView2Layouts: the hunt in every layout (workdir in the vault: a
// hidden note in the workdir's own folder; vault in the workdir;
// gate-owned; an unprivileged caller).
func TestRTView2Layouts(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			rel, err := filepath.Rel(e.vault.Dir, e.workdir)
			if err != nil || strings.HasPrefix(rel, "..") {
				rel = "20-domains"
			}
			rtviewWrite(t, e, map[string]string{
				filepath.Join(rel, "wd-hidden.md"): "---\ntitle: In the workdir's folder\nstatus: deprecated\n---\nRTVIEW2-LAYOUT-WD\n",
				"20-domains/l/old.md":              "---\ntitle: Old\nwithheld: {reason: poisoned}\n---\nRTVIEW2-LAYOUT-OLD\n",
			}, true)
			rtviewGate(t, e, "once")
			r := e.run(t, []string{"--profile", rtviewProfile(t, e, "{view: in-force}")}, "sh", "-c", rtviewGrepScript+`
grep -rl RTVIEW2-LAYOUT "$PWD" . 2>/dev/null | sed 's/^/FOUND cwd /'; [ -e "$PWD/wd-hidden.md" ] && echo "FOUND cwd wd-hidden.md"; true`, "sh", e.vault.Dir, "RTVIEW2-LAYOUT-WD", "RTVIEW2-LAYOUT-OLD")
			out := string(r.stdout)
			if r.code != 0 || !strings.Contains(out, "SHOWN-OK") {
				if r.code == 125 {
					t.Logf("refused (fail closed): %s", r.stderr)
					return
				}
				t.Fatalf("exit %d\n%s\n%s", r.code, out, r.stderr)
			}
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(line, "FOUND ") {
					t.Errorf("BREACH: layout %s: %s", l.name, line)
				}
			}
		})
	}
}

// TestRTView2ReceiptsDrained: the agent reads many shown notes (by name,
// by openat on a folder descriptor, by mmap) as its very last act and
// exits at once: every read must be in the receipt (fanotify events
// queued when the sandbox ends are drained), with the view's per-folder
// inode marks, alone and with vault.visible (one group per overlay).
func TestRTView2ReceiptsDrained(t *testing.T) {
	const n = 300
	two := ", visible: [10-projects, 20-domains]"
	for _, c := range []struct{ view, vis, exit string }{{"in-force", "", "os._exit(0)"}, {"in-force", two, "os._exit(0)"}, {"in-force", two, "time.sleep(3); os._exit(0)"}, {"all", two, "os._exit(0)"}} {
		vis := c.vis
		t.Run(c.view+"/visible="+strconv.FormatBool(vis != "")+"/"+strings.Fields(c.exit)[0], func(t *testing.T) {
			e := setup(t, layout{name: "beside/root"})
			files := map[string]string{}
			for i := 0; i < n; i++ {
				dir := "10-projects"
				if i%2 == 1 {
					dir = "20-domains"
				}
				files[dir+"/r"+strconv.Itoa(i)+".md"] = "---\ntitle: R" + strconv.Itoa(i) + "\n---\nshown\n"
			}
			rtviewWrite(t, e, files, true)
			rtviewGate(t, e, "once")
			script := `
import os, sys, mmap, time
v = sys.argv[1]
for i in range(` + strconv.Itoa(n) + `):
    d = os.path.join(v, "10-projects" if i % 2 == 0 else "20-domains")
    name = "r%d.md" % i
    if i % 3 == 0:
        with open(os.path.join(d, name), "rb") as f: f.read()
    elif i % 3 == 1:
        dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        fd = os.open(name, os.O_RDONLY, dir_fd=dfd)
        os.read(fd, 4096); os.close(fd); os.close(dfd)
    else:
        fd = os.open(os.path.join(d, name), os.O_RDONLY)
        m = mmap.mmap(fd, 0, prot=mmap.PROT_READ); m[:4]; m.close(); os.close(fd)
print("READ-OK", flush=True)
` + c.exit + `
`
			r := e.run(t, []string{"--profile", rtviewProfile(t, e, "{view: "+c.view+vis+"}")}, "python3", "-c", script, e.vault.Dir)
			if !strings.Contains(string(r.stdout), "READ-OK") {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			vr, _ := r.report["vault_reads"].(map[string]any)
			reads, _ := vr["reads"].([]any)
			got := map[string]bool{}
			for _, x := range reads {
				if m, _ := x.(map[string]any); m != nil {
					p, _ := m["path"].(string)
					got[p] = true
				}
			}
			var missing []string
			for p := range files {
				if !got[p] {
					missing = append(missing, p)
				}
			}
			var wrong []string
			for p := range got {
				if _, ok := files[p]; !ok {
					wrong = append(wrong, p)
				}
			}
			if len(wrong) > 0 {
				t.Errorf("BREACH: %d reads in the receipt name files the agent did not read, e.g. %v", len(wrong), wrong[:min(5, len(wrong))])
			}
			if len(missing) > 0 {
				t.Errorf("BREACH: %d of %d reads missing from the receipt (recorded %v), e.g. %v", len(missing), n, vr["recorded"], missing[:min(5, len(missing))])
			}
		})
	}
}

// TestRTView2VisibleIsHidden: vault.visible naming a path the view hides
// whole — a dot folder, a hidden note itself, a folder that could not be
// read — must not show it: hideUnder keeps only paths *below* a visible
// folder, so the hidden entry that *is* the visible folder is not among
// the bind's whiteouts.
func TestRTView2VisibleIsHidden(t *testing.T) {
	for _, vis := range []string{"20-domains/.drafts", "20-domains/infra/old.md"} {
		t.Run(vis, func(t *testing.T) {
			e := setup(t, layout{name: "beside/root"})
			rtviewWrite(t, e, map[string]string{
				"20-domains/.drafts/x.md": "---\ntitle: Dot folder\nstatus: deprecated\n---\nRTVIEW2-VIS-DOT\n",
				"20-domains/infra/old.md": "---\ntitle: Old\nstatus: deprecated\n---\nRTVIEW2-VIS-OLD\n",
			}, true)
			rtviewGate(t, e, "once")
			prof := rtviewProfile(t, e, "{view: in-force, visible: [\""+vis+"\", 00-global]}")
			r := e.run(t, []string{"--profile", prof}, "sh", "-c", rtviewGrepScript, "sh", e.vault.Dir, "RTVIEW2-VIS-DOT", "RTVIEW2-VIS-OLD")
			for _, line := range strings.Split(string(r.stdout), "\n") {
				if strings.HasPrefix(line, "FOUND") {
					t.Errorf("BREACH: vault.visible %s under the view: %s", vis, line)
				}
			}
			t.Logf("exit %d: %s", r.code, strings.TrimSpace(string(r.stderr)))
		})
	}
}
