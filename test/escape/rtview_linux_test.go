package escape

// Red team of `vault.view: in-force` (issue 21 item 3; commits 8065949e,
// cc721529). Each test puts a note that is not in force (or the vault's
// history) where a hostile agent run through fedmem-run looks for it, and
// fails with "BREACH:" when the agent finds its text. Notes are committed
// to the vault as the gate's remote sync or a curator would (git), the
// manifest is the one `fedmem gate once` writes, and the gate's own
// withhold is `fedmem gate sweep`.

import (
	"bufio"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/test/testutil"
)

// rtviewWrite writes files (vault-relative) into e's vault; commit says
// whether they are committed (git add -A, commit) or left in the work tree.
func rtviewWrite(t *testing.T, e *env, files map[string]string, commit bool) {
	t.Helper()
	for rel, body := range files {
		p := filepath.Join(e.vault.Dir, rel)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(body), 0o644))
	}
	if commit {
		rtviewGit(t, e, "add", "-A", ".")
		rtviewGit(t, e, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "rtview notes")
	}
	if uid := e.vaultOwner(); uid != 0 {
		must(t, testutil.ChownTree(e.vault.Dir, uid, uid))
	}
}

func rtviewGit(t *testing.T, e *env, args ...string) {
	t.Helper()
	if out, err := testutil.Git(e.vault.Dir, args...); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// rtviewGate runs `fedmem gate SUB` (once, sweep) as the vault's owner.
func rtviewGate(t *testing.T, e *env, sub string) string {
	t.Helper()
	state := filepath.Join(e.base, "gate-state")
	must(t, os.MkdirAll(state, 0o700))
	uid := e.vaultOwner()
	must(t, os.Chown(state, uid, uid))
	args := []string{"gate", sub, "--vault", e.vault.Dir, "--state", state}
	cmd := exec.Command(e.bins.Fedmem, args...)
	if uid != 0 {
		cmd = exec.Command("setpriv", append([]string{"--reuid", strconv.Itoa(uid), "--regid", strconv.Itoa(uid), "--clear-groups", "--", e.bins.Fedmem}, args...)...)
	}
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// rtviewManifest is the gate's manifest of e's vault (nil: none).
func rtviewManifest(t *testing.T, e *env) map[string]any {
	t.Helper()
	// The manifest is text (vault/view: a line a hidden path).
	b, err := os.ReadFile(filepath.Join(e.vault.Dir, ".git", "fedmem-view"))
	if err != nil {
		return nil
	}
	return map[string]any{"text": string(b)}
}

// rtviewProfile writes a profile of e with the given vault: mapping.
func rtviewProfile(t *testing.T, e *env, vaultYAML string) string {
	t.Helper()
	p := filepath.Join(e.outDir, "rtview.yaml")
	must(t, os.WriteFile(p, []byte("name: rtview\nextends: default\nvault: "+vaultYAML+"\n"), 0o644))
	return p
}

// rtviewGrepScript greps the whole vault (argv[1]) for each marker
// (argv[2:]) and prints "FOUND <marker> <file>" for each file that holds
// one; then reads a note in force, for the control.
const rtviewGrepScript = `
v="$1"; shift
for m in "$@"; do
  grep -rl -- "$m" "$v" 2>/dev/null | while read -r f; do echo "FOUND $m $f"; done
done
cat "$v/00-global/AGENT.md" >/dev/null && echo "SHOWN-OK"
`

// rtviewHunt runs the grep agent under prof and fails with BREACH for
// each marker it found; it returns the run.
func rtviewHunt(t *testing.T, e *env, prof, what string, markers ...string) *run {
	t.Helper()
	r := e.run(t, []string{"--profile", prof}, append([]string{"sh", "-c", rtviewGrepScript, "sh", e.vault.Dir}, markers...)...)
	out := string(r.stdout)
	if r.code != 0 || !strings.Contains(out, "SHOWN-OK") {
		t.Fatalf("%s: exit %d, the control note not read\nstdout:\n%s\nstderr:\n%s", what, r.code, out, r.stderr)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "FOUND ") {
			t.Errorf("BREACH: %s: the agent read a note that is not in force: %s", what, line)
		}
	}
	return r
}

// TestRTViewSweepWithholdShowsNote: the gate's own withhold makes a hidden
// note visible. A note past its stale_after is hidden (stale); `fedmem
// gate sweep` withholds it (status: draft, withheld: {at, reason,
// detail}), re-rendering its frontmatter. When the frontmatter was close
// to note.MaxFrontmatterBytes (16 KiB; a draft may bring one that close),
// the rendered one passes the limit, note.Parse refuses it, and
// view.JudgeNote reads "no usable frontmatter: in force" — the withheld
// note is shown to every later session (and the gate's own FactsOf reads
// it as in force too). Root cause: gate/sweep/sweep.go WithheldNote
// renders without re-parsing; vault/view/view.go JudgeNote treats an
// unparsable frontmatter as in force.
func TestRTViewSweepWithholdShowsNote(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	var fm strings.Builder
	fm.WriteString("title: Big stale note\ntype: note\nstale_after: 2020-01-01T00:00:00Z\n")
	for i := 0; fm.Len() < 16384-60; i++ {
		fm.WriteString("k" + strconv.Itoa(1000+i) + ": " + strings.Repeat("x", 80) + "\n")
	}
	rtviewWrite(t, e, map[string]string{"20-domains/infra/big.md": "---\n" + fm.String() + "---\nRTVIEW-SWEPT the poisoned fact.\n"}, true)
	rtviewGate(t, e, "once")
	prof := rtviewProfile(t, e, "{view: in-force}")
	rtviewHunt(t, e, prof, "stale note before the sweep", "RTVIEW-SWEPT")
	out := rtviewGate(t, e, "sweep")
	if !strings.Contains(out, "withheld 20-domains/infra/big.md") {
		t.Fatalf("the sweep did not withhold the stale note:\n%s", out)
	}
	rtviewGate(t, e, "once")
	rtviewHunt(t, e, prof, "the same note once the sweep withheld it", "RTVIEW-SWEPT")
}

// TestRTViewUnparsableFrontmatter: a note whose frontmatter opens with
// `---` and says it is not in force, but that note.Parse refuses (a
// duplicate key, an anchor, a tag, CRLF line ends, past 16 KiB, a second
// document), is judged "in force" by both judges and shown: every YAML
// reader an agent uses reads `status: deprecated` or `withheld:` there.
func TestRTViewUnparsableFrontmatter(t *testing.T) {
	big := strings.Repeat("pad: x\n", 1) + strings.Repeat("# "+strings.Repeat("y", 78)+"\n", 220)
	notes := map[string]string{
		"20-domains/fm/dupkey.md":   "---\ntitle: Dup\nstatus: stable\nstatus: deprecated\n---\nRTVIEW-FM-DUPKEY\n",
		"20-domains/fm/anchor.md":   "---\ntitle: &t Anchor\nstatus: deprecated\n---\nRTVIEW-FM-ANCHOR\n",
		"20-domains/fm/tag.md":      "---\ntitle: Tag\nstatus: !!str deprecated\n---\nRTVIEW-FM-TAG\n",
		"20-domains/fm/crlf.md":     "---\r\ntitle: CRLF\r\nstatus: deprecated\r\n---\r\nRTVIEW-FM-CRLF\r\n",
		"20-domains/fm/huge.md":     "---\ntitle: Huge\nstatus: deprecated\n" + big + "---\nRTVIEW-FM-HUGE\n",
		"20-domains/fm/withheld.md": "---\ntitle: W\nwithheld: {by: \"human:curator\", reason: poisoned}\nwithheld: again\n---\nRTVIEW-FM-WITHHELD\n",
		"20-domains/fm/seqstat.md":  "---\ntitle: Seq\nstatus: [deprecated]\n---\nRTVIEW-FM-SEQSTATUS\n",
	}
	markers := []string{"RTVIEW-FM-DUPKEY", "RTVIEW-FM-ANCHOR", "RTVIEW-FM-TAG", "RTVIEW-FM-CRLF", "RTVIEW-FM-HUGE", "RTVIEW-FM-WITHHELD", "RTVIEW-FM-SEQSTATUS"}
	for _, src := range []string{"manifest", "scan"} {
		t.Run(src, func(t *testing.T) {
			e := setup(t, layout{name: "beside/root"})
			rtviewWrite(t, e, notes, true)
			if src == "manifest" {
				rtviewGate(t, e, "once")
			}
			rtviewHunt(t, e, rtviewProfile(t, e, "{view: in-force}"), "unparsable frontmatter ("+src+")", markers...)
		})
	}
}

// TestRTViewManifestOddName: the manifest is JSON, and encoding/json
// replaces bytes that are not UTF-8 with U+FFFD: a deprecated note named
// `bad\xff.md` (Git and Linux allow any bytes; a remote's sync brings it)
// is listed as `bad\uFFFD.md`, BuildLayer finds no such path ("gone since
// the manifest was made: nothing to hide"), verifyView checks the same
// wrong path, and the note is shown. The scan judges the real name.
// Root cause: vault/view/view.go Encode/Read (JSON strings) and
// layer_linux.go BuildLayer (a missing hidden path is skipped, even when
// the manifest names HEAD).
func TestRTViewManifestOddName(t *testing.T) {
	for _, src := range []string{"manifest", "scan"} {
		t.Run(src, func(t *testing.T) {
			e := setup(t, layout{name: "beside/root"})
			rtviewWrite(t, e, map[string]string{
				"20-domains/infra/bad\xff.md":   "---\ntitle: Bad name\nstatus: deprecated\n---\nRTVIEW-ODDNAME-FF\n",
				"20-domains/infra/nl\nname.md":  "---\ntitle: Newline name\nstatus: deprecated\n---\nRTVIEW-ODDNAME-NL\n",
				"20-domains/infra/caf\u00e9.md": "---\ntitle: NFC name\nstatus: deprecated\n---\nRTVIEW-ODDNAME-NFC\n",
			}, true)
			if src == "manifest" {
				rtviewGate(t, e, "once")
				if rtviewManifest(t, e) == nil {
					t.Fatal("no manifest")
				}
			}
			rtviewHunt(t, e, rtviewProfile(t, e, "{view: in-force}"), "odd file names ("+src+")", "RTVIEW-ODDNAME-FF", "RTVIEW-ODDNAME-NL", "RTVIEW-ODDNAME-NFC")
		})
	}
}

// TestRTViewManifestWorkTreeDrift: the manifest says what is hidden at
// HEAD's tree; the overlay shows the work tree. A note not in force that
// is in the work tree but not at HEAD (untracked: a curator's file, a
// checkout interrupted; or a hidden note renamed and not yet committed)
// is in no manifest entry and is shown — while the scan hides it: the
// two judges disagree ("same answer" in the docs). Root cause: the
// manifest is a list of what to hide (a deny-list) matched by path
// against a tree it was not made from (mounts/view.go LoadView,
// vault/view/layer_linux.go BuildLayer).
func TestRTViewManifestWorkTreeDrift(t *testing.T) {
	for _, src := range []string{"manifest", "scan"} {
		t.Run(src, func(t *testing.T) {
			e := setup(t, layout{name: "beside/root"})
			rtviewWrite(t, e, map[string]string{
				"20-domains/infra/renamed.md": "---\ntitle: Renamed\nstatus: deprecated\n---\nRTVIEW-DRIFT-RENAMED\n",
			}, true)
			if src == "manifest" {
				rtviewGate(t, e, "once")
			}
			// After the manifest: the work tree moves on, HEAD does not.
			must(t, os.Rename(filepath.Join(e.vault.Dir, "20-domains/infra/renamed.md"), filepath.Join(e.vault.Dir, "20-domains/infra/renamed-2.md")))
			rtviewWrite(t, e, map[string]string{
				"20-domains/infra/untracked.md": "---\ntitle: Untracked\nstatus: draft\n---\nRTVIEW-DRIFT-UNTRACKED\n",
			}, false)
			rtviewHunt(t, e, rtviewProfile(t, e, "{view: in-force}"), "work tree ahead of the manifest's HEAD ("+src+")", "RTVIEW-DRIFT-RENAMED", "RTVIEW-DRIFT-UNTRACKED")
		})
	}
}

// TestRTViewNotNotes: the view hides only what view.IsNote names (a
// `.md` file outside dot folders); everything else is shown unjudged. A
// deprecated or withheld note in a dot folder, a dot file, or with
// another Markdown suffix (`.MD`, `.markdown`, `.md.orig`) is read by an
// agent like any note. Root cause: the view hides by a list of judged
// paths (vault/view/view.go IsNote, Scan's SkipDir of dot folders;
// gate/decide/conflictindex.go indexedDir), not by showing only what was
// judged in force.
func TestRTViewNotNotes(t *testing.T) {
	notes := map[string]string{
		"20-domains/.drafts/x.md":        "---\ntitle: Dot folder\nstatus: deprecated\n---\nRTVIEW-NN-DOTDIR\n",
		".obsidian/notes/y.md":           "---\ntitle: Root dot folder\nwithheld: {reason: poisoned}\n---\nRTVIEW-NN-ROOTDOT\n",
		"20-domains/infra/.hidden.md":    "---\ntitle: Dot file\nstatus: deprecated\n---\nRTVIEW-NN-DOTFILE\n",
		"20-domains/infra/Upper.MD":      "---\ntitle: Upper suffix\nstatus: deprecated\n---\nRTVIEW-NN-UPPER\n",
		"20-domains/infra/long.markdown": "---\ntitle: Long suffix\nstatus: deprecated\n---\nRTVIEW-NN-MARKDOWN\n",
		"20-domains/infra/old.md.orig":   "---\ntitle: Backup\nstatus: deprecated\n---\nRTVIEW-NN-ORIG\n",
	}
	markers := []string{"RTVIEW-NN-DOTDIR", "RTVIEW-NN-ROOTDOT", "RTVIEW-NN-DOTFILE", "RTVIEW-NN-UPPER", "RTVIEW-NN-MARKDOWN", "RTVIEW-NN-ORIG"}
	for _, src := range []string{"manifest", "scan"} {
		t.Run(src, func(t *testing.T) {
			e := setup(t, layout{name: "beside/root"})
			rtviewWrite(t, e, notes, true)
			if src == "manifest" {
				rtviewGate(t, e, "once")
			}
			rtviewHunt(t, e, rtviewProfile(t, e, "{view: in-force}"), "files the view does not judge ("+src+")", markers...)
		})
	}
}

// TestRTViewVaultAlias: a read-only bind alias of the vault inside the
// workdir (the case TestReadOnlySubmountStaysReadOnly keeps read-only)
// shows the raw vault, .git and every note not in force, under
// vault.view: in-force. Root cause: mounts/plan.go addVault realises the
// view on the vault's own path only; the host's other paths of the vault
// (host.Aliases, as addHomeAliases does for the home) are not viewed or
// hidden.
func TestRTViewVaultAlias(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	rtviewWrite(t, e, map[string]string{"20-domains/infra/old.md": "---\ntitle: Old\nstatus: deprecated\n---\nRTVIEW-ALIAS-DEPRECATED\n"}, true)
	rtviewGate(t, e, "once")
	alias := filepath.Join(e.workdir, "vault-alias")
	must(t, os.MkdirAll(alias, 0o755))
	prof := rtviewProfile(t, e, "{view: in-force}")
	check := `:`
	r := nsRun(t, e, "mount --bind "+shq(e.vault.Dir)+" "+shq(alias)+"\nmount -o remount,bind,ro "+shq(alias), check, e.workdir, []string{"--profile", prof},
		"sh", "-c", `grep -rl --exclude-dir=90-inbox RTVIEW-ALIAS "$1" "$2" 2>/dev/null | sed 's/^/FOUND /'; [ -e "$2/.git/HEAD" ] && echo "FOUND .git $2/.git/HEAD"; echo SHOWN-OK`, "sh", e.vault.Dir, alias)
	if !strings.Contains(r.stdout, "SHOWN-OK") {
		if r.code == 125 {
			t.Logf("refused (fail closed): %s", r.stderr)
			return
		}
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, "FOUND ") {
			t.Errorf("BREACH: another path of the vault shows what the view hides: %s", line)
		}
	}
}

