package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/drift"
	"horizon/shared/horizon"
)

// VMRecordPut records what Horizon set on an execution's machine after a successful apply,
// replacing the previous record, and drops the execution's drift findings but those of keep
// (the ones the apply did not fix: drift.Unfixed). So a re-apply clears what it fixed.
func VMRecordPut(ctx context.Context, q Querier, r drift.Record, keep []uuid.UUID) error {
	tags := r.Tags
	if tags == nil {
		tags = []string{}
	}
	_, err := q.Exec(ctx, `INSERT INTO vm_records (execution_id, stack_id, server_id, vmid, node, name, tags, pool, status, config,
		ctime, uuid, digest, maxmem, maxcpu, maxdisk, recorded_at, config_read_at, seen_digest)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, now(), now(), $13)
		ON CONFLICT (execution_id) DO UPDATE SET stack_id = EXCLUDED.stack_id, server_id = EXCLUDED.server_id, vmid = EXCLUDED.vmid,
		node = EXCLUDED.node, name = EXCLUDED.name, tags = EXCLUDED.tags, pool = EXCLUDED.pool, status = EXCLUDED.status,
		config = EXCLUDED.config, ctime = EXCLUDED.ctime, uuid = EXCLUDED.uuid, digest = EXCLUDED.digest, maxmem = EXCLUDED.maxmem,
		maxcpu = EXCLUDED.maxcpu, maxdisk = EXCLUDED.maxdisk, recorded_at = now(), config_read_at = now(), seen_digest = EXCLUDED.digest`,
		r.ExecutionID, r.StackID, r.ServerID, r.VMID, r.Node, r.Name, tags, r.Pool, r.Status, r.Config,
		r.CTime, r.UUID, r.Digest, r.MaxMem, r.MaxCPU, r.MaxDisk)
	if err != nil {
		return translate(err)
	}
	if keep == nil {
		keep = []uuid.UUID{}
	}
	_, err = q.Exec(ctx, `DELETE FROM drift_findings WHERE execution_id = $1 AND id <> ALL($2)`, r.ExecutionID, keep)
	return translate(err)
}

// DriftFindingsOfExecution returns an execution's findings (accepted ones included).
func DriftFindingsOfExecution(ctx context.Context, q Querier, execution uuid.UUID) ([]DriftFinding, error) {
	rows, err := q.Query(ctx, `SELECT `+driftFindingColumns+` FROM drift_findings f JOIN executions e ON e.id = f.execution_id
		WHERE f.execution_id = $1 ORDER BY f.path`, execution)
	if err != nil {
		return nil, translate(err)
	}
	fs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DriftFinding, error) { return scanDriftFinding(r) })
	return fs, translate(err)
}

// VMRecordDelete forgets an execution's machine (destroyed, or no longer readable after its
// apply) and its findings: nothing is compared for it until its next apply.
func VMRecordDelete(ctx context.Context, q Querier, execution uuid.UUID) error {
	if _, err := q.Exec(ctx, `DELETE FROM vm_records WHERE execution_id = $1`, execution); err != nil {
		return translate(err)
	}
	_, err := q.Exec(ctx, `DELETE FROM drift_findings WHERE execution_id = $1`, execution)
	return translate(err)
}

// VMRecordsToCheck returns the records of the machines of server a check compares: those of
// stacks that are deployed — a stack with a run in progress or whose last run failed is
// paused, as HCP pauses health assessments — plus the failed stacks of also (an operator asked
// for them), unless a run is in progress there.
func VMRecordsToCheck(ctx context.Context, q Querier, server uuid.UUID, also []uuid.UUID) ([]drift.Record, error) {
	if also == nil {
		also = []uuid.UUID{}
	}
	rows, err := q.Query(ctx, `SELECT r.execution_id, r.stack_id, r.server_id, r.vmid, r.node, r.name, r.tags, r.pool, r.status,
		r.config, r.ctime, r.uuid, r.digest, r.maxmem, r.maxcpu, r.maxdisk, r.recorded_at, r.seen_digest
		FROM vm_records r JOIN stacks s ON s.id = r.stack_id JOIN executions e ON e.id = r.execution_id
		WHERE r.server_id = $1 AND e.state = 'active'
		  AND (s.state = 'deployed' OR (s.state = 'failed' AND s.id = ANY($2)))
		  AND NOT EXISTS (SELECT 1 FROM runs u WHERE u.stack_id = s.id AND u.state IN ('queued', 'running', 'canceling'))
		ORDER BY r.vmid`, server, also)
	if err != nil {
		return nil, translate(err)
	}
	recs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (drift.Record, error) {
		var r drift.Record
		err := row.Scan(&r.ExecutionID, &r.StackID, &r.ServerID, &r.VMID, &r.Node, &r.Name, &r.Tags, &r.Pool, &r.Status,
			&r.Config, &r.CTime, &r.UUID, &r.Digest, &r.MaxMem, &r.MaxCPU, &r.MaxDisk, &r.RecordedAt, &r.SeenDigest)
		return r, err
	})
	return recs, translate(err)
}

