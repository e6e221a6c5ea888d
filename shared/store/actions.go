package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/horizon"
)

const actionRunColumns = `run_id, stack_id, action, kind, template_version, execution_id, job, execution_index, parameters,
	secret_parameters, inputs, secret_inputs, outputs, secret_outputs, instance_id, undo`

func scanActionRun(row pgx.Row) (horizon.ActionRun, error) {
	var a horizon.ActionRun
	err := row.Scan(&a.RunID, &a.StackID, &a.Action, &a.Kind, &a.TemplateVersion, &a.ExecutionID, &a.Job, &a.ExecutionIndex,
		&a.Parameters, &a.SecretParameters, &a.Inputs, &a.SecretInputs, &a.Outputs, &a.SecretOutputs, &a.InstanceID, &a.Undo)
	return a, err
}

// ActionRunInsert records what an action run was asked, in the transaction that inserts the run.
func ActionRunInsert(ctx context.Context, q Querier, a horizon.ActionRun) error {
	_, err := q.Exec(ctx, `INSERT INTO action_runs (run_id, stack_id, action, kind, template_version, execution_id, job,
		execution_index, parameters, secret_parameters, inputs, secret_inputs, instance_id, undo)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		a.RunID, a.StackID, a.Action, a.Kind, a.TemplateVersion, a.ExecutionID, a.Job, a.ExecutionIndex, nonNilMap(a.Parameters),
		a.SecretParameters, nonNilMap(a.Inputs), a.SecretInputs, a.InstanceID, a.Undo)
	return translate(err)
}

// ActionRunGet returns what the action run run was asked and produced.
func ActionRunGet(ctx context.Context, q Querier, run uuid.UUID) (horizon.ActionRun, error) {
	a, err := scanActionRun(q.QueryRow(ctx, `SELECT `+actionRunColumns+` FROM action_runs WHERE run_id = $1`, run))
	if err != nil {
		return a, fmt.Errorf("action run %s: %w", run, translate(err))
	}
	return a, nil
}

// ActionRunSetOutputs keeps what an action run emitted (secret outputs sealed).
func ActionRunSetOutputs(ctx context.Context, q Querier, run uuid.UUID, outputs map[string]any, secretOutputs []byte) error {
	_, err := q.Exec(ctx, `UPDATE action_runs SET outputs = $2, secret_outputs = $3 WHERE run_id = $1`, run, nonNilMap(outputs), secretOutputs)
	return translate(err)
}

func nonNilMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// instanceColumns reads an action instance with its derived state: ended, else undoing while a
// destroy step of it is in a run in progress, else applied (active), else applying while the
// run that makes it is in progress, else failed.
const instanceColumns = `i.id, i.stack_id, i.number, i.action, i.template_version, i.commit, i.run_id, i.created_by, i.created_at,
	i.applied_at, i.variables, i.ended, i.ended_at,
	CASE WHEN i.ended IS NOT NULL THEN i.ended
	  WHEN EXISTS (SELECT 1 FROM steps s JOIN runs r ON r.id = s.run_id WHERE s.action_instance_id = i.id
	    AND s.kind = 'action_destroy' AND r.state IN ('queued', 'running')) THEN 'undoing'
	  WHEN i.applied_at IS NOT NULL THEN 'active'
	  WHEN (SELECT r.state FROM runs r WHERE r.id = i.run_id) IN ('queued', 'running') THEN 'applying'
	  ELSE 'failed' END`

func scanInstance(row pgx.Row) (horizon.ActionInstance, error) {
	var a horizon.ActionInstance
	err := row.Scan(&a.ID, &a.StackID, &a.Number, &a.Action, &a.TemplateVersion, &a.Commit, &a.RunID, &a.CreatedBy, &a.CreatedAt,
		&a.AppliedAt, &a.Variables, &a.Ended, &a.EndedAt, &a.State)
	return a, err
}

// ActionInstanceInsert records a new instance of the stack's action (its number the stack's
// next), in the transaction that inserts the run that applies it.
func ActionInstanceInsert(ctx context.Context, q Querier, a horizon.ActionInstance) (horizon.ActionInstance, error) {
	out, err := scanInstance(q.QueryRow(ctx, `WITH i AS (
		INSERT INTO action_instances (stack_id, number, action, template_version, commit, run_id, created_by)
		VALUES ($1, (SELECT coalesce(max(number), 0) + 1 FROM action_instances WHERE stack_id = $1), $2, $3, $4, $5, $6)
		RETURNING *) SELECT `+instanceColumns+` FROM i`,
		a.StackID, a.Action, a.TemplateVersion, a.Commit, a.RunID, a.CreatedBy))
	return out, translate(err)
}

// ActionInstancesOfStack returns the stack's instances that are not gone (undone or
// abandoned), newest first.
func ActionInstancesOfStack(ctx context.Context, q Querier, stack uuid.UUID) ([]horizon.ActionInstance, error) {
	rows, err := q.Query(ctx, `SELECT `+instanceColumns+` FROM action_instances i WHERE i.stack_id = $1 AND i.ended IS NULL
		ORDER BY i.number DESC`, stack)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.ActionInstance, error) { return scanInstance(r) })
	return out, translate(err)
}

// ActionInstanceGet returns one instance of the stack (ErrNotFound for another stack's).
func ActionInstanceGet(ctx context.Context, q Querier, stack, id uuid.UUID) (horizon.ActionInstance, error) {
	a, err := scanInstance(q.QueryRow(ctx, `SELECT `+instanceColumns+` FROM action_instances i WHERE i.id = $1 AND i.stack_id = $2`, id, stack))
	if err != nil {
		return a, fmt.Errorf("action instance %s: %w", id, translate(err))
	}
	return a, nil
}

// ActionInstanceSetVariables keeps what the apply gives Terraform (sealed), before it runs, for
// the destroy that undoes it.
func ActionInstanceSetVariables(ctx context.Context, q Querier, id uuid.UUID, sealed []byte) error {
	_, err := q.Exec(ctx, `UPDATE action_instances SET variables = $2 WHERE id = $1`, id, sealed)
	return translate(err)
}

// ActionInstanceApplied marks the instance's apply succeeded.
func ActionInstanceApplied(ctx context.Context, q Querier, id uuid.UUID) error {
	_, err := q.Exec(ctx, `UPDATE action_instances SET applied_at = now() WHERE id = $1`, id)
	return translate(err)
}

// ActionInstanceEnd marks the instance gone: undone, or abandoned by a force-remove.
func ActionInstanceEnd(ctx context.Context, q Querier, id uuid.UUID, how string) error {
	_, err := q.Exec(ctx, `UPDATE action_instances SET ended = $2, ended_at = now() WHERE id = $1 AND ended IS NULL`, id, how)
	return translate(err)
}