// rtviewSyscalls is the hostile agent's direct attempts (python3 ctypes):
// unmount the view (the overlay) to reach the clone below; unshare a user
// and mount namespace and unmount it there; bind the vault's parent
// without its submounts; open the overlay's layers named in
// /proc/self/mountinfo; open_by_handle_at with the hidden note's own ext4
// handle (argv: vault, hidden path, handle type, handle hex). Prints
// "GOT <what>" for every success that reads a hidden byte.
const rtviewSyscalls = `
import ctypes, ctypes.util, os, sys
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
v, hidden, htype, hhex = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def err(): return os.strerror(ctypes.get_errno())
def try_read(what, p):
    try:
        with open(p, "rb") as f:
            b = f.read()
        if b"RTVIEW-SYS" in b:
            print("GOT", what, p, flush=True)
    except OSError as e:
        print("refused", what, p, e.strerror, flush=True)
MNT_DETACH = 2
for what in ("umount", "umount-detach"):
    r = libc.umount2(v.encode(), MNT_DETACH if what.endswith("detach") else 0)
    print(what, r, err() if r else "ok", flush=True)
    try_read("after-" + what, os.path.join(v, hidden))
for line in open("/proc/self/mountinfo"):
    if " overlay " in line:
        for opt in line.split()[-1].split(","):
            if opt.startswith("lowerdir"):
                for l in opt.split("=", 1)[1].split(":"):
                    try_read("layer", os.path.join(l, hidden))
# open_by_handle_at(mount fd of "/", the hidden note's handle)
class FH(ctypes.Structure):
    _fields_ = [("handle_bytes", ctypes.c_uint), ("handle_type", ctypes.c_int), ("f_handle", ctypes.c_ubyte * 128)]
h = FH(); raw = bytes.fromhex(hhex); h.handle_bytes = len(raw); h.handle_type = htype
for i, c in enumerate(raw): h.f_handle[i] = c
for mp in ("/", v, os.path.dirname(v)):
    try:
        mfd = os.open(mp, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        print("refused open", mp, e.strerror); continue
    fd = libc.open_by_handle_at(mfd, ctypes.byref(h), os.O_RDONLY)
    if fd >= 0:
        b = os.read(fd, 4096)
        print("GOT open_by_handle_at" if b"RTVIEW-SYS" in b else "opened-other", mp, flush=True)
    else:
        print("open_by_handle_at", mp, err(), flush=True)
CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000
pid = os.fork()
if pid == 0:
    r = libc.unshare(CLONE_NEWUSER | CLONE_NEWNS)
    print("unshare", r, err() if r else "ok", flush=True)
    if r == 0:
        for what in ("nested-umount", "nested-umount-detach"):
            r = libc.umount2(v.encode(), MNT_DETACH if what.endswith("detach") else 0)
            print(what, r, err() if r else "ok", flush=True)
            try_read("after-" + what, os.path.join(v, hidden))
        os.makedirs("/tmp/rtv", exist_ok=True)
        MS_BIND = 4096
        r = libc.mount(os.path.dirname(v).encode(), b"/tmp/rtv", None, MS_BIND, None)
        print("bind-parent", r, err() if r else "ok", flush=True)
        if r == 0:
            try_read("bind-parent", os.path.join("/tmp/rtv", os.path.basename(v), hidden))
    os._exit(0)
os.waitpid(pid, 0)
print("SHOWN-OK", flush=True)
`

