package terraform

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestLockFileExcludesAndReleases(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "init.lock")
	unlock, err := lockFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	// A second holder (another open file description, as another worker process would have)
	// must wait; its context ends the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if _, err := lockFile(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock while held: got %v, want DeadlineExceeded", err)
	}

	got := make(chan error, 1)
	go func() {
		unlock2, err := lockFile(context.Background(), path)
		if err == nil {
			unlock2()
		}
		got <- err
	}()
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("lock after release: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("lock not granted within 10s of its release")
	}
}
