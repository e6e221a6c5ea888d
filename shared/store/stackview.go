package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/auth"
	"horizon/shared/horizon"
)

// StackView is what a stack's detail shows of Postgres, besides its template version: the
// stack, its executions (removed ones left out), its run in progress, its drift findings and
// its last drift check.
type StackView struct {
	Stack      horizon.Stack
	Executions []horizon.Execution
	// Active is the stack's run in progress (queued, running or canceling), or nil.
	Active   *horizon.Run
	Findings []DriftFinding
	// CheckedAt, FailedAt and CheckError are what DriftCheckOfStack returns.
	CheckedAt, FailedAt *time.Time
	CheckError          *string
}

// stackVisible is the scope's condition on the stack $1 ($2: the scope sees every team, $3:
// its teams), for the queries of StackViewGet that read other tables.
const stackVisible = `EXISTS (SELECT 1 FROM stacks v WHERE v.id = $1 AND ($2 OR v.team_id = ANY($3)))`

// StackViewGet reads a stack the scope may see, as StackGet does, with what its detail shows,
// in one round trip: the reads are one pipelined batch. Each of them carries the scope's
// condition, so a stack of another team yields horizon.ErrNotFound and none of its rows.
func StackViewGet(ctx context.Context, q Querier, scope auth.Scope, id uuid.UUID) (StackView, error) {
	var v StackView
	args := []any{id, scope.All, scope.TeamIDs()}
	b := &pgx.Batch{}
	b.Queue(`SELECT `+stackColumns+` FROM stacks WHERE id = $1 AND ($2 OR team_id = ANY($3))`, args...).QueryRow(func(row pgx.Row) (err error) {
		v.Stack, err = scanStack(row)
		return err
	})
	b.Queue(`SELECT `+executionColumns+` FROM executions WHERE stack_id = $1 AND state <> 'removed' AND `+stackVisible+`
		ORDER BY job, index, id`, args...).Query(func(rows pgx.Rows) (err error) {
		v.Executions, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.Execution, error) { return scanExecution(r) })
		return err
	})
	b.Queue(`SELECT `+runColumns+` FROM runs WHERE stack_id = $1 AND state IN ('queued', 'running', 'canceling') AND `+stackVisible,
		args...).Query(func(rows pgx.Rows) error {
		runs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.Run, error) { return scanRun(r) })
		if len(runs) > 0 {
			v.Active = &runs[0]
		}
		return err
	})
	b.Queue(`SELECT `+driftFindingColumns+` FROM drift_findings f JOIN executions e ON e.id = f.execution_id
		WHERE f.stack_id = $1 AND `+stackVisible+` ORDER BY e.job, e.index, f.path`, args...).Query(func(rows pgx.Rows) (err error) {
		v.Findings, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (DriftFinding, error) { return scanDriftFinding(r) })
		return err
	})
	b.Queue(driftCheckQuery+` AND ($2 OR s.team_id = ANY($3))`, args...).QueryRow(func(row pgx.Row) error {
		return row.Scan(&v.CheckedAt, &v.FailedAt, &v.CheckError)
	})
	if err := q.SendBatch(ctx, b).Close(); err != nil {
		return StackView{}, fmt.Errorf("stack %s: %w", id, translate(err))
	}
	return v, nil
}
