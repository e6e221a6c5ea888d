package periodic_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"horizon/shared/queue"
	"horizon/shared/testkit"
	"horizon/workers/periodic"
)

// TestSchedulersOfTwoReplicasRunEachSlotOnce: two worker replicas (a scheduler and an Asynq
// server each, on one Redis namespace and one database), the second started half a period
// after the first as replicas are, over several slots of a short period: every slot of every
// job ran exactly once, whichever replica ran it.
func TestSchedulersOfTwoReplicasRunEachSlotOnce(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	rdb, ns := testkit.Redis(t)
	queues := queue.Names(ns)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	const period = time.Second
	jobs := []periodic.Job{{Type: queue.TypeReconcile, Period: period}, {Type: queue.TypeNagiosDiscover, Period: 2 * period}}

	var mu sync.Mutex
	runs := map[string]map[int64]int{} // task type → slot → runs
	count := asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
		var p queue.Periodic
		if err := json.Unmarshal(task.Payload(), &p); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if runs[task.Type()] == nil {
			runs[task.Type()] = map[int64]int{}
		}
		runs[task.Type()][p.Slot]++
		return nil
	})
	ctx, stop := context.WithCancel(context.Background())
	var scheds sync.WaitGroup
	start := time.Now()
	for i := range 2 {
		if i > 0 {
			time.Sleep(period / 2) // the first replica's pass of this slot has finished by now
		}
		mux := asynq.NewServeMux()
		for _, j := range jobs {
			mux.Handle(j.Type, periodic.Guard(db, log, count))
		}
		srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{Concurrency: 2, Queues: queues.Weights(),
			TaskCheckInterval: 50 * time.Millisecond, Logger: quiet{}})
		if err := srv.Start(mux); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Shutdown)
		s := &periodic.Scheduler{Enqueue: queue.Enqueuer{Client: asynq.NewClientFromRedisClient(rdb)}, Queues: queues, Jobs: jobs, Log: log}
		scheds.Add(1)
		go func() {
			defer scheds.Done()
			s.Run(ctx)
		}()
	}
	time.Sleep(8 * period) // the slots under test: a wait on wall-clock time is the subject here
	stop()
	scheds.Wait()
	end := time.Now()

	inspector := asynq.NewInspectorFromRedisClient(rdb)
	testkit.Eventually(t, 10*time.Second, "the enqueued passes did not all run", func() bool {
		info, err := inspector.GetQueueInfo(queues.Control)
		return err == nil && info.Pending+info.Active+info.Scheduled == 0
	})
	mu.Lock()
	defer mu.Unlock()
	for _, j := range jobs {
		first, last := queue.Slot(start, j.Period), queue.Slot(end, j.Period)
		for slot := first; slot <= last; slot++ {
			n := runs[j.Type][slot]
			if slot == last && n == 0 {
				continue // the schedulers stopped before it began, or just as it began
			}
			if n != 1 {
				t.Errorf("%s ran %d times in slot %d, want 1 (runs per slot: %v)", j.Type, n, slot, runs[j.Type])
			}
		}
		if len(runs[j.Type]) < int(last-first) {
			t.Errorf("%s ran in %d slots of %d", j.Type, len(runs[j.Type]), last-first+1)
		}
	}
}

// TestGuardSkipsAPassWhileAnotherRuns: a pass delivered twice (Redis lost the slot's id in a
// failover) runs once at a time: the second delivery finds the first one's lock and does
// nothing; once the first has finished, a later pass runs again.
func TestGuardSkipsAPassWhileAnotherRuns(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var acting atomic.Int32
	entered, release := make(chan struct{}), make(chan struct{})
	h := periodic.Guard(db, log, asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		acting.Add(1)
		entered <- struct{}{}
		<-release
		return nil
	}))
	task := asynq.NewTask(queue.TypeReconcile, nil)
	first := make(chan error, 1)
	go func() { first <- h.ProcessTask(context.Background(), task) }()
	<-entered

	second := make(chan error, 1)
	go func() { second <- h.ProcessTask(context.Background(), task) }()
	select {
	case err := <-second:
		if err != nil {
			t.Fatalf("the skipped pass: %v", err)
		}
	case <-entered:
		t.Fatal("a second pass acted while the first one ran")
	case <-time.After(10 * time.Second):
		t.Fatal("the second pass neither skipped nor ran")
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if n := acting.Load(); n != 1 {
		t.Fatalf("%d passes acted, want 1", n)
	}

	release = make(chan struct{})
	close(release)
	go func() { <-entered }()
	if err := h.ProcessTask(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	if n := acting.Load(); n != 2 {
		t.Fatalf("%d passes acted after the first finished, want 2", n)
	}
}

type quiet struct{}

func (quiet) Debug(...any) {}
func (quiet) Info(...any)  {}
func (quiet) Warn(...any)  {}
func (quiet) Error(...any) {}
func (quiet) Fatal(...any) {}
