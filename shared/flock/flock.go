// Package flock takes exclusive flock(2) locks on files: the locks the worker processes of one
// host share (a work dir, the plugin cache's init, a git repository of the cache).
//
// A lock goes with its open file description, so a worker that dies cannot leave one held.
// Release unlocks explicitly before it closes: a child that any goroutine of this process
// forks while the lock is held shares that description until it execs, and while it does,
// closing our descriptor alone would leave the lock held by the child's copy. A Try right
// after the Release would then find it taken.
package flock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Lock is a held lock. Release it once.
type Lock struct{ f *os.File }

// Try takes the lock on path, creating the file if needed, without waiting: ok is false when
// another holder has it.
func Try(path string) (l *Lock, ok bool, err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("open lock file: %w", err)
	}
	if ok, err := take(f); !ok || err != nil {
		_ = f.Close()
		if err != nil {
			return nil, false, fmt.Errorf("lock %s: %w", path, err)
		}
		return nil, false, nil
	}
	return &Lock{f: f}, true, nil
}

// Wait takes the lock on path, waiting until ctx is done. flock has no timeout, so Wait polls
// a non-blocking attempt, from first apart doubling up to most: the locks of this package are
// held for an init or a fetch, so a few hundred milliseconds of latency is noise, and polling
// keeps the wait cancellable.
func Wait(ctx context.Context, path string, first, most time.Duration) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	delay := first
	for {
		ok, err := take(f)
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if ok {
			return &Lock{f: f}, nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			_ = f.Close()
			return nil, fmt.Errorf("wait for lock %s: %w", path, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, most)
	}
}

// take makes one non-blocking attempt on f.
func take(f *os.File) (ok bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EINTR):
		return false, nil
	}
	return false, err
}

// Release gives the lock up: explicitly (see the package doc), then by closing the file.
func (l *Lock) Release() {
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN) // closing releases it anyway
	_ = l.f.Close()                                   // nothing was written to flush
}
