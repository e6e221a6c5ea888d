package gate_test

import (
	"context"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"horizon/shared/gate"
	"horizon/shared/testkit"
)

func TestAsynqWaker(t *testing.T) {
	t.Parallel()
	rdb, ns := testkit.Redis(t)
	queue := ns + "-build"
	client := asynq.NewClientFromRedisClient(rdb)
	insp := asynq.NewInspectorFromRedisClient(rdb)
	t.Cleanup(func() { _ = insp.DeleteQueue(queue, true) }) // drops the queue from asynq:queues

	// A waiter sitting out its retry delay (scheduled, as far as Asynq's sets go).
	_, err := client.Enqueue(asynq.NewTask("step:run", nil), asynq.TaskID("w1"), asynq.Queue(queue),
		asynq.ProcessIn(time.Hour), asynq.MaxRetry(3), asynq.Timeout(time.Minute))
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	wake := gate.AsynqWaker(insp, queue)
	if !wake(context.Background(), "pve-1", "w1") {
		t.Fatal("wake of a scheduled task: not done")
	}
	info, err := insp.GetTaskInfo(queue, "w1")
	if err != nil {
		t.Fatalf("task info: %v", err)
	}
	if info.State != asynq.TaskStatePending {
		t.Errorf("state %v after wake, want pending", info.State)
	}
	// Pending already, or unknown: nothing to do, nothing to retry.
	if !wake(context.Background(), "pve-1", "w1") || !wake(context.Background(), "pve-1", "missing") {
		t.Error("wake of a pending or missing task: not done")
	}
}

func TestWakeOnHeadChange(t *testing.T) {
	t.Parallel()
	woken := make(chan string, 10)
	g, _, _ := newGate(t, gate.Config{Wake: func(_ context.Context, _, owner string) bool {
		woken <- owner
		return true
	}})
	expect := func(want string) {
		t.Helper()
		select {
		case got := <-woken:
			if got != want {
				t.Fatalf("woke %q, want %q", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s not woken", want)
		}
	}

	holder := acquire(t, g, "pve-1", "holder")
	busy(t, g, "pve-1", "a")
	busy(t, g, "pve-1", "b")
	release(t, holder)
	expect("a") // at the release: a is first at a free gate
	a := acquire(t, g, "pve-1", "a")
	expect("b") // at the grant: b is now first, behind a
	if err := g.Leave(context.Background(), "pve-1", "b"); err != nil {
		t.Fatalf("leave: %v", err)
	}
	release(t, a)
	select {
	case got := <-woken:
		t.Errorf("woke %q with nobody in line", got)
	default:
	}
}
