package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/auth"
	"horizon/shared/horizon"
)

const executionColumns = `id, stack_id, job, index, config, secret_parameters, commit, applied_hash, outputs, secret_outputs,
	server_id, node, vmid, host_key, host_key_fingerprint, state, created_at, updated_at, cleaned_up_at, vm_name`

func scanExecution(row pgx.Row) (horizon.Execution, error) {
	var e horizon.Execution
	err := row.Scan(&e.ID, &e.StackID, &e.Job, &e.Index, &e.Config, &e.SecretParameters, &e.Commit, &e.AppliedHash, &e.Outputs,
		&e.SecretOutputs, &e.ServerID, &e.Node, &e.VMID, &e.HostKey, &e.HostKeyFingerprint, &e.State, &e.CreatedAt, &e.UpdatedAt, &e.CleanedUpAt, &e.VMName)
	if e.Outputs == nil {
		e.Outputs = map[string]any{}
	}
	return e, err
}

// ExecutionInsert adds an execution to a stack.
func ExecutionInsert(ctx context.Context, q Querier, e horizon.Execution) (horizon.Execution, error) {
	out, err := scanExecution(q.QueryRow(ctx, `INSERT INTO executions (stack_id, job, index, config, secret_parameters, commit)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+executionColumns, e.StackID, e.Job, e.Index, e.Config, e.SecretParameters, e.Commit))
	return out, translate(err)
}

// ExecutionsOfStack returns a stack's executions in job and index order; removed ones only when
// asked.
func ExecutionsOfStack(ctx context.Context, q Querier, stack uuid.UUID, withRemoved bool) ([]horizon.Execution, error) {
	rows, err := q.Query(ctx, `SELECT `+executionColumns+` FROM executions
		WHERE stack_id = $1 AND ($2 OR state <> 'removed') ORDER BY job, index, id`, stack, withRemoved)
	if err != nil {
		return nil, translate(err)
	}
	es, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.Execution, error) { return scanExecution(r) })
	return es, translate(err)
}

// ExecutionGet returns one execution.
func ExecutionGet(ctx context.Context, q Querier, id uuid.UUID) (horizon.Execution, error) {
	e, err := scanExecution(q.QueryRow(ctx, `SELECT `+executionColumns+` FROM executions WHERE id = $1`, id))
	if err != nil {
		return e, fmt.Errorf("execution %s: %w", id, translate(err))
	}
	return e, nil
}

// ExecutionUpdateConfig replaces an execution's answers (drafts and edits).
func ExecutionUpdateConfig(ctx context.Context, q Querier, id uuid.UUID, cfg horizon.ExecutionConfig, secretParams []byte) error {
	_, err := q.Exec(ctx, `UPDATE executions SET config = $2, secret_parameters = $3, updated_at = now() WHERE id = $1`, id, cfg, secretParams)
	return translate(err)
}

// ExecutionDeleteDrafts deletes every execution of a stack that never reached infrastructure
// (its stack is a draft), so a draft edit can write them anew.
func ExecutionDeleteDrafts(ctx context.Context, q Querier, stack uuid.UUID) error {
	_, err := q.Exec(ctx, `DELETE FROM executions WHERE stack_id = $1 AND vmid IS NULL AND applied_hash IS NULL`, stack)
	return translate(err)
}

// ExecutionApplied records a successful apply: the hash of what was applied and the outputs.
func ExecutionApplied(ctx context.Context, q Querier, id uuid.UUID, hash string, outputs map[string]any, secretOutputs []byte) error {
	if outputs == nil {
		outputs = map[string]any{}
	}
	_, err := q.Exec(ctx, `UPDATE executions SET applied_hash = $2, outputs = $3, secret_outputs = $4, updated_at = now() WHERE id = $1`,
		id, hash, outputs, secretOutputs)
	return translate(err)
}

// ExecutionSetState moves an execution to state.
func ExecutionSetState(ctx context.Context, q Querier, id uuid.UUID, state horizon.ExecutionState) error {
	_, err := q.Exec(ctx, `UPDATE executions SET state = $2, updated_at = now() WHERE id = $1`, id, state)
	return translate(err)
}

// ExecutionSetHostKey records the machine's SSH host key the first time it is generated; a key
// already recorded is kept. It returns the key recorded: sealed's, or the one that was there
// (two attempts that generated a key at once agree on the first).
func ExecutionSetHostKey(ctx context.Context, q Querier, id uuid.UUID, sealed []byte, fingerprint string) ([]byte, string, error) {
	var kept []byte
	var keptFingerprint string
	err := q.QueryRow(ctx, `UPDATE executions SET host_key = COALESCE(host_key, $2),
		host_key_fingerprint = COALESCE(host_key_fingerprint, $3), updated_at = now() WHERE id = $1
		RETURNING host_key, host_key_fingerprint`, id, sealed, fingerprint).Scan(&kept, &keptFingerprint)
	return kept, keptFingerprint, translate(err)
}

// ExecutionSetPlacement records the cluster, node and VM id an execution's machine is built
// with, and reserves its name in the cluster: the name it already has, or name. It returns the
// machine's name. A name another machine of the cluster holds is a *VMNameTakenError (the
// executions_vm_name_key index decides, so of two concurrent reservations one fails).
func ExecutionSetPlacement(ctx context.Context, q Querier, id, server uuid.UUID, node string, vmid int, name string) (string, error) {
	var reserved string
	err := q.QueryRow(ctx, `UPDATE executions SET server_id = $2, node = $3, vmid = $4, vm_name = COALESCE(vm_name, $5), updated_at = now()
		WHERE id = $1 RETURNING vm_name`, id, server, node, vmid, name).Scan(&reserved)
	var ce *horizon.ConflictError
	if err = translate(err); errors.As(err, &ce) && ce.Constraint == "executions_vm_name_key" {
		return "", &VMNameTakenError{Name: name}
	}
	return reserved, err
}

// VMNameTakenError: a machine would be named Name, which another machine of its cluster holds.
type VMNameTakenError struct{ Name string }

func (e *VMNameTakenError) Error() string {
	return fmt.Sprintf("would be named %s, which a machine of another stack in this cluster already has", e.Name)
}

func (e *VMNameTakenError) Unwrap() error { return horizon.ErrConflict }

// ExecutionsRepin pins every active execution of a stack's job to commit.
func ExecutionsRepin(ctx context.Context, q Querier, stack uuid.UUID, job, commit string) error {
	_, err := q.Exec(ctx, `UPDATE executions SET commit = $3, updated_at = now() WHERE stack_id = $1 AND job = $2 AND state <> 'removed'`, stack, job, commit)
	return translate(err)
}

// Machine is one built VM of a stack, for the startup order.
type Machine struct {
	StackID       uuid.UUID
	StackName     string
	EnvironmentID uuid.UUID
	Job           string
	Index         int
	ServerID      uuid.UUID
	Node          string
	VMID          int
	StartupOrder  *int
}

// MachinesInStartupOrder returns every VM of the stacks the scope may see, in boot order:
// startup order ascending, machines without one last.
func MachinesInStartupOrder(ctx context.Context, q Querier, scope auth.Scope) ([]Machine, error) {
	rows, err := q.Query(ctx, `SELECT s.id, s.name, s.environment_id, e.job, e.index, e.server_id, e.node, e.vmid,
		(e.config->>'startup_order')::int
		FROM executions e JOIN stacks s ON s.id = e.stack_id
		WHERE e.vmid IS NOT NULL AND e.server_id IS NOT NULL AND e.state = 'active' AND s.state <> 'removed'
		  AND ($1 OR s.team_id = ANY($2))
		ORDER BY (e.config->>'startup_order')::int NULLS LAST, s.name, e.job, e.index LIMIT 10000`, scope.All, scope.TeamIDs())
	if err != nil {
		return nil, translate(err)
	}
	ms, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Machine, error) {
		var m Machine
		err := r.Scan(&m.StackID, &m.StackName, &m.EnvironmentID, &m.Job, &m.Index, &m.ServerID, &m.Node, &m.VMID, &m.StartupOrder)
		return m, err
	})
	return ms, translate(err)
}

// ExecutionCleanedUp records that an execution's cleanup scripts succeeded.
func ExecutionCleanedUp(ctx context.Context, q Querier, id uuid.UUID) error {
	_, err := q.Exec(ctx, `UPDATE executions SET cleaned_up_at = now() WHERE id = $1`, id)
	return translate(err)
}
