// Package queue names Horizon's Asynq tasks and builds them: one constant per task type
// (<area>:<verb>), one small payload struct of ids per type, and one constructor per type that
// sets the queue, MaxRetry, Timeout and a deterministic TaskID explicitly — Asynq's defaults (25
// retries, 30 minutes) are never what we want by accident.
//
// Postgres is the truth and Redis only delivers: payloads carry ids, handlers re-read the rows,
// and a lost task is re-enqueued by the reconciler.
package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
)

// Task types.
const (
	// TypeReconcile is the periodic repair pass: it re-drives runs that Redis lost and deletes
	// expired records.
	TypeReconcile = "reconcile:run"
)

// Queues are the Asynq queue names of one installation. Control tasks (advancing runs,
// reconciling) have their own queue, served with priority, so that long builds holding the
// worker slots never delay them.
type Queues struct {
	Control string
	Build   string
}

// Names returns the queues of namespace (HORIZON_NAMESPACE). Asynq has no key prefix, so the
// namespace is carried in the queue names.
func Names(namespace string) Queues {
	return Queues{Control: namespace + "-control", Build: namespace + "-build"}
}

// Weights is the Asynq server's Queues setting: control first.
func (q Queues) Weights() map[string]int {
	return map[string]int{q.Control: 6, q.Build: 4}
}

// NewReconcile returns the reconcile task. It is unique for a period, so that the schedulers of
// several worker replicas enqueue one pass per tick between them.
func NewReconcile(q Queues, period time.Duration) *asynq.Task {
	return asynq.NewTask(TypeReconcile, nil,
		asynq.Queue(q.Control), asynq.MaxRetry(0), asynq.Timeout(period), asynq.Unique(period))
}

// Enqueuer enqueues tasks; a duplicate (same TaskID, or inside a Unique window) counts as
// success, because it means the work is already queued.
type Enqueuer struct {
	Client *asynq.Client
}

// Enqueue enqueues t.
func (e Enqueuer) Enqueue(ctx context.Context, t *asynq.Task, opts ...asynq.Option) error {
	_, err := e.Client.EnqueueContext(ctx, t, opts...)
	if err == nil || errors.Is(err, asynq.ErrTaskIDConflict) || errors.Is(err, asynq.ErrDuplicateTask) {
		return nil
	}
	return fmt.Errorf("enqueue %s: %w", t.Type(), err)
}