// TestRTViewHostileSyscalls: the agent attacks the overlay itself —
// unmount, nested namespaces, the layers' paths, file handles.
func TestRTViewHostileSyscalls(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	for _, l := range []layout{{name: "beside/root"}, {name: "inside/root", vaultInWorkdir: true}, {name: "beside/user", gateOwned: true, user: true}} {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			hidden := "20-domains/infra/old.md"
			rtviewWrite(t, e, map[string]string{hidden: "---\ntitle: Old\nstatus: deprecated\n---\nRTVIEW-SYS hidden text\n"}, true)
			rtviewGate(t, e, "once")
			fh, _, err := unix.NameToHandleAt(unix.AT_FDCWD, filepath.Join(e.vault.Dir, hidden), 0)
			must(t, err)
			r := e.run(t, []string{"--profile", rtviewProfile(t, e, "{view: in-force}")}, "python3", "-c", rtviewSyscalls, e.vault.Dir, hidden, strconv.Itoa(int(fh.Type())), hex.EncodeToString(fh.Bytes()))
			out := string(r.stdout)
			if !strings.Contains(out, "SHOWN-OK") {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, out, r.stderr)
			}
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(line, "GOT ") {
					t.Errorf("BREACH: %s", line)
				}
			}
			t.Logf("attempts:\n%s", out)
		})
	}
}

