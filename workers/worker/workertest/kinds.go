package workertest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/shared/gate"
	"horizon/shared/horizon"
	"horizon/shared/queue"
	"horizon/shared/store"
	"horizon/workers/worker"
)

// Kinds is the workers as Start builds them — the same handlers on the same Postgres, Redis
// namespace, Terraform and secret box — but not started: nothing takes tasks from the queues.
// A test of one task kind hands a task built by shared/queue's constructor to Work, which runs
// that one delivery with the handler the server would use (River's rivertest.Worker does the
// same for a River worker), and then looks at what it left: rows, the sandbox, and the tasks
// it enqueued (Enqueued), which stay queued until the test runs them in turn.
type Kinds struct {
	*worker.Worker
	t         testing.TB
	db        *pgxpool.Pool
	inspector *asynq.Inspector
	gate      *gate.Gate
}

// NewKinds builds the workers for tests of single task kinds; o as for Start.
func NewKinds(t testing.TB, d Deps, o Options) *Kinds {
	t.Helper()
	g, err := gate.New(d.Redis, gate.Config{Prefix: d.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	return &Kinds{Worker: build(t, d, o), t: t, db: d.DB, inspector: asynq.NewInspectorFromRedisClient(d.Redis), gate: g}
}

// Crash makes s, which a delivery here just finished, look as a worker that died after its work
// and before recording its end leaves it: running, its end unrecorded, and the run not advanced
// past it — the steps its end queued are pending again and out of their node's line. The
// reconciler's requeue (store.StepRequeueStale) then gives it a new attempt.
func (k *Kinds) Crash(s horizon.Step) {
	k.t.Helper()
	ctx := k.t.Context()
	var finished time.Time
	if err := k.db.QueryRow(ctx, `WITH before AS (SELECT finished_at FROM steps WHERE id = $1)
		UPDATE steps SET state = 'running', finished_at = NULL WHERE id = $1 RETURNING (SELECT finished_at FROM before)`, s.ID).Scan(&finished); err != nil {
		k.t.Fatalf("crash step %s: %v", s.ID, err)
	}
	for _, next := range k.Steps(s.RunID) {
		if next.State != horizon.StepQueued || next.ReadyAt == nil || next.ReadyAt.Before(finished) {
			continue
		}
		if next.TakesGate() {
			if err := k.gate.Leave(ctx, queue.GateNode(*next.ServerID, *next.Node), queue.StepTaskID(next.ID, next.Attempt)); err != nil {
				k.t.Fatal(err)
			}
		}
		if _, err := k.db.Exec(ctx, `UPDATE steps SET state = 'pending', ready_at = NULL WHERE id = $1`, next.ID); err != nil {
			k.t.Fatal(err)
		}
	}
}

// Work runs one delivery of task and returns what the handler returned: nil when Asynq would
// mark the task done, an error when it would retry it.
func (k *Kinds) Work(task *asynq.Task) error {
	k.t.Helper()
	return k.Worker.Work(k.t.Context(), task)
}

// Advance runs one delivery of run:advance for run and fails the test on an error.
func (k *Kinds) Advance(run uuid.UUID) {
	k.t.Helper()
	if err := k.Work(queue.NewRunAdvance(k.Queues, run)); err != nil {
		k.t.Fatalf("advance run %s: %v", run, err)
	}
}

// Step runs one delivery of s's current attempt with the task run:advance would have queued
// for it (step:run, iso:stage, action:run or nagios:publish, by its kind).
func (k *Kinds) Step(s horizon.Step) error {
	k.t.Helper()
	return k.Work(queue.NewStep(k.Queues, s))
}

// Queued advances run once and returns its steps that are then queued: the deliveries
// run:advance handed on.
func (k *Kinds) Queued(run uuid.UUID) []horizon.Step {
	k.t.Helper()
	k.Advance(run)
	var out []horizon.Step
	for _, s := range k.Steps(run) {
		if s.State == horizon.StepQueued {
			out = append(out, s)
		}
	}
	return out
}

// Finish runs run to its end — one delivery of each queued step after each advance, in the
// order of the run's steps — and returns its final state. A delivery handed back (an error)
// fails the test.
func (k *Kinds) Finish(run uuid.UUID) horizon.RunState {
	k.t.Helper()
	for q := k.Queued(run); len(q) > 0; q = k.Queued(run) {
		for _, s := range q {
			if err := k.Step(s); err != nil {
				k.t.Fatalf("%s of %s: %v", s.Kind, s.Job, err)
			}
		}
	}
	r, err := store.RunGet(k.t.Context(), k.db, run)
	if err != nil {
		k.t.Fatal(err)
	}
	return r.State
}

// Steps returns run's steps as they are now.
func (k *Kinds) Steps(run uuid.UUID) []horizon.Step {
	k.t.Helper()
	s, err := store.StepsOfRun(k.t.Context(), k.db, run)
	if err != nil {
		k.t.Fatal(err)
	}
	return s
}

// StepNow returns the step with id as it is now.
func (k *Kinds) StepNow(id uuid.UUID) horizon.Step {
	k.t.Helper()
	s, err := store.StepGet(k.t.Context(), k.db, id)
	if err != nil {
		k.t.Fatal(err)
	}
	return s
}

// Enqueued returns the tasks of type typ waiting in the workers' queues (pending, or scheduled
// for later as a gate wait is), in no particular order.
func (k *Kinds) Enqueued(typ string) []*asynq.TaskInfo {
	k.t.Helper()
	var out []*asynq.TaskInfo
	for _, q := range []string{k.Queues.Control, k.Queues.Build, k.Queues.Notify} {
		for _, list := range []func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){k.inspector.ListPendingTasks, k.inspector.ListScheduledTasks} {
			tasks, err := list(q, asynq.PageSize(1000))
			if errors.Is(err, asynq.ErrQueueNotFound) {
				continue
			}
			if err != nil {
				k.t.Fatalf("list the tasks of queue %s: %v", q, err)
			}
			for _, task := range tasks {
				if task.Type == typ {
					out = append(out, task)
				}
			}
		}
	}
	return out
}
