package gitsource

import (
	"context"
	"fmt"
	"time"

	"horizon/shared/flock"
)

// lock takes the repository's lock: first the in-process one, then the flock that other
// processes sharing the cache directory take too. Both waits end with ctx. The returned func
// releases it.
func (c *Cache) lock(ctx context.Context, key string) (release func(), err error) {
	ch := c.locks.get(key)
	select {
	case ch <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// The lock is held for the length of a fetch or a checkout, so a poll of up to 100 ms is
	// noise.
	l, err := flock.Wait(ctx, c.lockFile(key), 2*time.Millisecond, 100*time.Millisecond)
	if err != nil {
		<-ch
		return nil, fmt.Errorf("lock repository: %w", err)
	}
	return func() {
		l.Release()
		<-ch
	}, nil
}