// VMRecordsSweep returns up to n of the server's machines (among executions) whose config a
// check read longest ago: the rolling sweep that catches edits PVE logs no task for.
func VMRecordsSweep(ctx context.Context, q Querier, executions []uuid.UUID, n int) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT execution_id FROM vm_records WHERE execution_id = ANY($1)
		ORDER BY config_read_at, execution_id LIMIT $2`, executions, n)
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return ids, translate(err)
}

// VMRecordsConfigRead notes that a check read these machines' configs, with the digests seen.
func VMRecordsConfigRead(ctx context.Context, q Querier, digests map[uuid.UUID]string) error {
	if len(digests) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, 0, len(digests))
	ds := make([]string, 0, len(digests))
	for id, d := range digests {
		ids = append(ids, id)
		ds = append(ds, d)
	}
	_, err := q.Exec(ctx, `UPDATE vm_records r SET config_read_at = now(), seen_digest = x.d
		FROM unnest($1::uuid[], $2::text[]) AS x(id, d) WHERE r.execution_id = x.id`, ids, ds)
	return translate(err)
}

// DriftCheckClaim claims the drift check of server for this check (claim): true when no other
// check holds it, or when the other one's claim is older than ttl (its worker died). It returns
// the start of the last successful check, from which the task log is read (nil: none yet).
func DriftCheckClaim(ctx context.Context, q Querier, server, claim uuid.UUID, ttl time.Duration) (bool, *time.Time, error) {
	var since *time.Time
	err := q.QueryRow(ctx, `INSERT INTO drift_checks (server_id, running_since, claim) VALUES ($1, now(), $2)
		ON CONFLICT (server_id) DO UPDATE SET running_since = now(), claim = $2
		WHERE drift_checks.running_since IS NULL OR drift_checks.running_since < now() - make_interval(secs => $3)
		RETURNING tasks_since`, server, claim, ttl.Seconds()).Scan(&since)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, translate(err)
	}
	return true, since, nil
}

// DriftCheckFinish releases the claim and records the outcome: on success the check's start
// becomes the task log's next starting point; a failure is kept with its message and leaves
// that point where it was (the next check reads the task log from there).
func DriftCheckFinish(ctx context.Context, q Querier, server, claim uuid.UUID, started time.Time, failure error) error {
	var err error
	if failure == nil {
		_, err = q.Exec(ctx, `UPDATE drift_checks SET running_since = NULL, claim = NULL, checked_at = now(), tasks_since = $3,
			error = NULL WHERE server_id = $1 AND claim = $2`, server, claim, started)
	} else {
		_, err = q.Exec(ctx, `UPDATE drift_checks SET running_since = NULL, claim = NULL, failed_at = now(), error = $3
			WHERE server_id = $1 AND claim = $2`, server, claim, failure.Error())
	}
	return translate(err)
}

// DriftCheckState is the last outcome of the drift checks of a server.
type DriftCheckState struct {
	CheckedAt *time.Time
	FailedAt  *time.Time
	Error     *string
}

// DriftCheckGet returns the drift check state of server (zero when it was never checked).
func DriftCheckGet(ctx context.Context, q Querier, server uuid.UUID) (DriftCheckState, error) {
	var s DriftCheckState
	err := q.QueryRow(ctx, `SELECT checked_at, failed_at, error FROM drift_checks WHERE server_id = $1`, server).
		Scan(&s.CheckedAt, &s.FailedAt, &s.Error)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, nil
	}
	return s, translate(err)
}

// DriftFinding is a finding as stored: a drift.Finding located in its stack, with when it was
// first seen and, when an operator accepted it, who, when, why and which value.
type DriftFinding struct {
	ID             uuid.UUID
	StackID        uuid.UUID
	ExecutionID    uuid.UUID
	Job            string
	Index          int
	Path           string
	Kind           drift.Kind
	Expected       any
	Actual         any
	Since          time.Time
	ChangedBy      *string
	ChangedAt      *time.Time
	LastSeenAt     time.Time
	AcceptedBy     *uuid.UUID
	AcceptedAt     *time.Time
	AcceptedReason *string
	Version        int64
}

const driftFindingColumns = `f.id, f.stack_id, f.execution_id, e.job, e.index, f.path, f.kind, f.expected, f.actual, f.since,
	f.changed_by, f.changed_at, f.last_seen_at, f.accepted_by, f.accepted_at, f.accepted_reason, f.version`

func scanDriftFinding(row pgx.Row) (DriftFinding, error) {
	var f DriftFinding
	err := row.Scan(&f.ID, &f.StackID, &f.ExecutionID, &f.Job, &f.Index, &f.Path, &f.Kind, &f.Expected, &f.Actual, &f.Since,
		&f.ChangedBy, &f.ChangedAt, &f.LastSeenAt, &f.AcceptedBy, &f.AcceptedAt, &f.AcceptedReason, &f.Version)
	return f, err
}

// DriftFindingsOfStack returns the stack's findings (accepted ones included), by job, index
// and path. The caller has checked that the stack is the caller's to see.
func DriftFindingsOfStack(ctx context.Context, q Querier, stack uuid.UUID) ([]DriftFinding, error) {
	rows, err := q.Query(ctx, `SELECT `+driftFindingColumns+` FROM drift_findings f JOIN executions e ON e.id = f.execution_id
		WHERE f.stack_id = $1 ORDER BY e.job, e.index, f.path`, stack)
	if err != nil {
		return nil, translate(err)
	}
	fs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DriftFinding, error) { return scanDriftFinding(r) })
	return fs, translate(err)
}

// DriftScope says which of an execution's findings a check re-evaluated: every one (its config
// was read, or the VM is gone) or those of the listing only (the config findings stay as the
// last config read left them).
type DriftScope int

// The scopes of a check's outcome for one execution.
const (
	DriftScopeListing DriftScope = iota + 1
	DriftScopeAll
)

// listingPaths are the properties the cluster listing shows.
var listingPaths = map[string]bool{"node": true, "status": true, "name": true, "tags": true, "pool": true, "lock": true}

func inScope(s DriftScope, f DriftFinding) bool {
	return s == DriftScopeAll || listingPaths[f.Path] || f.Kind == drift.Missing
}

// DriftOutcome is what one check concluded about one execution.
type DriftOutcome struct {
	ExecutionID uuid.UUID
	Scope       DriftScope
	Findings    []drift.Finding
}

// DriftRecord writes a check's outcomes for one stack and marks the stack checked: a finding
// seen before keeps its id and since (its actual value is updated, and an acceptance whose value
// is no longer what Proxmox shows is lifted); a new one starts now; one not seen again within
// its scope is gone. It reports whether the stack was last announced drifted, and whether it
// is drifted now (has an unaccepted finding), and records the latter as announced: the caller
// publishes the event when they differ; the webhooks' outbox gets it in this transaction. The
// stack row is locked first, so two writers of one stack take turns.
func DriftRecord(ctx context.Context, q Querier, stack uuid.UUID, outcomes []DriftOutcome) (before, after bool, err error) {
	if err := q.QueryRow(ctx, `SELECT drift_announced FROM stacks WHERE id = $1 FOR UPDATE`, stack).Scan(&before); err != nil {
		return false, false, translate(err)
	}
	old, err := DriftFindingsOfStack(ctx, q, stack)
	if err != nil {
		return false, false, err
	}
	byKey := map[string]DriftFinding{}
	for _, f := range old {
		byKey[f.ExecutionID.String()+"/"+f.Path] = f
	}
	for _, o := range outcomes {
		seen := map[string]bool{}
		for _, f := range o.Findings {
			key := o.ExecutionID.String() + "/" + f.Path
			seen[key] = true
			expected, actual := jsonValue(f.Expected), jsonValue(f.Actual)
			prev, ok := byKey[key]
			if !ok || prev.Kind != f.Kind {
				if ok {
					if _, err := q.Exec(ctx, `DELETE FROM drift_findings WHERE id = $1`, prev.ID); err != nil {
						return false, false, translate(err)
					}
				}
				_, err := q.Exec(ctx, `INSERT INTO drift_findings (stack_id, execution_id, path, kind, expected, actual, since,
					changed_by, changed_at, last_seen_at) VALUES ($1, $2, $3, $4, $5, $6, now(), $7, $8, now())`,
					stack, o.ExecutionID, f.Path, f.Kind, expected, actual, nilIfEmpty(f.ChangedBy), f.ChangedAt)
				if err != nil {
					return false, false, translate(err)
				}
				continue
			}
			_, err := q.Exec(ctx, `UPDATE drift_findings SET expected = $2, actual = $3, last_seen_at = now(),
				changed_by = COALESCE(changed_by, $4), changed_at = COALESCE(changed_at, $5),
				since = CASE WHEN actual IS DISTINCT FROM $3 THEN now() ELSE since END,
				accepted_by = CASE WHEN accepted_value IS DISTINCT FROM $3 THEN NULL ELSE accepted_by END,
				accepted_reason = CASE WHEN accepted_value IS DISTINCT FROM $3 THEN NULL ELSE accepted_reason END,
				accepted_at = CASE WHEN accepted_value IS DISTINCT FROM $3 THEN NULL ELSE accepted_at END,
				accepted_value = CASE WHEN accepted_value IS DISTINCT FROM $3 THEN NULL ELSE accepted_value END,
				version = CASE WHEN actual IS DISTINCT FROM $3 THEN version + 1 ELSE version END
				WHERE id = $1`, prev.ID, expected, actual, nilIfEmpty(f.ChangedBy), f.ChangedAt)
			if err != nil {
				return false, false, translate(err)
			}
		}
		for key, prev := range byKey {
			if prev.ExecutionID == o.ExecutionID && !seen[key] && inScope(o.Scope, prev) {
				if _, err := q.Exec(ctx, `DELETE FROM drift_findings WHERE id = $1`, prev.ID); err != nil {
					return false, false, translate(err)
				}
			}
		}
	}
	if err := q.QueryRow(ctx, `UPDATE stacks SET drift_checked_at = now(),
		drift_announced = EXISTS (SELECT 1 FROM drift_findings WHERE stack_id = $1 AND accepted_at IS NULL)
		WHERE id = $1 RETURNING drift_announced`, stack).Scan(&after); err != nil {
		return false, false, translate(err)
	}
	return before, after, notifyDrift(ctx, q, stack, before, after)
}

// DriftAnnounce records whether the stack is drifted now as announced, and reports whether it
// was announced drifted before (the caller publishes when they differ). Call it in the
// transaction that changed the findings, after locking the stack.
func DriftAnnounce(ctx context.Context, q Querier, stack uuid.UUID) (before, after bool, err error) {
	err = q.QueryRow(ctx, `UPDATE stacks s SET drift_announced = EXISTS (SELECT 1 FROM drift_findings WHERE stack_id = $1 AND accepted_at IS NULL)
		FROM (SELECT drift_announced AS before FROM stacks WHERE id = $1 FOR UPDATE) old
		WHERE s.id = $1 RETURNING old.before, s.drift_announced`, stack).Scan(&before, &after)
	if err != nil {
		return false, false, translate(err)
	}
	return before, after, notifyDrift(ctx, q, stack, before, after)
}

// jsonValue is v as a JSON document for a jsonb column (nil stays SQL NULL).
func jsonValue(v any) []byte {
	if v == nil || (reflect.ValueOf(v).Kind() == reflect.Pointer && reflect.ValueOf(v).IsNil()) {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(fmt.Sprintf("%q", fmt.Sprint(v)))
	}
	return b
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// DriftFindingAccept records that user accepts a finding of stack as it stands (reason says
// why): while Proxmox shows the accepted value, the finding does not count as drift. The
// finding must still be at version (its ETag; 0 skips the check); horizon.ErrStale when it changed since,
// horizon.ErrNotFound when the stack has no such finding.
func DriftFindingAccept(ctx context.Context, q Querier, stack, finding uuid.UUID, version int64, user uuid.UUID, reason string) (DriftFinding, error) {
	var id uuid.UUID
	err := q.QueryRow(ctx, `UPDATE drift_findings SET accepted_by = $4, accepted_at = now(), accepted_reason = $5,
		accepted_value = actual, version = version + 1 WHERE id = $1 AND stack_id = $2 AND ($3 = 0 OR version = $3) RETURNING id`,
		finding, stack, version, user, reason).Scan(&id)
	if err != nil {
		var exists bool
		if !errors.Is(err, pgx.ErrNoRows) {
			return DriftFinding{}, translate(err)
		}
		if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM drift_findings WHERE id = $1 AND stack_id = $2)`, finding, stack).Scan(&exists); err != nil {
			return DriftFinding{}, translate(err)
		}
		if exists {
			return DriftFinding{}, fmt.Errorf("drift finding %s: %w", finding, horizon.ErrStale)
		}
		return DriftFinding{}, fmt.Errorf("drift finding %s: %w", finding, horizon.ErrNotFound)
	}
	f, err := scanDriftFinding(q.QueryRow(ctx, `SELECT `+driftFindingColumns+` FROM drift_findings f JOIN executions e ON e.id = f.execution_id
		WHERE f.id = $1`, id))
	return f, translate(err)
}