// TestRTViewVisibleReceipts: vault.visible with vault.view: in-force puts
// one overlay per shown folder; the read recorder's inode marks of one
// fanotify group refuse the second overlay (EXDEV), so the session has no
// read receipt at all (recorded: false, a warning) — every read of a
// shown note is lost. Without the view the same profile records them.
// Root cause: sandbox/receipts/inode_linux.go markTree (one group across
// several overlays, FAN_REPORT_FID) with mounts/plan.go addVault viewing
// the vault bind and each vault.visible bind separately.
func TestRTViewVisibleReceipts(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	rtviewWrite(t, e, map[string]string{"10-projects/shown.md": "---\ntitle: Shown\n---\nshown text\n"}, true)
	rtviewGate(t, e, "once")
	prof := rtviewProfile(t, e, "{view: in-force, visible: [10-projects]}")
	r := e.run(t, []string{"--profile", prof}, "sh", "-c", `cat "$1/10-projects/shown.md" >/dev/null && echo READ-OK`, "sh", e.vault.Dir)
	if !strings.Contains(string(r.stdout), "READ-OK") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	vr, _ := r.report["vault_reads"].(map[string]any)
	if rec, _ := vr["recorded"].(bool); !rec {
		t.Fatalf("BREACH: vault.view + vault.visible: no read receipt (vault_reads %v); the read of 10-projects/shown.md is lost\nstderr:\n%s", vr, r.stderr)
	}
	reads, _ := vr["reads"].([]any)
	for _, x := range reads {
		if m, _ := x.(map[string]any); m["path"] == "10-projects/shown.md" {
			return
		}
	}
	t.Errorf("BREACH: the read of 10-projects/shown.md is not in the receipt: %v", vr)
}

