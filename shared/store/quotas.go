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

// usageByEnvironment is what team $1's stacks but stack $2 use, per environment, as rows of
// (environment_id, executions, machines, vcpus, memory_mib, disk_gib) to be summed: the team's
// usage as the database keeps it (team_usage, migration 00029, which counts by quota_counts)
// and, negated, what stack $2 counts in it. A few rows whatever the number of executions.
const usageByEnvironment = `(SELECT environment_id, executions, machines, vcpus, memory_mib, disk_gib FROM team_usage WHERE team_id = $1
	UNION ALL
	SELECT s.environment_id, -1, -x.machines, -x.vcpus, -x.memory_mib, -x.disk_gib FROM stacks s JOIN executions x ON x.stack_id = s.id
	WHERE s.id = $2 AND s.team_id = $1 AND quota_counts(s.state, x.state))`

// UsageByEnvironment returns what the executions that count against a team's quotas cost, by
// environment where at least one counts, leaving out the stack except (uuid.Nil for none):
// the totals the database keeps as executions and stacks change (team_usage), less what
// except counts, so one read of a few rows whatever the number of executions.
func UsageByEnvironment(ctx context.Context, q Querier, team, except uuid.UUID) (map[uuid.UUID]horizon.Resources, error) {
	rows, err := q.Query(ctx, `SELECT u.environment_id, sum(u.machines)::bigint, sum(u.vcpus)::bigint, sum(u.memory_mib)::bigint, sum(u.disk_gib)::bigint
		FROM `+usageByEnvironment+` u GROUP BY 1 HAVING sum(u.executions) > 0`, team, except)
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

// QuotaInEnvironment is a team's quota as a change of one of its stacks in one environment is
// checked against it: the team's limits and its narrowing in that environment (Quota, with
// that environment only), and what the team's other stacks use, in all and in it. Used and
// UsedInEnvironment are zero for a team without a quota row: there is nothing to count against.
type QuotaInEnvironment struct {
	Quota                   horizon.Quota
	Used, UsedInEnvironment horizon.Resources
}

// EnvironmentWithQuota is EnvironmentGet that also reads, in the same statement, team's quota
// in the environment and, only when the team has a quota, what its stacks but except
// (uuid.Nil for none) use (UsageByEnvironment's rows): a preflight pays no round trip for
// quotas, on or off, and reads a few rows of usage, not the team's executions. Outside the
// lock, so advisory: the run's transaction checks again after QuotaLock (a read in the
// locking statement would see usage from before the lock was granted).
func EnvironmentWithQuota(ctx context.Context, q Querier, id, team, except uuid.UUID) (horizon.Environment, QuotaInEnvironment, error) {
	qe := QuotaInEnvironment{Quota: horizon.Quota{TeamID: team, Environments: map[uuid.UUID]horizon.Limits{}}}
	var hasEnv bool
	var version *int64
	var envLimits horizon.Limits
	var e horizon.Environment
	u, ue := &qe.Used, &qe.UsedInEnvironment
	l := &qe.Quota.Limits
	err := q.QueryRow(ctx, `SELECT en.id, en.name, en.description,
			ARRAY(SELECT n.network_id FROM environment_networks n WHERE n.environment_id = en.id ORDER BY n.network_id),
			ARRAY(SELECT p.server_id FROM environment_proxmox_servers p WHERE p.environment_id = en.id ORDER BY p.server_id),
			en.nagios_server_id, en.version, en.created_at, en.updated_at,
			tq.machines, tq.vcpus, tq.memory_mib, tq.disk_gib, tq.version, tq.updated_at,
			teq.team_id IS NOT NULL, teq.machines, teq.vcpus, teq.memory_mib, teq.disk_gib,
			u.machines, u.vcpus, u.memory_mib, u.disk_gib, u.env_machines, u.env_vcpus, u.env_memory_mib, u.env_disk_gib
		FROM environments en
		LEFT JOIN team_quotas tq ON tq.team_id = $1
		LEFT JOIN team_environment_quotas teq ON tq.team_id IS NOT NULL AND teq.team_id = $1 AND teq.environment_id = en.id
		CROSS JOIN LATERAL (SELECT coalesce(sum(x.machines), 0)::bigint AS machines, coalesce(sum(x.vcpus), 0)::bigint AS vcpus,
			coalesce(sum(x.memory_mib), 0)::bigint AS memory_mib, coalesce(sum(x.disk_gib), 0)::bigint AS disk_gib,
			coalesce(sum(x.machines) FILTER (WHERE x.environment_id = en.id), 0)::bigint AS env_machines,
			coalesce(sum(x.vcpus) FILTER (WHERE x.environment_id = en.id), 0)::bigint AS env_vcpus,
			coalesce(sum(x.memory_mib) FILTER (WHERE x.environment_id = en.id), 0)::bigint AS env_memory_mib,
			coalesce(sum(x.disk_gib) FILTER (WHERE x.environment_id = en.id), 0)::bigint AS env_disk_gib
			FROM `+usageByEnvironment+` x WHERE tq.team_id IS NOT NULL) u
		WHERE en.id = $3`, team, except, id).
		Scan(&e.ID, &e.Name, &e.Description, &e.NetworkIDs, &e.ProxmoxServerIDs, &e.NagiosServerID, &e.Version, &e.CreatedAt, &e.UpdatedAt,
			&l.Machines, &l.VCPUs, &l.MemoryMiB, &l.DiskGiB, &version, &qe.Quota.UpdatedAt,
			&hasEnv, &envLimits.Machines, &envLimits.VCPUs, &envLimits.MemoryMiB, &envLimits.DiskGiB,
			&u.Machines, &u.VCPUs, &u.MemoryMiB, &u.DiskGiB, &ue.Machines, &ue.VCPUs, &ue.MemoryMiB, &ue.DiskGiB)
	if err != nil {
		return e, qe, fmt.Errorf("environment %s: %w", id, translate(err))
	}
	if version != nil {
		qe.Quota.Version = *version
	}
	if hasEnv {
		qe.Quota.Environments[id] = envLimits
	}
	return e, qe, nil
}
