package remote

// A remote cannot rewrite the gate (issue 24 item 4). A gate recognises its
// own published commits by their ids, never by their trailers (anyone can
// write `Fedmem-Draft: <id>` into a commit): every push records the commit
// it published (the `sync-push` audit entry's `to`, and sync.json's
// `published`), and every later fetch must find that commit in the remote
// branch's history. A remote whose history rewrites it (a force-push with
// the trailers kept) or drops it (a reset) is refused — the sync stops
// with an error naming the commit, and a `sync-refused` audit entry —
// until an operator puts the remote right; nothing of it is adopted. In a
// replay, a remote commit above the merge base that carries the id of one
// of this gate's own unpublished promotions is not the gate's (it never
// pushed it): refused the same way, where it was adopted before.

import (
	"errors"
	"fmt"

	"github.com/fedmem/fedmem/vault/repo"
)

// ErrRewrote is returned when the remote's history does not hold
// what this gate published there, or forges one of its promotions.
var ErrRewrote = errors.New("the remote rewrote or dropped this gate's history")

// checkPublished refuses the remote tip R unless the last commit this gate
// published is R or one of R's ancestors.
func (e *Engine) checkPublished(st *File, R repo.Hash, rawURL, rbranch string) error {
	if st.Published == "" || st.PublishedTo != RedactURL(rawURL)+" "+rbranch {
		return nil // nothing published to this remote branch yet
	}
	P := repo.NewHash(st.Published)
	if R == P {
		return nil
	}
	why := "the remote branch is gone"
	if !R.IsZero() {
		base, _, _, err := e.repo.MergeBase(P, R, walkBound)
		if err == nil && base == P {
			return nil
		}
		why = fmt.Sprintf("the remote tip %s does not contain it (rewritten by a force-push, or reset)", R)
	}
	e.host.Note("sync-refused", map[string]string{"remote": RedactURL(rawURL), "published": P.String(), "remote_head": R.String(), "reason": why})
	e.log.Error("remote refused: it rewrote or dropped a published commit", "published", P.String(), "remote_head", R.String())
	return fmt.Errorf("%w: commit %s, which this gate published (audit entry sync-push), is not in the remote's history: %s. Nothing of the remote is adopted; restore the remote branch (push %s back to it) — the gate syncs again on its next pass", ErrRewrote, P, why, P)
}

// forgedPromotion refuses a replay when the remote, above the merge base,
// holds a commit carrying the draft id of local (unpublished) promotion.
func (e *Engine) forgedPromotion(id string, remote, local repo.Hash, rawURL string) error {
	e.host.Note("sync-refused", map[string]string{"remote": RedactURL(rawURL), "draft": id, "remote_commit": remote.String(), "local_commit": local.String(),
		"reason": "a remote commit claims the draft id of a promotion this gate never published"})
	return fmt.Errorf("%w: remote commit %s carries Fedmem-Draft %s, the id of this gate's own promotion %s, which it never pushed: a forged or rewritten commit. It is not adopted; remove it from the remote branch", ErrRewrote, remote, id, local)
}
