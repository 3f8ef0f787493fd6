package pid1

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/sandbox"
	"github.com/fedmem/fedmem/sandbox/receipts"
)

// vaultMountPoints are the mount points of this mount table that show
// vault content: the vault's own bind, its vault.visible folders, any
// mount below it — but this session's inbox (the agent's own drafts are
// not notes) and the tmpfs hiding the other sessions' drafts.
func vaultMountPoints(pl *mounts.Plan, infos []*mountinfo.Info) []string {
	inboxRoot := pl.Vault + "/90-inbox"
	seen := map[string]bool{}
	var out []string
	for _, i := range infos {
		p := i.Mountpoint
		if !atOrUnder(p, pl.Vault) || atOrUnder(p, pl.Inbox) || p == inboxRoot || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}

func atOrUnder(p, base string) bool {
	return p == base || strings.HasPrefix(p, base+"/")
}

// handOverVault gives fedmem-run, over the receipts socket, an O_PATH
// descriptor of each vault mount point (the mount on top there, the one
// the agent's opens go through) and waits for its answer: fedmem-run,
// outside the sandbox, marks those mounts with fanotify (FAN_MARK_MOUNT
// needs CAP_SYS_ADMIN of the initial user namespace for a bind of a host
// filesystem, which this init never has) and records every open of the
// agent from then on. It must run in the sandbox's mount namespace once
// the root is built and verified, before the agent exists, so that the
// agent's first open is already seen; nothing of the agent can reach the
// socket (it is closed here, and every descriptor above 2 is close-on-exec
// before the fork).
func (in *initRun) handOverVault() {
	sock := in.cfg.ReceiptsFd
	if sock == 0 {
		return
	}
	defer unix.Close(sock)
	// The table buildAndVerifyRoot read and checked (verifyLive), not a
	// second read: nothing has mounted since.
	all := vaultMountPoints(in.cfg.Plan, in.table)
	points := all
	if len(points) > receipts.MaxMounts {
		// Descriptors for the first receipts.MaxMounts only, the list of all:
		// fedmem-run sees the counts differ and reports the receipt
		// unavailable (or refuses, with vault.receipts: required) — never
		// a receipt that silently misses the unmarked mounts' opens.
		points = points[:receipts.MaxMounts]
	}
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, p := range points {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			in.fail(sandbox.ExitFedmemError, mounts.StageReceipts, fmt.Errorf("open %s: %w", p, err))
		}
		fds = append(fds, fd)
	}
	data, _ := json.Marshal(all)
	if err := unix.Sendmsg(sock, data, unix.UnixRights(fds...), nil, 0); err != nil {
		in.fail(sandbox.ExitFedmemError, mounts.StageReceipts, fmt.Errorf("hand the vault's mounts to fedmem-run: %w", err))
	}
	reply := make([]byte, 4096)
	n, err := unix.Read(sock, reply)
	switch {
	case err != nil || n == 0:
		in.fail(sandbox.ExitFedmemError, mounts.StageReceipts, errors.New("fedmem-run gave no answer on the receipts socket"))
	case reply[0] == receipts.Marked:
		in.layers.Receipts = true
	case reply[0] == receipts.Unmarked:
	default:
		in.fail(sandbox.ExitFedmemError, mounts.StageReceipts, errors.New(string(reply[1:n])))
	}
	in.phases["receipts"] = sandbox.MonoNow()
}
