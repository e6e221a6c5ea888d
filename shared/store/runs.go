package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/horizon"
)

const runColumns = `id, stack_id, iso_id, kind, state, actor_id, error, created_at, started_at, finished_at`

func scanRun(row pgx.Row) (horizon.Run, error) {
	var r horizon.Run
	err := row.Scan(&r.ID, &r.StackID, &r.ISOID, &r.Kind, &r.State, &r.ActorID, &r.Error, &r.CreatedAt, &r.StartedAt, &r.FinishedAt)
	return r, err
}

// ErrRunInProgress is returned by RunInsertWithSteps when the stack already has a run in
// progress; it wraps horizon.ErrBusy.
var ErrRunInProgress = fmt.Errorf("a run is in progress: %w", horizon.ErrBusy)

// RunInsertWithSteps inserts a run and its steps (positions are assigned in order). At most one
// run per stack (or per ISO) may be in progress: the partial unique indexes make a concurrent
// second insert fail with ErrRunInProgress, whatever the callers checked before.
func RunInsertWithSteps(ctx context.Context, q Querier, run horizon.Run, steps []horizon.Step) (horizon.Run, []horizon.Step, error) {
	r, err := scanRun(q.QueryRow(ctx, `INSERT INTO runs (stack_id, iso_id, kind, actor_id) VALUES ($1, $2, $3, $4) RETURNING `+runColumns,
		run.StackID, run.ISOID, run.Kind, run.ActorID))
	if err != nil {
		var ce *horizon.ConflictError
		if errors.As(translate(err), &ce) && (ce.Constraint == "runs_one_active_key" || ce.Constraint == "runs_one_active_iso_key") {
			return r, nil, ErrRunInProgress
		}
		return r, nil, translate(err)
	}
	// An action changes nothing the stack's state depends on: the last run kind (which says a
	// removal failed) stays that of the last run that did.
	if run.StackID != nil && run.Kind != horizon.RunAction {
		if _, err := q.Exec(ctx, `UPDATE stacks SET last_run_kind = $2 WHERE id = $1`, run.StackID, run.Kind); err != nil {
			return r, nil, translate(err)
		}
	}
	out := make([]horizon.Step, 0, len(steps))
	for i, s := range steps {
		st, err := scanStep(q.QueryRow(ctx, `INSERT INTO steps (run_id, position, phase, phase_name, job, execution_id, execution_index,
			kind, state, server_id, node, reason, template_version, only_if_changed, action_instance_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING `+stepColumns,
			r.ID, i, s.Phase, s.PhaseName, s.Job, s.ExecutionID, s.ExecutionIndex, s.Kind, stateOr(s.State), s.ServerID, s.Node, s.Reason,
			s.TemplateVersion, s.OnlyIfChanged, s.ActionInstanceID))
		if err != nil {
			return r, nil, translate(err)
		}
		out = append(out, st)
	}
	return r, out, nil
}

func stateOr(s horizon.StepState) horizon.StepState {
	if s == "" {
		return horizon.StepPending
	}
	return s
}

// RunGet returns a run.
func RunGet(ctx context.Context, q Querier, id uuid.UUID) (horizon.Run, error) {
	r, err := scanRun(q.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id))
	if err != nil {
		return r, fmt.Errorf("run %s: %w", id, translate(err))
	}
	return r, nil
}

// RunOwnerLock locks the row of the run's owner, its stack or its ISO, until the transaction
// ends, and returns the stack's team (none for an ISO). A transaction that locks both a run
// and its owner takes the owner first — the API's cancel locks the stack to find its run, and
// the advance that ends a run updates its owner — so no two of them wait on each other.
func RunOwnerLock(ctx context.Context, q Querier, id uuid.UUID) (team uuid.UUID, err error) {
	var stack, iso *uuid.UUID
	if err := q.QueryRow(ctx, `SELECT stack_id, iso_id FROM runs WHERE id = $1`, id).Scan(&stack, &iso); err != nil {
		return team, fmt.Errorf("run %s: %w", id, translate(err))
	}
	switch {
	case stack != nil:
		err = q.QueryRow(ctx, `SELECT team_id FROM stacks WHERE id = $1 FOR UPDATE`, *stack).Scan(&team)
	case iso != nil:
		err = q.QueryRow(ctx, `SELECT id FROM isos WHERE id = $1 FOR UPDATE`, *iso).Scan(new(uuid.UUID))
	}
	if err != nil {
		return team, fmt.Errorf("owner of run %s: %w", id, translate(err))
	}
	return team, nil
}

// RunGetForUpdate returns a run, locking it until the transaction ends: advancing a run is
// serialised on this lock. Lock its owner first (RunOwnerLock).
func RunGetForUpdate(ctx context.Context, q Querier, id uuid.UUID) (horizon.Run, error) {
	r, err := scanRun(q.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return r, fmt.Errorf("run %s: %w", id, translate(err))
	}
	return r, nil
}

// RunOwner is whose runs a query reads: a stack's (OfStack) or an ISO's (OfISO). The queries
// are the same for both; only the column differs.
type RunOwner struct {
	column string // "stack_id" or "iso_id": a constant, never input
	id     uuid.UUID
}

// OfStack is the runs of a stack.
func OfStack(id uuid.UUID) RunOwner { return RunOwner{column: "stack_id", id: id} }