// DriftServersOfStack returns the Proxmox servers the stack's recorded machines are on.
func DriftServersOfStack(ctx context.Context, q Querier, stack uuid.UUID) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT DISTINCT server_id FROM vm_records WHERE stack_id = $1 ORDER BY server_id`, stack)
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return ids, translate(err)
}

// DriftServers returns every Proxmox server with a recorded machine: those a periodic check
// visits.
func DriftServers(ctx context.Context, q Querier) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT DISTINCT server_id FROM vm_records ORDER BY server_id`)
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return ids, translate(err)
}

// VMRecordSetTags records the tags Horizon has just written on an execution's machine (the
// stack's labels, without a Terraform run).
func VMRecordSetTags(ctx context.Context, q Querier, execution uuid.UUID, tags []string) error {
	if tags == nil {
		tags = []string{}
	}
	_, err := q.Exec(ctx, `UPDATE vm_records SET tags = $2 WHERE execution_id = $1`, execution, tags)
	return translate(err)
}

// DriftExecutionsWithConfigFindings returns those of executions that have a finding a config
// read raised: a check reads their configs again, so that a change undone in Proxmox clears
// within one interval.
func DriftExecutionsWithConfigFindings(ctx context.Context, q Querier, executions []uuid.UUID) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT DISTINCT execution_id FROM drift_findings WHERE execution_id = ANY($1)
		AND kind <> 'missing' AND path <> ALL($2)`, executions, []string{"node", "status", "name", "tags", "pool", "lock"})
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return ids, translate(err)
}

// DriftedStacks returns which of stacks have an unaccepted drift finding.
func DriftedStacks(ctx context.Context, q Querier, stacks []uuid.UUID) (map[uuid.UUID]bool, error) {
	rows, err := q.Query(ctx, `SELECT DISTINCT stack_id FROM drift_findings WHERE stack_id = ANY($1) AND accepted_at IS NULL`, stacks)
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	out := map[uuid.UUID]bool{}
	for _, id := range ids {
		out[id] = true
	}
	return out, translate(err)
}

// DriftCheckOfStack is when the stack was last checked, and the last failure of a check of one
// of its servers since then (nil when none failed).
func DriftCheckOfStack(ctx context.Context, q Querier, stack uuid.UUID) (checkedAt, failedAt *time.Time, failure *string, err error) {
	err = q.QueryRow(ctx, driftCheckQuery, stack).Scan(&checkedAt, &failedAt, &failure)
	return checkedAt, failedAt, failure, translate(err)
}

// driftCheckQuery reads the stack $1's last drift check and the failure of a check since.
const driftCheckQuery = `SELECT s.drift_checked_at, c.failed_at, c.error FROM stacks s
		LEFT JOIN LATERAL (SELECT d.failed_at, d.error FROM drift_checks d
			WHERE d.server_id IN (SELECT server_id FROM vm_records WHERE stack_id = s.id) AND d.error IS NOT NULL
			  AND (s.drift_checked_at IS NULL OR d.failed_at > s.drift_checked_at)
			ORDER BY d.failed_at DESC LIMIT 1) c ON true
		WHERE s.id = $1`

// DriftQuiet returns those of stacks that have no finding and were last announced not
// drifted: a check that finds nothing on them only marks them checked (DriftMarkChecked),
// without a transaction per stack.
func DriftQuiet(ctx context.Context, q Querier, stacks []uuid.UUID) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT s.id FROM stacks s WHERE s.id = ANY($1) AND NOT s.drift_announced
		AND NOT EXISTS (SELECT 1 FROM drift_findings f WHERE f.stack_id = s.id)`, stacks)
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return ids, translate(err)
}

// DriftMarkChecked records that a check compared these stacks and found nothing.
func DriftMarkChecked(ctx context.Context, q Querier, stacks []uuid.UUID) error {
	if len(stacks) == 0 {
		return nil
	}
	_, err := q.Exec(ctx, `UPDATE stacks SET drift_checked_at = now() WHERE id = ANY($1)`, stacks)
	return translate(err)
}
