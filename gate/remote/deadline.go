package remote

// Deadlines for remote operations (issue 24 item 4). A remote that accepts
// a connection and never answers (a git:// listener, a stuck HTTP server)
// stopped `gate once` and `gate run` for ever: no deadline, and the sync
// runs at the end of a pass, under the gate's lock, so reviews waited too
// and SIGTERM (which lets the pass finish) was never honoured. Now every
// fetch and push runs under a context that ends at the policy's
// remote.timeout (connect and silence included) or when the gate is asked
// to stop (Run's context: SIGTERM), whichever comes first; the operation's
// reads and writes stop with it (go-git's transports read through the
// context), and the gate does not wait for a connect the kernel has not
// given up on.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fedmem/fedmem/gate/policy"
)

// ErrDeadline is returned when a remote operation passed its deadline
// or the gate was asked to stop while it ran.
var ErrDeadline = errors.New("remote operation cut off")

// Deadline is what bounds the gate's remote operations.
type Deadline struct {
	mu      sync.Mutex
	stop    context.Context // Run's context (nil outside Run)
	timeout time.Duration   // per operation (0: policy default)
}

// SetStop makes ctx's end stop every remote operation (nil: none).
func (d *Deadline) SetStop(ctx context.Context) {
	d.mu.Lock()
	d.stop = ctx
	d.mu.Unlock()
}

// SetTimeout bounds every later operation by t (0: policy default).
func (d *Deadline) SetTimeout(t time.Duration) {
	if t <= 0 {
		t = policy.DefaultRemoteTimeout
	}
	d.mu.Lock()
	d.timeout = t
	d.mu.Unlock()
}

// Do runs op (one fetch or push) under the deadline. It returns op's
// error, or ErrDeadline when the deadline passed or the gate is
// stopping; then op is left to end on its own (its reads and writes see
// the context ended) — it cannot move a ref afterwards: go-git updates refs
// only after a complete exchange, which a cancelled context ends first.
func (dl *Deadline) Do(what string, op func(ctx context.Context) error) error {
	dl.mu.Lock()
	parent, d := dl.stop, dl.timeout
	dl.mu.Unlock()
	if parent == nil {
		parent = context.Background()
	}
	if d <= 0 {
		d = policy.DefaultRemoteTimeout
	}
	if err := parent.Err(); err != nil {
		return fmt.Errorf("%w before the %s: the gate is stopping", ErrDeadline, what)
	}
	ctx, cancel := context.WithTimeout(parent, d)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- op(ctx) }()
	select {
	case err := <-done:
		if err != nil && ctx.Err() != nil {
			return cutOff(what, parent, d, err)
		}
		return err
	case <-ctx.Done():
		// Give op a moment to see the context (its reads return at
		// once); a connect still in the kernel is not waited for.
		select {
		case <-done:
		case <-time.After(time.Second):
		}
		return cutOff(what, parent, d, ctx.Err())
	}
}

func cutOff(what string, parent context.Context, d time.Duration, err error) error {
	if parent.Err() != nil {
		return fmt.Errorf("%w: the gate is stopping (during the %s: %v)", ErrDeadline, what, err)
	}
	return fmt.Errorf("%w: no complete answer to the %s from the remote within %s (remote.timeout; connect and silence included)", ErrDeadline, what, d)
}
