// Package periodic runs the workers' periodic passes (reconcile, Nagios discovery, and whatever
// joins them: a pass is one Job and one handler) once per time slot across every worker
// replica.
//
// Decisions:
//   - Slots, not a leader. Every replica's Scheduler enqueues each job once per wall-clock slot
//     (the slot number is the Unix time divided by the period, the same on every replica) with
//     an Asynq TaskID derived from the slot and a Retention of one period, so that Asynq keeps
//     the finished task's id and drops every other replica's enqueue of that slot
//     (asynq.Unique would not do: its lock goes when the task finishes, and a replica whose
//     clock ticks a little later enqueued the slot again — N replicas ran it about N times).
//     No replica is special, so none has to be elected, watched or replaced, and a slot runs
//     as long as one replica is alive.
//   - Redis may still lose a slot's id in a failover (the write was not replicated), so the
//     handler of a pass runs under Guard: a Postgres transaction-level advisory lock per job,
//     tried, never waited for. Two passes of one job never act at once; the second one is
//     skipped, not queued behind the first. If the primary goes away mid-pass, the lock goes
//     with its session, and what the pass writes is fenced in SQL anyway (a step is requeued
//     only if its attempt and heartbeat are still the ones read, a run advances under its row
//     lock).
//   - An enqueue that fails (Redis switching) is retried within the slot every RetryDelay, so
//     a failover costs a slot only when it outlasts the slot.
package periodic

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/shared/queue"
)

// Job is one periodic pass: its task type (served by a handler wrapped in Guard) and period.
type Job struct {
	Type   string
	Period time.Duration
}

// RetryDelay is how soon a Scheduler tries again a slot whose enqueue failed.
const RetryDelay = time.Second

// Scheduler enqueues each job once per slot of its period. Run it on every replica.
type Scheduler struct {
	Enqueue queue.Enqueuer
	Queues  queue.Queues
	Jobs    []Job
	Log     *slog.Logger
}

// Run enqueues the current slot of every job at once, then each following slot as it begins,
// until ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, j := range s.Jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.loop(ctx, j)
		}()
	}
	wg.Wait()
}

func (s *Scheduler) loop(ctx context.Context, j Job) {
	for {
		now := time.Now()
		wait := time.Until(time.Unix(0, (queue.Slot(now, j.Period)+1)*int64(j.Period)))
		if err := s.Enqueue.Enqueue(ctx, queue.NewPeriodic(s.Queues, j.Type, j.Period, now)); err != nil {
			if ctx.Err() != nil {
				return
			}
			s.Log.WarnContext(ctx, "could not enqueue a periodic task; retrying", "task_type", j.Type, "error", err)
			wait = min(wait, RetryDelay)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Guard runs h under a Postgres advisory lock named after the task's type, held by a
// transaction for as long as h runs: when another pass of the same type holds it, the task is
// done at once without running h (the other pass does the work).
func Guard(db *pgxpool.Pool, log *slog.Logger, h asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		tx, err := db.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() {
			// Ending the transaction releases the lock; a cancelled task must still release it.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = tx.Rollback(rctx) // the transaction wrote nothing: rolling back is its end
		}()
		var got bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))`, lockKey(t.Type())).Scan(&got); err != nil {
			return err
		}
		if !got {
			log.InfoContext(ctx, "another pass is running; skipped this one", "task_type", t.Type())
			return nil
		}
		return h.ProcessTask(ctx, t)
	})
}

func lockKey(typ string) string { return "horizon:periodic:" + typ }