// TestRTViewVisibleFixedPaths: vault.visible naming the archive or .git
// under vault.view: in-force must not show them (a view.Fixed entry is
// not under the visible folder's prefix in hideUnder): today verifyView
// refuses the session (fail closed, rule vault-view).
func TestRTViewVisibleFixedPaths(t *testing.T) {
	for _, vis := range []string{"99-archive", ".git"} {
		t.Run(vis, func(t *testing.T) {
			e := setup(t, layout{name: "beside/root"})
			rtviewWrite(t, e, map[string]string{"99-archive/r.md": "---\ntitle: Retired\n---\nRTVIEW-FIXED-ARCHIVE\n"}, true)
			rtviewGate(t, e, "once")
			prof := rtviewProfile(t, e, "{view: in-force, visible: [\""+vis+"\", 20-domains]}")
			r := e.run(t, []string{"--profile", prof}, "sh", "-c", `grep -rl RTVIEW-FIXED "$1" | sed 's/^/FOUND /'; [ -e "$1/.git/HEAD" ] && echo "FOUND .git"; echo SHOWN-OK`, "sh", e.vault.Dir)
			for _, line := range strings.Split(string(r.stdout), "\n") {
				if strings.HasPrefix(line, "FOUND") {
					t.Errorf("BREACH: vault.visible %s under the view: %s", vis, line)
				}
			}
			if r.code != 125 && r.code != 0 {
				t.Errorf("exit %d\nstderr:\n%s", r.code, r.stderr)
			}
			t.Logf("exit %d: %s", r.code, strings.TrimSpace(string(r.stderr)))
		})
	}
}

