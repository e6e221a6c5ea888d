// Package reconcile is the workers' periodic repair pass. Postgres is the truth and Redis only
// delivers, so anything Redis loses is found again here: every run in progress is advanced
// again (run:advance is idempotent, and delivers again a queued step whose task Redis lost, at
// the same attempt), so is every run that finished without the end of its log, and a step
// whose attempt stopped sending heartbeats — its worker died — gets a new attempt. The pass is cheap when there is nothing to do (it reads only runs
// and steps in progress and runs finished recently, through partial indexes). It runs once
// per HORIZON_RECONCILE_INTERVAL across all worker replicas, never two at once
// (workers/periodic); what it writes is fenced in SQL all the same (a step is requeued only at
// the attempt and heartbeat it read, a run advances under its row lock).
package reconcile

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/shared/horizon"
	"horizon/shared/queue"
	"horizon/shared/store"
	"horizon/workers/runs"
)

// IdempotencyRetention is how long Idempotency-Keys are kept.
const IdempotencyRetention = 24 * time.Hour

// batch bounds the work of one pass; the next pass continues.
const batch = 1000

// Handler runs the reconcile pass.
type Handler struct {
	DB      *pgxpool.Pool
	Queues  queue.Queues
	Enqueue queue.Enqueuer
	// StaleAfter is how long a step may go without a heartbeat before its attempt is presumed
	// dead; well above the steps' heartbeat interval.
	StaleAfter time.Duration
	Log        *slog.Logger
	Now        func() time.Time
}

// ProcessTask implements asynq.Handler.
func (h Handler) ProcessTask(ctx context.Context, _ *asynq.Task) error {
	return h.Pass(ctx)
}

// Pass runs one reconcile pass.
func (h Handler) Pass(ctx context.Context) error {
	expired, err := store.IdempotencyExpire(ctx, h.DB, IdempotencyRetention)
	if err != nil {
		return err
	}
	if expired > 0 {
		h.Log.InfoContext(ctx, "expired idempotency keys", "count", expired)
	}
	stale, err := store.StepsStale(ctx, h.DB, h.Now().Add(-h.StaleAfter), batch)
	if err != nil {
		return err
	}
	for _, s := range stale {
		step, err := store.StepRequeueStale(ctx, h.DB, s.ID, s.Attempt, h.Now().Add(-h.StaleAfter))
		if errors.Is(err, horizon.ErrNotFound) {
			continue // it moved on meanwhile
		}
		if err != nil {
			return err
		}
		h.Log.WarnContext(ctx, "step went silent; gave it a new attempt", "step_id", s.ID, "run_id", s.RunID, "attempt", step.Attempt)
		if err := h.Enqueue.Enqueue(ctx, queue.NewStep(h.Queues, step)); err != nil {
			return err
		}
	}
	inProgress, err := store.RunsInProgress(ctx, h.DB, batch)
	if err != nil {
		return err
	}
	// A run that finished without the end of its log is advanced again too: the advance ends
	// its log (workers/runs), storing first what its dead writers streamed.
	now := h.Now()
	unended, err := store.RunsFinishedWithoutLogEnd(ctx, h.DB, now.Add(-logEndWindow), now.Add(-runs.LogEndGrace), batch)
	if err != nil {
		return err
	}
	for _, id := range append(inProgress, unended...) {
		if err := h.Enqueue.Enqueue(ctx, queue.NewRunAdvance(h.Queues, id)); err != nil {
			return err
		}
	}
	return nil
}

// logEndWindow is how far back the pass looks for runs whose log was not ended: such a run is
// found by the next pass or two, so a day is ample, and the bound keeps the scan to recent runs.
const logEndWindow = 24 * time.Hour