// OfISO is the runs of an ISO.
func OfISO(id uuid.UUID) RunOwner { return RunOwner{column: "iso_id", id: id} }

// RunActive returns the owner's run in progress, or horizon.ErrNotFound.
func RunActive(ctx context.Context, q Querier, o RunOwner) (horizon.Run, error) {
	r, err := scanRun(q.QueryRow(ctx, `SELECT `+runColumns+` FROM runs
		WHERE `+o.column+` = $1 AND state IN ('queued', 'running', 'canceling')`, o.id))
	return r, translate(err)
}

// RunLatest returns the owner's most recent run, or horizon.ErrNotFound.
func RunLatest(ctx context.Context, q Querier, o RunOwner) (horizon.Run, error) {
	r, err := scanRun(q.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE `+o.column+` = $1 ORDER BY id DESC LIMIT 1`, o.id))
	return r, translate(err)
}

// RunLatestChange returns the stack's most recent run that is not an action (the run whose
// steps say what a failed stack has left to do), or horizon.ErrNotFound.
func RunLatestChange(ctx context.Context, q Querier, stack uuid.UUID) (horizon.Run, error) {
	r, err := scanRun(q.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE stack_id = $1 AND kind <> 'action' ORDER BY id DESC LIMIT 1`, stack))
	return r, translate(err)
}

// RunNext returns the owner's first run created after the run after (uuid.Nil: its first run
// ever), or horizon.ErrNotFound. Run ids are time-ordered, so this is the run that followed.
func RunNext(ctx context.Context, q Querier, o RunOwner, after uuid.UUID) (horizon.Run, error) {
	r, err := scanRun(q.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE `+o.column+` = $1 AND id > $2 ORDER BY id LIMIT 1`, o.id, after))
	return r, translate(err)
}

// RunList returns one page of the owner's runs, newest first.
func RunList(ctx context.Context, q Querier, o RunOwner, p Page) ([]horizon.Run, *uuid.UUID, error) {
	return RunListOfKind(ctx, q, o, "", p)
}

// RunListOfKind returns one page of the owner's runs of kind (every kind when ""), newest first.
func RunListOfKind(ctx context.Context, q Querier, o RunOwner, kind horizon.RunKind, p Page) ([]horizon.Run, *uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT `+runColumns+` FROM runs WHERE `+o.column+` = $1 AND ($2::uuid IS NULL OR id < $2)
		AND ($4 = '' OR kind = $4) ORDER BY id DESC LIMIT $3`, o.id, p.After, p.limit(), string(kind))
	if err != nil {
		return nil, nil, translate(err)
	}
	runs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.Run, error) { return scanRun(r) })
	if err != nil {
		return nil, nil, translate(err)
	}
	runs, next := cut(runs, p, func(r horizon.Run) uuid.UUID { return r.ID })
	return runs, next, nil
}

// RunSetState moves a run to state, stamping started_at / finished_at. A run that finishes
// emits its notification (run.finished or action.finished) in q's transaction.
func RunSetState(ctx context.Context, q Querier, id uuid.UUID, state horizon.RunState, errText *string) (horizon.Run, error) {
	r, err := scanRun(q.QueryRow(ctx, `UPDATE runs SET state = $2, error = COALESCE($3, error),
		started_at = CASE WHEN $2 = 'running' THEN COALESCE(started_at, now()) ELSE started_at END,
		finished_at = CASE WHEN $2 IN ('succeeded', 'failed', 'canceled') THEN now() ELSE finished_at END
		WHERE id = $1 RETURNING `+runColumns, id, state, errText))
	if err != nil {
		return r, translate(err)
	}
	if r.State.Terminal() {
		return r, notifyRunFinished(ctx, q, r)
	}
	return r, nil
}

// RunsInProgress returns the ids of every run not yet finished, oldest first (the reconciler's
// work list; a partial index keeps it proportional to the runs in progress).
func RunsInProgress(ctx context.Context, q Querier, limit int) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT id FROM runs WHERE state IN ('queued', 'running', 'canceling') ORDER BY created_at LIMIT $1`, limit)
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return ids, translate(err)
}

// RunsFinishedWithoutLogEnd returns the runs that finished after since and before before whose
// log has no end (log_ends), oldest first: a worker died, or a store was down, between the
// commit that finished the run and the end of its log (the reconciler's work list; a partial
// index keeps it to the recent runs). A removed stack's runs are left out, their logs having
// gone with it, but for the removal itself, whose followers wait for its end.
func RunsFinishedWithoutLogEnd(ctx context.Context, q Querier, since, before time.Time, limit int) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT r.id FROM runs r LEFT JOIN stacks s ON s.id = r.stack_id
		WHERE r.finished_at > $1 AND r.finished_at <= $2
		  AND NOT EXISTS (SELECT 1 FROM log_ends e WHERE e.run_id = r.id)
		  AND (s.state IS DISTINCT FROM 'removed' OR (r.kind = 'remove' AND r.state = 'succeeded'))
		ORDER BY r.finished_at LIMIT $3`, since, before, limit)
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return ids, translate(err)
}

// RunIDsOfStack returns the ids of every run of a stack.
func RunIDsOfStack(ctx context.Context, q Querier, stack uuid.UUID) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT id FROM runs WHERE stack_id = $1 ORDER BY id`, stack)
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return ids, translate(err)
}