// TestRTViewGitDirSymlink: a vault whose .git is a symlink to its
// repository elsewhere (another disk: `mv .git /data/vault.git; ln -s`):
// fedmem-run and the gate read it through the link, the view hides the
// link (view.Fixed), but the repository itself — every version of every
// note, withheld ones too — stays readable at its real path through the
// read-only host root. Root cause: vault/view/view.go Fixed hides the
// name .git only; mounts/vaultcopies.go does not count the link's target
// as a copy of the vault.
func TestRTViewGitDirSymlink(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	rtviewWrite(t, e, map[string]string{"20-domains/infra/old.md": "---\ntitle: Old\nstatus: deprecated\n---\nRTVIEW-GITLINK-DEPRECATED\n"}, true)
	real := filepath.Join(e.base, "vault.git")
	must(t, os.Rename(filepath.Join(e.vault.Dir, ".git"), real))
	must(t, os.Symlink(real, filepath.Join(e.vault.Dir, ".git")))
	rtviewGate(t, e, "once")
	prof := rtviewProfile(t, e, "{view: in-force}")
	r := e.run(t, []string{"--profile", prof}, "sh", "-c", `[ -e "$2/HEAD" ] && echo "FOUND repository $2"; git --git-dir="$2" log -p --all 2>/dev/null | grep -q RTVIEW-GITLINK && echo "FOUND history RTVIEW-GITLINK"; cat "$1/00-global/AGENT.md" >/dev/null && echo SHOWN-OK`, "sh", e.vault.Dir, real)
	out := string(r.stdout)
	if !strings.Contains(out, "SHOWN-OK") {
		if r.code == 125 {
			t.Logf("refused (fail closed): %s", r.stderr)
			return
		}
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, out, r.stderr)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "FOUND ") {
			t.Errorf("BREACH: the vault's history through its .git link: %s", line)
		}
	}
}

