package gitsource

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
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
	f, err := os.OpenFile(c.lockFile(key), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		<-ch
		return nil, fmt.Errorf("open repository lock: %w", err)
	}
	// flock cannot wait on a context, so poll with a backoff; the lock is held for the length
	// of a fetch or a checkout, so a few hundred milliseconds of latency is noise.
	delay := 2 * time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close() // the lock was not taken; nothing to release
			<-ch
			return nil, fmt.Errorf("lock repository: %w", err)
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			_ = f.Close()
			<-ch
			return nil, ctx.Err()
		}
		delay = min(delay*2, 100*time.Millisecond)
	}
	return func() {
		_ = f.Close() // closing the only descriptor releases the flock
		<-ch
	}, nil
}
