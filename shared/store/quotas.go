package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/horizon"
)

const quotaLimitColumns = `machines, vcpus, memory_mib, disk_gib`

func limitArgs(l horizon.Limits) []any {
	return []any{l.Machines, l.VCPUs, l.MemoryMiB, l.DiskGiB}
}

// QuotaGet returns a team's quotas; a team that never had one gets an unlimited Quota of
// version 0. It does not check that the team exists.
func QuotaGet(ctx context.Context, q Querier, team uuid.UUID) (horizon.Quota, error) {
	return quotaGet(ctx, q, team, "")
}

// QuotaLock is QuotaGet locking the team's quota row until the transaction ends: every request
// that grows a team's usage takes it before counting, so two of them are checked one after the
// other. A team without a quota row has nothing to lock (and nothing to exceed).
func QuotaLock(ctx context.Context, tx pgx.Tx, team uuid.UUID) (horizon.Quota, error) {
	return quotaGet(ctx, tx, team, " FOR UPDATE")
}

func quotaGet(ctx context.Context, q Querier, team uuid.UUID, lock string) (horizon.Quota, error) {
	out := horizon.Quota{TeamID: team, Environments: map[uuid.UUID]horizon.Limits{}}
	err := q.QueryRow(ctx, `SELECT `+quotaLimitColumns+`, version, updated_at FROM team_quotas WHERE team_id = $1`+lock, team).
		Scan(&out.Limits.Machines, &out.Limits.VCPUs, &out.Limits.MemoryMiB, &out.Limits.DiskGiB, &out.Version, &out.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("quota of team %s: %w", team, translate(err))
	}
	rows, err := q.Query(ctx, `SELECT environment_id, `+quotaLimitColumns+` FROM team_environment_quotas WHERE team_id = $1`, team)
	if err != nil {
		return out, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var env uuid.UUID
		var l horizon.Limits
		if err := rows.Scan(&env, &l.Machines, &l.VCPUs, &l.MemoryMiB, &l.DiskGiB); err != nil {
			return out, translate(err)
		}
		out.Environments[env] = l
	}
	return out, translate(rows.Err())
}

// QuotaPut replaces a team's quotas (limits and every environment's) if its version is still
// ifVersion (0: whatever it is), and returns them with their new version. A stale version is
// horizon.ErrStale. The caller checks that the team and the environments exist.
func QuotaPut(ctx context.Context, tx pgx.Tx, qt horizon.Quota, ifVersion int64) (horizon.Quota, error) {
	cur, err := QuotaLock(ctx, tx, qt.TeamID)
	if err != nil {
		return qt, err
	}
	if ifVersion != 0 && cur.Version != ifVersion {
		return qt, fmt.Errorf("quota of team %s: %w", qt.TeamID, horizon.ErrStale)
	}
	out := horizon.Quota{TeamID: qt.TeamID, Limits: qt.Limits, Environments: qt.Environments}
	err = tx.QueryRow(ctx, `INSERT INTO team_quotas (team_id, `+quotaLimitColumns+`) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (team_id) DO UPDATE SET machines = $2, vcpus = $3, memory_mib = $4, disk_gib = $5,
		  version = team_quotas.version + 1, updated_at = now()
		RETURNING version, updated_at`, append([]any{qt.TeamID}, limitArgs(qt.Limits)...)...).Scan(&out.Version, &out.UpdatedAt)
	if err != nil {
		return out, translate(err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM team_environment_quotas WHERE team_id = $1`, qt.TeamID); err != nil {
		return out, translate(err)
	}
	for env, l := range qt.Environments {
		if _, err := tx.Exec(ctx, `INSERT INTO team_environment_quotas (team_id, environment_id, `+quotaLimitColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6)`, append([]any{qt.TeamID, env}, limitArgs(l)...)...); err != nil {
			return out, translate(err)
		}
	}
	return out, nil
}

// counted is the condition on stacks s and executions e of team $1, leaving out stack $2, under
// which an execution counts against its team's quotas: not yet destroyed (active, or removing
// until its destroy ends), of a stack that is neither a draft nor removed — a failed stack's
// too, whose machines may exist.
const counted = `s.team_id = $1 AND s.id <> $2 AND s.state NOT IN ('draft', 'removed') AND e.state IN ('active', 'removing')`

// UsageByEnvironment returns what the executions that count against a team's quotas cost, by
// environment, leaving out the stack except (uuid.Nil for none): one SUM of the costs the
// database keeps beside each execution (executions.machines… , computed from its answers and
// its stack's template version when either is written), whatever the number of executions.
func UsageByEnvironment(ctx context.Context, q Querier, team, except uuid.UUID) (map[uuid.UUID]horizon.Resources, error) {
	rows, err := q.Query(ctx, `SELECT s.environment_id, sum(e.machines)::bigint, sum(e.vcpus)::bigint, sum(e.memory_mib)::bigint, sum(e.disk_gib)::bigint
		FROM stacks s JOIN executions e ON e.stack_id = s.id WHERE `+counted+` GROUP BY 1`, team, except)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[uuid.UUID]horizon.Resources{}
	for rows.Next() {
		var env uuid.UUID
		var r horizon.Resources
		if err := rows.Scan(&env, &r.Machines, &r.VCPUs, &r.MemoryMiB, &r.DiskGiB); err != nil {
			return nil, translate(err)
		}
		out[env] = r
	}
	return out, translate(rows.Err())
}
