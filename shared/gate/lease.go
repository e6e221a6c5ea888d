package gate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// errReleased is the cause of a Lease's context after Release.
var errReleased = errors.New("node gate released")

// Lease is a held gate. It renews itself every TTL/3 until Release; when it is taken over, or
// cannot be renewed before it would expire, its Context is cancelled with a cause wrapping
// ErrLost. The holder must call Release exactly once, after its work has really stopped (for
// Terraform: after the process has exited), also when Context was cancelled.
type Lease struct {
	g     *Gate
	node  string
	owner string
	fence int64
	since time.Time

	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

func newLease(parent context.Context, g *Gate, node, owner string, fence int64, since, renewed time.Time) *Lease {
	ctx, cancel := context.WithCancelCause(parent)
	l := &Lease{
		g: g, node: node, owner: owner, fence: fence, since: since,
		ctx: ctx, cancel: cancel, stop: make(chan struct{}), done: make(chan struct{}),
	}
	go l.renew(renewed)
	return l
}

// Node returns the node whose gate is held.
func (l *Lease) Node() string { return l.node }

// Owner returns the owner token.
func (l *Lease) Owner() string { return l.owner }

// Fence returns the fencing token: it increases with every grant of the node's gate, so a
// stale holder's writes can be told apart (record it on the step).
func (l *Lease) Fence() int64 { return l.fence }

// Since returns when the gate was granted (Redis server time).
func (l *Lease) Since() time.Time { return l.since }

// Context returns a context derived from the one given to TryAcquire or Acquire, cancelled when
// the lease is lost (cause wraps ErrLost) or released. Cancellation of the parent does not end
// the lease: renewal goes on until Release, so that work winding down is still covered.
func (l *Lease) Context() context.Context { return l.ctx }

// Guard returns a context that ends with ctx or when the lease is lost (its cause then wraps
// ErrLost), for the work the lease guards, and the function that releases its resources. A
// nil lease (work that takes no gate) guards nothing: ctx is returned as is.
func (l *Lease) Guard(ctx context.Context) (context.Context, func()) {
	if l == nil {
		return ctx, func() {}
	}
	guarded, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(l.ctx, func() { cancel(context.Cause(l.ctx)) })
	return guarded, func() {
		stop()
		cancel(nil)
	}
}

// renew extends the lease every TTL/3. A renewal that finds another owner (or none) ends the
// lease at once. One that cannot reach Redis is retried until two thirds of the TTL have passed
// since the last confirmed renewal: after that the lease may expire before the next attempt
// lands, and the holder is told to stop while a third of the TTL is left.
func (l *Lease) renew(last time.Time) {
	defer close(l.done)
	ttl := l.g.cfg.TTL
	interval := ttl / 3
	retry := max(interval/5, time.Millisecond)
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		sent := time.Now()
		held, holder, err := l.renewOnce(interval)
		switch {
		case err == nil && held:
			last = sent
			t.Reset(interval)
		case err == nil:
			l.cancel(fmt.Errorf("gate %s: %w: held by %q now", l.node, ErrLost, holder))
			return
		case time.Since(last)+retry >= ttl-interval:
			l.cancel(fmt.Errorf("gate %s: %w: not renewed for %s: %w", l.node, ErrLost, time.Since(last).Round(time.Millisecond), err))
			return
		default:
			t.Reset(retry)
		}
	}
}

func (l *Lease) renewOnce(timeout time.Duration) (held bool, holder string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := renewScript.Run(ctx, l.g.rdb, l.g.keys(l.node, "lock"), l.owner, l.g.cfg.TTL.Milliseconds()).Slice()
	if err != nil {
		return false, "", err
	}
	if len(res) != 2 {
		return false, "", fmt.Errorf("unexpected reply %v", res)
	}
	return integer(res[0]) == 1, str(res[1]), nil
}

// Release stops renewal, cancels Context and deletes the lease if this owner still holds it. It
// returns the waiter now first in line ("" if none), which it has already signalled (and, with
// a Config.Wake, brought forward); a caller without a Waker can wake it itself. When the lease
// had been lost, Release leaves the current holder alone and returns an error wrapping
// ErrNotHolder. Release runs even if ctx has ended (it is bounded by 5 s of its own), so it can
// be deferred in a cancelled handler.
func (l *Lease) Release(ctx context.Context) (next string, err error) {
	l.once.Do(func() { close(l.stop) })
	<-l.done
	l.cancel(errReleased)

	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	keys := l.g.keys(l.node, "lock", "waiters", "seen")
	res, err := releaseScript.Run(ctx, l.g.rdb, keys, l.owner, l.g.staleArg(), l.g.forgetArg()).Slice()
	if err != nil {
		return "", fmt.Errorf("release gate %s: %w", l.node, err)
	}
	if len(res) != 2 {
		return "", fmt.Errorf("release gate %s: unexpected reply %v", l.node, res)
	}
	if integer(res[0]) == 0 {
		return "", fmt.Errorf("release gate %s: %w (held by %q)", l.node, ErrNotHolder, str(res[1]))
	}
	next = str(res[1])
	l.g.signal(ctx, l.node, next)
	return next, nil
}
