package rstream

import "context"

// Subscription is a follow as a channel, for an SSE writer that also selects on a heartbeat:
// the logs' (logstream.Hub.Subscribe) and the events' (events.Hub.Subscribe) alike.
type Subscription[M any] struct {
	// C carries the messages; it is closed once the follow returned: after its last message
	// (a log's end, a lagging follower's notice), or when it fails or is closed.
	C <-chan M

	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// Subscribe runs follow in a goroutine of its own, until ctx ends or Close is called, sending
// what it passes to C, which buffers up to buffer messages. A reader that stops receiving
// from C blocks follow, whose hub then drops it, in time, as lagging (Config.Buffer).
func Subscribe[M any](ctx context.Context, buffer int, follow func(ctx context.Context, fn func(M) error) error) *Subscription[M] {
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan M, buffer)
	s := &Subscription[M]{C: ch, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(ch)
		s.err = follow(ctx, func(m M) error {
			select {
			case ch <- m:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	return s
}

// Close ends the subscription and waits for its goroutine. It may be called more than once.
func (s *Subscription[M]) Close() {
	s.cancel()
	<-s.done
}

// Err returns why C was closed: nil after the follow's last message, otherwise the error
// (context.Canceled after Close). Call it only once C is closed.
func (s *Subscription[M]) Err() error { return s.err }
