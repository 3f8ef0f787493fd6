// Package pin holds a plan's writable sources to the folders the plan
// judged (rule writable-source-swapped).
//
// fedmem-run judges the workdir on its path with links resolved (rules
// workdir-system, workdir-other-home, workdir-home-config) and binds it,
// and every other writable source, a few milliseconds later. Whoever may
// write a folder on the way — a concurrent session's agent whose workdir
// holds this one, a local user who owns the folder above — can replace the
// source, or a folder above it, with a link to /etc/cron.d or /root, or
// rename another folder into its place, in between: bound by name, the
// agent got that folder writable, for a root caller idmapped to root on
// disk (test/escape: TestRedTeamWritableSourceSwapped).
//
// Record pins each source once the plan is made: the path it is at (links
// resolved once, except for the workdir and the home, which the plan
// resolved itself and which must have none), its device and inode, opened
// with no link followed. Open is the backends' only way to a writable
// source: openat2 with RESOLVE_NO_SYMLINKS of the pinned path, checked to
// be the pinned inode at that very path (/proc/self/fd). The container
// runtimes bind by path: CheckAll just before the runtime starts and
// CheckMounted in the finished root refuse a swap there.
package pin

import (
	"fmt"

	"github.com/fedmem/fedmem/mounts"
)

// Rule names the refusal.
const Rule = "writable-source-swapped"

// Error is a writable source that is not the folder the plan judged.
type Error struct {
	Path   string
	Detail string
}

func (e *Error) Error() string {
	return fmt.Sprintf("writable source %s: %s: the session is refused before the agent runs (rule: %s)", e.Path, e.Detail, Rule)
}

// strict reports whether src is a source the plan resolved itself (the
// workdir, the home): it must have no link on the way at all.
func strict(pl *mounts.Plan, src string) bool {
	return src == pl.Workdir || src == pl.Home
}

// Sources are the paths Record pins: every writable bind's Source but the
// session inbox (bound from the descriptor createInbox kept: rule
// inbox-identity), and the home when it is attached whole (not an
// allow-list).
func Sources(pl *mounts.Plan) []string {
	var out []string
	for _, m := range pl.Mounts {
		if m.Kind == mounts.BindRW && m.Source != "" && m.Source != pl.Inbox {
			out = append(out, m.Source)
		}
	}
	if !pl.HomeAllowlist && pl.Home != "" && pl.Home != "/" {
		out = append(out, pl.Home)
	}
	return out
}