// TestRTViewJudgedVariants: frontmatter the judge must read as not in
// force, in the spellings an author or a remote may use — a note at the
// vault root, a BOM, odd quoting and spacing of status, an empty or null
// withheld, a second frontmatter in the body that says stable, ISO 8601
// stale_after forms other than RFC 3339 (a space for T, an offset without
// a colon, the basic format) — each carrying a marker no shown file
// holds.
func TestRTViewJudgedVariants(t *testing.T) {
	notes := map[string]string{
		"root-draft.md":               "---\ntitle: Root draft\nstatus: draft\n---\nRTVIEW-V-ROOT\n",
		"20-domains/v/bom.md":         "\xef\xbb\xbf---\ntitle: BOM\nstatus: deprecated\n---\nRTVIEW-V-BOM\n",
		"20-domains/v/quoted.md":      "---\ntitle: Quoted\nstatus: \"deprecated\"\n---\nRTVIEW-V-QUOTED\n",
		"20-domains/v/spaced.md":      "---\ntitle: Spaced\nstatus:    deprecated   # retired\n---\nRTVIEW-V-SPACED\n",
		"20-domains/v/upper.md":       "---\ntitle: Upper\nstatus: Stable\n---\nRTVIEW-V-UPPERSTABLE\n",
		"20-domains/v/nullwh.md":      "---\ntitle: Null withheld\nwithheld: null\n---\nRTVIEW-V-NULLWITHHELD\n",
		"20-domains/v/emptywh.md":     "---\ntitle: Empty withheld\nwithheld:\n---\nRTVIEW-V-EMPTYWITHHELD\n",
		"20-domains/v/second.md":      "---\ntitle: Second\nstatus: deprecated\n---\n---\nstatus: stable\n---\nRTVIEW-V-SECONDFM\n",
		"20-domains/v/superseded.md":  "---\ntitle: Sup\nsuperseded_by: 20-domains/v/x.md\n---\nRTVIEW-V-SUPERSEDED\n",
		"20-domains/v/stale-space.md": "---\ntitle: Stale space\nstale_after: 2020-01-01 00:00:00Z\n---\nRTVIEW-V-STALESPACE\n",
		"20-domains/v/stale-off.md":   "---\ntitle: Stale offset\nstale_after: 2020-01-01T00:00:00+0000\n---\nRTVIEW-V-STALEOFFSET\n",
		"20-domains/v/stale-basic.md": "---\ntitle: Stale basic\nstale_after: 20200101T000000Z\n---\nRTVIEW-V-STALEBASIC\n",
	}
	var markers []string
	for _, b := range notes {
		i := strings.Index(b, "RTVIEW-V-")
		markers = append(markers, strings.TrimSpace(b[i:]))
	}
	for _, src := range []string{"manifest", "scan"} {
		t.Run(src, func(t *testing.T) {
			e := setup(t, layout{name: "beside/root"})
			rtviewWrite(t, e, notes, true)
			if src == "manifest" {
				rtviewGate(t, e, "once")
			}
			rtviewHunt(t, e, rtviewProfile(t, e, "{view: in-force}"), "frontmatter variants ("+src+")", markers...)
		})
	}
}

// TestRTViewReceiptOddName: a note in force whose name is not UTF-8 (a
// remote's sync brings any bytes Git allows) is shown; when the agent
// reads it, the session's read receipt holds the name as JSON turned it
// (U+FFFD), its digest the raw bytes: the gate refuses to store the
// receipt ("does not match its digest"), so every read of that session —
// the other notes too — is missing from `fedmem audit readers`. Root
// cause: vault/receipt.go ReadsDigest over raw paths, the record's paths
// JSON strings (sandbox/launch/receipts.go, the session record).
func TestRTViewReceiptOddName(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	rtviewWrite(t, e, map[string]string{"20-domains/infra/ok\xff.md": "---\ntitle: Odd but in force\n---\nshown\n"}, true)
	rtviewGate(t, e, "once")
	r := e.run(t, []string{"--profile", rtviewProfile(t, e, "{view: in-force}")}, "sh", "-c", `cat "$1"/20-domains/infra/ok*.md "$1/00-global/AGENT.md" >/dev/null && echo READ-OK`, "sh", e.vault.Dir)
	if !strings.Contains(string(r.stdout), "READ-OK") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	out := rtviewGate(t, e, "sweep")
	if strings.Contains(out, "does not match its digest") {
		t.Errorf("BREACH: the session's read receipt is not stored after it read a non-UTF-8 name (its reads of every note are lost to audit readers):\n%s", out)
	}
}

