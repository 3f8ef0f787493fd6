package escape

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestRedTeamInboxSwapBlindsCap: the backends bind the session folder
// fedmem-run made (its descriptor), whatever its name leads to later, but
// limits.inbox_bytes' watcher must count that same folder. The owner of
// 90-inbox/ (the gate user here) renames the fresh folder away and puts a
// folder of its own, empty, in its place before the watcher starts: a
// watcher that opens the name counts the empty folder, and the agent
// fills the real one (aside-NAME) past the cap without a kill. Each
// raced session must end on inbox_bytes with the real folder near the
// cap, or be refused before the agent runs.
func TestRedTeamInboxSwapBlindsCap(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	inbox := filepath.Join(e.vault.Dir, "90-inbox")
	home := filepath.Join(e.base, "gate-home")
	must(t, os.Mkdir(home, 0o755))
	must(t, os.Chown(home, gateUID, gateUID))
	swapped := startSwapRacer(t, e, inbox, home, "dir")
	const inboxCap, written = 100 << 10, 8 << 20
	prof := limitsProfile(t, e, "  inbox_bytes: 100KiB\n  wall_time: 120s\n")
	// 128 files of 64 KiB, one after the other, then a marker: the agent
	// got to the end without a kill.
	fill := `i=0; while [ $i -lt 128 ]; do head -c 65536 /dev/zero > "$FEDMEM_INBOX/f$i" || exit 3; i=$((i+1)); done; echo done > "$FEDMEM_INBOX/end"`
	const attempts = 4
	raced := 0
	for i := 0; i < attempts; i++ {
		r := e.run(t, []string{"--profile", prof}, "sh", "-c", fill)
		if r.session == "" {
			t.Fatalf("no session in the report: exit %d\n%s", r.code, r.stderr)
		}
		if !swapped(r.session) {
			continue
		}
		raced++
		real := filepath.Join(inbox, "aside-"+r.session)
		used := diskUse(real)
		// The folder the racer put in the session folder's place: a
		// backend that binds by name (runc, containerd) refuses it at
		// verify; nothing may land there either.
		placed := diskUse(filepath.Join(inbox, r.session))
		_, endErr := os.Lstat(filepath.Join(real, "end"))
		switch {
		case r.code == 125 && used == 0 && placed == 0 && strings.Contains(string(r.stderr), "inbox-identity"):
			t.Logf("attempt %d: refused before the agent ran: %s", i, firstLine(r.stderr, "inbox"))
		case r.code == 137 && slices.Contains(hits(r), "inbox_bytes") && used <= 4<<20 && placed <= 4<<20:
			t.Logf("attempt %d: killed on inbox_bytes with %d bytes in the real folder (cap %d)", i, used, inboxCap)
		default:
			t.Errorf("BREACH: attempt %d: the session folder was swapped for an empty one; exit %d, limits_hit %v, the real folder %s holds %d bytes, the one put in its place %d (cap %d, written %d, the agent finished: %v): the inbox watcher counted the folder put in its place\n%s",
				i, r.code, hits(r), real, used, placed, inboxCap, written, endErr == nil, r.stderr)
		}
		if endErr != nil && !errors.Is(endErr, fs.ErrNotExist) {
			t.Errorf("lstat end marker: %v", endErr)
		}
	}
	if raced == 0 {
		t.Fatalf("the racer swapped no session folder in %d sessions: the test proves nothing", attempts)
	}
}

// diskUse is what the tree under p takes (p itself not counted, so an
// empty or missing folder is 0): per entry the larger of its apparent
// size and its allocated blocks.
func diskUse(p string) int64 {
	var used int64
	filepath.Walk(p, func(q string, fi os.FileInfo, err error) error {
		if err == nil && q != p {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				used += max(st.Blocks*512, st.Size)
			}
		}
		return nil
	})
	return used
}
