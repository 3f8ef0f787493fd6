package gate

import (
	"context"

	"github.com/fedmem/fedmem/gate/review"
)

// ServeReview listens on the review socket until ctx ends (review.Serve).
// Authorisation is by the peer's credentials from the kernel (SO_PEERCRED),
// never by anything the client says: the uid must be a policy reviewer, and
// the peer must live in the gate's own user and mount namespaces — a
// process inside a sandbox (its own user namespace) is refused even if its
// uid maps to a reviewer.
func (g *Gate) ServeReview(ctx context.Context, path string) error {
	return review.Serve(ctx, path, reviewDesk{g})
}

// reviewDesk is the gate as the review socket's Desk: its review
// operations, and its audit log for refusals.
type reviewDesk struct{ *Gate }

func (d reviewDesk) Note(kind string, data any) { d.note(kind, data) }
