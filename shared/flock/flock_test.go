package flock

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestALockExcludesOthersUntilReleased(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.lock")
	l, ok, err := Try(path)
	if err != nil || !ok {
		t.Fatalf("first Try: ok %v, err %v", ok, err)
	}
	if _, ok, err := Try(path); ok || err != nil {
		t.Fatalf("Try while held: ok %v, err %v", ok, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Wait(ctx, path, time.Millisecond, 10*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait while held: %v, want the context's end", err)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := Wait(context.Background(), path, time.Millisecond, 10*time.Millisecond)
		if err == nil {
			l2.Release()
		}
		got <- err
	}()
	l.Release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait not granted within 10 s of the release")
	}
}

// TestAReleasedLockIsFreeWhileAChildHoldsItsDescriptor: a process this one started while the
// lock was held shares its descriptor (as every child does between fork and exec); the lock is
// free for the next Try as soon as it is released, not when that child closes its copy.
func TestAReleasedLockIsFreeWhileAChildHoldsItsDescriptor(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.lock")
	l, ok, err := Try(path)
	if err != nil || !ok {
		t.Fatalf("first Try: ok %v, err %v", ok, err)
	}
	child := exec.Command("sleep", "60")
	child.ExtraFiles = append(child.ExtraFiles, l.f)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	l.Release()
	l2, ok, err := Try(path)
	if err != nil || !ok {
		t.Fatalf("Try after the release, the child still running: ok %v, err %v", ok, err)
	}
	l2.Release()
}