// TestRTViewSymlinks: symlinks committed in the vault that point at a
// hidden note, the archive and .git (relative, absolute, through "..")
// resolve inside the view, where their targets do not exist.
func TestRTViewSymlinks(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	rtviewWrite(t, e, map[string]string{
		"20-domains/infra/old.md": "---\ntitle: Old\nstatus: deprecated\n---\nRTVIEW-LINK-DEPRECATED\n",
		"99-archive/r.md":         "---\ntitle: Retired\n---\nRTVIEW-LINK-ARCHIVE\n",
	}, false)
	for name, target := range map[string]string{
		"10-projects/alias.md":   "../20-domains/infra/old.md",
		"10-projects/arch":       "../99-archive",
		"10-projects/git":        "../.git",
		"10-projects/abs-git":    filepath.Join(e.vault.Dir, ".git"),
		"10-projects/abs-old.md": filepath.Join(e.vault.Dir, "20-domains/infra/old.md"),
	} {
		must(t, os.Symlink(target, filepath.Join(e.vault.Dir, name)))
	}
	rtviewGit(t, e, "add", "-A", ".")
	rtviewGit(t, e, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "links")
	rtviewGate(t, e, "once")
	r := e.run(t, []string{"--profile", rtviewProfile(t, e, "{view: in-force}")}, "sh", "-c",
		`grep -rlR RTVIEW-LINK "$1" 2>/dev/null | sed 's/^/FOUND /'; for l in git abs-git; do [ -e "$1/10-projects/$l/HEAD" ] && echo "FOUND $l"; done; cat "$1/00-global/AGENT.md" >/dev/null && echo SHOWN-OK`, "sh", e.vault.Dir)
	if !strings.Contains(string(r.stdout), "SHOWN-OK") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, line := range strings.Split(string(r.stdout), "\n") {
		if strings.HasPrefix(line, "FOUND ") {
			t.Errorf("BREACH: a symlink in the vault reaches what the view hides: %s", line)
		}
	}
}

// TestRTViewDraftOutgrowsWithhold: the whole path from an agent's draft.
// The agent writes a draft whose frontmatter (a long summary and a vault
// source) renders just under 16 KiB; a reviewer approves it (the gate's
// render-reparse check passes); its source changes; the sweep withholds it
// (source-changed), and the withheld rendering passes 16 KiB: the note no
// longer parses, so view.JudgeNote and the gate's FactsOf both read it as
// in force. It is shown to every later session under vault.view:
// in-force, and no later sweep can withhold it again (the sweep skips a
// note it cannot parse). Root cause: gate/sweep/sweep.go WithheldNote
// (no validate.CheckCommit render-reparse, unlike gate/commit/promotion.go)
// and the judges' "no usable frontmatter: in force".
func TestRTViewDraftOutgrowsWithhold(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	rtviewWrite(t, e, map[string]string{"20-domains/src.md": "---\ntitle: Source note\ntype: Fact\n---\nsource v1\n"}, true)
	state := filepath.Join(e.base, "gate-state")
	must(t, os.MkdirAll(state, 0o700))
	sock := filepath.Join(state, "review.sock")
	gate := exec.Command(e.bins.Fedmem, "gate", "run", "--vault", e.vault.Dir, "--state", state)
	logs, err := gate.StderrPipe()
	must(t, err)
	gate.Stdout = gate.Stderr
	must(t, gate.Start())
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = gate.Process.Kill()
			_ = gate.Wait()
		}
	}
	t.Cleanup(stop)
	// waitLog waits for the gate's log line that says what (an event; the
	// timer only ends a hung test).
	waitLog := func(what string) {
		t.Helper()
		deadline := time.After(2 * time.Minute)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the gate ended before %q", what)
				}
				if strings.Contains(l, what) {
					return
				}
			case <-deadline:
				t.Fatalf("no gate log line %q", what)
			}
		}
	}
	waitLog(`"msg":"gate running"`)
	draft := "---\ntype: Fact\ntitle: Harmless looking fact\nsummary: \"" + strings.TrimSpace(strings.Repeat("word ", 3150)) + "\"\nsources:\n  - resource: 20-domains/src.md\n---\nRTVIEW-OUTGROWN the fact.\n"
	r := e.run(t, nil, "sh", "-c", `printf '%s' "$1" > "$FEDMEM_INBOX/fact.md"`, "sh", draft)
	if r.code != 0 {
		t.Fatalf("the agent's draft: exit %d\n%s", r.code, r.stderr)
	}
	review := func(args ...string) string {
		out, _ := exec.Command(e.bins.Fedmem, append([]string{"review", "--socket", sock}, args...)...).CombinedOutput()
		return string(out)
	}
	waitLog(`"state":"pending"`)
	if out := review("approve", "--all", "--yes"); !strings.Contains(out, "promoted") {
		t.Fatalf("approve: %s", out)
	}
	stop()
	rtviewWrite(t, e, map[string]string{"20-domains/src.md": "---\ntitle: Source note\ntype: Fact\n---\nsource v2\n"}, true)
	if out := rtviewGate(t, e, "sweep"); !strings.Contains(out, "withheld 20-domains/harmless-looking-fact.md") {
		t.Fatalf("the sweep did not withhold the note:\n%s", out)
	}
	rtviewGate(t, e, "once")
	rtviewHunt(t, e, rtviewProfile(t, e, "{view: in-force}"), "a draft's note after the sweep withheld it", "RTVIEW-OUTGROWN")
}
