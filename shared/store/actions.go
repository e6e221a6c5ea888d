package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/horizon"
)

const actionRunColumns = `run_id, stack_id, action, kind, template_version, execution_id, job, execution_index, parameters,
	secret_parameters, inputs, secret_inputs, outputs, secret_outputs`

func scanActionRun(row pgx.Row) (horizon.ActionRun, error) {
	var a horizon.ActionRun
	err := row.Scan(&a.RunID, &a.StackID, &a.Action, &a.Kind, &a.TemplateVersion, &a.ExecutionID, &a.Job, &a.ExecutionIndex,
		&a.Parameters, &a.SecretParameters, &a.Inputs, &a.SecretInputs, &a.Outputs, &a.SecretOutputs)
	return a, err
}

// ActionRunInsert records what an action run was asked, in the transaction that inserts the run.
func ActionRunInsert(ctx context.Context, q Querier, a horizon.ActionRun) error {
	_, err := q.Exec(ctx, `INSERT INTO action_runs (run_id, stack_id, action, kind, template_version, execution_id, job,
		execution_index, parameters, secret_parameters, inputs, secret_inputs)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		a.RunID, a.StackID, a.Action, a.Kind, a.TemplateVersion, a.ExecutionID, a.Job, a.ExecutionIndex, nonNilMap(a.Parameters),
		a.SecretParameters, nonNilMap(a.Inputs), a.SecretInputs)
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
