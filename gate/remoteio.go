package gate

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

// ErrRemoteDeadline is returned when a remote operation passed its deadline
// or the gate was asked to stop while it ran.
var ErrRemoteDeadline = errors.New("remote operation cut off")

// remoteState is what bounds the gate's remote operations.
type remoteState struct {
	mu      sync.Mutex
	stop    context.Context // Run's context (nil outside Run)
	timeout time.Duration   // per operation (0: policy default)
}

// setStop makes ctx's end stop every remote operation (nil: none).
func (g *Gate) setStop(ctx context.Context) {
	g.remote.mu.Lock()
	g.remote.stop = ctx
	g.remote.mu.Unlock()
}

func (g *Gate) setRemoteTimeout(d time.Duration) {
	if d <= 0 {
		d = policy.DefaultRemoteTimeout
	}
	g.remote.mu.Lock()
	g.remote.timeout = d
	g.remote.mu.Unlock()
}

// remoteOp runs op (one fetch or push) under the deadline. It returns op's
// error, or ErrRemoteDeadline when the deadline passed or the gate is
// stopping; then op is left to end on its own (its reads and writes see
// the context ended) — it cannot move a ref afterwards: go-git updates refs
// only after a complete exchange, which a cancelled context ends first.
func (g *Gate) remoteOp(what string, op func(ctx context.Context) error) error {
	g.remote.mu.Lock()
	parent, d := g.remote.stop, g.remote.timeout
	g.remote.mu.Unlock()
	if parent == nil {
		parent = context.Background()
	}
	if d <= 0 {
		d = policy.DefaultRemoteTimeout
	}
	if err := parent.Err(); err != nil {
		return fmt.Errorf("%w before the %s: the gate is stopping", ErrRemoteDeadline, what)
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
		return fmt.Errorf("%w: the gate is stopping (during the %s: %v)", ErrRemoteDeadline, what, err)
	}
	return fmt.Errorf("%w: no complete answer to the %s from the remote within %s (remote.timeout; connect and silence included)", ErrRemoteDeadline, what, d)
}
