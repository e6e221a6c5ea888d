package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/horizon"
)

const stepColumns = `id, run_id, position, phase, phase_name, job, execution_id, execution_index, kind, state, attempt,
	server_id, node, fence, reason, error, ready_at, started_at, finished_at, heartbeat_at, gate_wait_ms, template_version, only_if_changed,
	action_instance_id`

func scanStep(row pgx.Row) (horizon.Step, error) {
	var s horizon.Step
	err := row.Scan(&s.ID, &s.RunID, &s.Position, &s.Phase, &s.PhaseName, &s.Job, &s.ExecutionID, &s.ExecutionIndex, &s.Kind,
		&s.State, &s.Attempt, &s.ServerID, &s.Node, &s.Fence, &s.Reason, &s.Error, &s.ReadyAt, &s.StartedAt, &s.FinishedAt,
		&s.HeartbeatAt, &s.GateWaitMS, &s.TemplateVersion, &s.OnlyIfChanged, &s.ActionInstanceID)
	return s, err
}

// StepsOfRun returns a run's steps in order.
func StepsOfRun(ctx context.Context, q Querier, run uuid.UUID) ([]horizon.Step, error) {
	rows, err := q.Query(ctx, `SELECT `+stepColumns+` FROM steps WHERE run_id = $1 ORDER BY position`, run)
	if err != nil {
		return nil, translate(err)
	}
	steps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.Step, error) { return scanStep(r) })
	return steps, translate(err)
}

// StepGet returns one step.
func StepGet(ctx context.Context, q Querier, id uuid.UUID) (horizon.Step, error) {
	s, err := scanStep(q.QueryRow(ctx, `SELECT `+stepColumns+` FROM steps WHERE id = $1`, id))
	if err != nil {
		return s, fmt.Errorf("step %s: %w", id, translate(err))
	}
	return s, nil
}

// StepQueue marks a pending step queued with a new attempt and returns it: the attempt names
// the task that will run it, and fences that task's writes.
func StepQueue(ctx context.Context, q Querier, id uuid.UUID) (horizon.Step, error) {
	s, err := scanStep(q.QueryRow(ctx, `UPDATE steps SET state = 'queued', attempt = attempt + 1,
		ready_at = COALESCE(ready_at, now()), heartbeat_at = now()
		WHERE id = $1 AND state IN ('pending', 'queued', 'running') RETURNING `+stepColumns, id))
	return s, translate(err)
}

// StepStart marks a step running for attempt, recording how long it waited since it became
// ready (for a machine build, mostly the wait for its node's gate). It reports false when the
// attempt is no longer the step's (a superseded or duplicate delivery), which then must do
// nothing.
func StepStart(ctx context.Context, q Querier, id uuid.UUID, attempt int, fence *int64) (bool, error) {
	tag, err := q.Exec(ctx, `UPDATE steps SET state = 'running', started_at = now(), heartbeat_at = now(),
		gate_wait_ms = (extract(epoch FROM now() - COALESCE(ready_at, now())) * 1000)::bigint, fence = COALESCE($3, fence)
		WHERE id = $1 AND attempt = $2 AND state IN ('queued', 'running')`, id, attempt, fence)
	return tag.RowsAffected() == 1, translate(err)
}

// StepHeartbeat records that attempt is alive — running, or waiting for its node's gate; false
// when it no longer owns the step.
func StepHeartbeat(ctx context.Context, q Querier, id uuid.UUID, attempt int) (bool, error) {
	tag, err := q.Exec(ctx, `UPDATE steps SET heartbeat_at = now() WHERE id = $1 AND attempt = $2 AND state IN ('queued', 'running')`, id, attempt)
	return tag.RowsAffected() == 1, translate(err)
}

// StepFinish ends attempt of a step in state with an optional first error line and reason. It
// reports false when the attempt no longer owns the step (its result is then discarded).
func StepFinish(ctx context.Context, q Querier, id uuid.UUID, attempt int, state horizon.StepState, errLine, reason *string) (bool, error) {
	tag, err := q.Exec(ctx, `UPDATE steps SET state = $3, error = $4, reason = COALESCE($5, reason), finished_at = now()
		WHERE id = $1 AND attempt = $2 AND state IN ('queued', 'running')`, id, attempt, state, errLine, reason)
	return tag.RowsAffected() == 1, translate(err)
}

// StaleStep is a step whose worker stopped sending heartbeats.
type StaleStep struct {
	ID, RunID uuid.UUID
	Attempt   int
}

// StepsStale returns running or queued steps without a heartbeat since before: their worker
// died, or Redis lost their task.
func StepsStale(ctx context.Context, q Querier, before time.Time, limit int) ([]StaleStep, error) {
	rows, err := q.Query(ctx, `SELECT id, run_id, attempt FROM steps WHERE state IN ('queued', 'running') AND heartbeat_at < $1
		ORDER BY heartbeat_at LIMIT $2`, before, limit)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (StaleStep, error) {
		var s StaleStep
		err := r.Scan(&s.ID, &s.RunID, &s.Attempt)
		return s, err
	})
	return out, translate(err)
}

// StepSetState moves one step that has not started to state (held, canceled, skipped).
func StepSetState(ctx context.Context, q Querier, id uuid.UUID, state horizon.StepState) error {
	_, err := q.Exec(ctx, `UPDATE steps SET state = $2, finished_at = now() WHERE id = $1 AND state IN ('pending', 'queued')`, id, state)
	return translate(err)
}

// StepRequeueStale gives a step whose attempt went silent (no heartbeat since before) a new
// attempt, queued. It returns the step, or horizon.ErrNotFound when the step moved on
// meanwhile (finished, or another pass requeued it).
func StepRequeueStale(ctx context.Context, q Querier, id uuid.UUID, attempt int, before time.Time) (horizon.Step, error) {
	s, err := scanStep(q.QueryRow(ctx, `UPDATE steps SET state = 'queued', attempt = attempt + 1, heartbeat_at = now(), ready_at = now()
		WHERE id = $1 AND attempt = $2 AND state IN ('queued', 'running') AND heartbeat_at < $3 RETURNING `+stepColumns,
		id, attempt, before))
	return s, translate(err)
}

// StepCountsInProgress returns how many steps of the runs in progress are in each state (states
// with none are absent). It reads only those runs (through their partial index), so its cost
// does not grow with history; it is what /metrics reports as steps by state.
func StepCountsInProgress(ctx context.Context, q Querier) (map[horizon.StepState]int, error) {
	rows, err := q.Query(ctx, `SELECT s.state, count(*) FROM runs r JOIN steps s ON s.run_id = r.id
		WHERE r.state IN ('queued', 'running', 'canceling') GROUP BY s.state`)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[horizon.StepState]int{}
	for rows.Next() {
		var state horizon.StepState
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			return nil, fmt.Errorf("scan step counts: %w", err)
		}
		out[state] = n
	}
	return out, translate(rows.Err())
}

// StepsSetActionInstance ties the steps of run (a terraform action's) to the instance it
// applies, numbered like it.
func StepsSetActionInstance(ctx context.Context, q Querier, run, instance uuid.UUID, number int) error {
	_, err := q.Exec(ctx, `UPDATE steps SET action_instance_id = $2, execution_index = $3 WHERE run_id = $1`, run, instance, number)
	return translate(err)
}
