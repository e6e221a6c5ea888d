package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/horizon"
)

const environmentSelect = `SELECT e.id, e.name, e.description,
	ARRAY(SELECT n.network_id FROM environment_networks n WHERE n.environment_id = e.id ORDER BY n.network_id),
	ARRAY(SELECT p.server_id FROM environment_proxmox_servers p WHERE p.environment_id = e.id ORDER BY p.server_id),
	e.nagios_server_id, e.version, e.created_at, e.updated_at FROM environments e`

func scanEnvironment(row pgx.Row) (horizon.Environment, error) {
	var e horizon.Environment
	err := row.Scan(&e.ID, &e.Name, &e.Description, &e.NetworkIDs, &e.ProxmoxServerIDs, &e.NagiosServerID, &e.Version, &e.CreatedAt, &e.UpdatedAt)
	return e, err
}

// EnvironmentCreate inserts an environment with the networks it may use. Unknown networks are a
// conflict (the caller validates them first to report the field).
func EnvironmentCreate(ctx context.Context, q Querier, e horizon.Environment) (horizon.Environment, error) {
	var id uuid.UUID
	if err := q.QueryRow(ctx, `INSERT INTO environments (name, description, nagios_server_id) VALUES ($1, $2, $3) RETURNING id`,
		e.Name, e.Description, e.NagiosServerID).Scan(&id); err != nil {
		return horizon.Environment{}, translate(err)
	}
	if err := setEnvironmentLinks(ctx, q, id, "environment_networks", "network_id", e.NetworkIDs); err != nil {
		return horizon.Environment{}, err
	}
	if err := setEnvironmentLinks(ctx, q, id, "environment_proxmox_servers", "server_id", e.ProxmoxServerIDs); err != nil {
		return horizon.Environment{}, err
	}
	return EnvironmentGet(ctx, q, id)
}

// setEnvironmentLinks makes ids the environment's rows of a link table (a constant of this
// package) and column.
func setEnvironmentLinks(ctx context.Context, q Querier, env uuid.UUID, table, column string, ids []uuid.UUID) error {
	if ids == nil {
		ids = []uuid.UUID{}
	}
	if _, err := q.Exec(ctx, `DELETE FROM `+table+` WHERE environment_id = $1 AND NOT `+column+` = ANY($2)`, env, ids); err != nil {
		return translate(err)
	}
	_, err := q.Exec(ctx, `INSERT INTO `+table+` (environment_id, `+column+`)
		SELECT $1, unnest($2::uuid[]) ON CONFLICT DO NOTHING`, env, ids)
	return translate(err)
}

// EnvironmentGet returns an environment.
func EnvironmentGet(ctx context.Context, q Querier, id uuid.UUID) (horizon.Environment, error) {
	e, err := scanEnvironment(q.QueryRow(ctx, environmentSelect+` WHERE e.id = $1`, id))
	if err != nil {
		return e, fmt.Errorf("environment %s: %w", id, translate(err))
	}
	return e, nil
}

// EnvironmentList returns one page of environments.
func EnvironmentList(ctx context.Context, q Querier, p Page) ([]horizon.Environment, *uuid.UUID, error) {
	rows, err := q.Query(ctx, environmentSelect+` WHERE ($1::uuid IS NULL OR e.id > $1) ORDER BY e.id LIMIT $2`, p.After, p.limit())
	if err != nil {
		return nil, nil, translate(err)
	}
	envs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.Environment, error) { return scanEnvironment(r) })
	if err != nil {
		return nil, nil, translate(err)
	}
	envs, next := cut(envs, p, func(e horizon.Environment) uuid.UUID { return e.ID })
	return envs, next, nil
}

// EnvironmentPatch holds the fields a PATCH changes; nil leaves a field as it is.
type EnvironmentPatch struct {
	Name, Description *string
	NetworkIDs        *[]uuid.UUID
	ProxmoxServerIDs  *[]uuid.UUID
	// NagiosServerID: nil leaves it; a pointer to nil clears it.
	NagiosServerID **uuid.UUID
}

// EnvironmentUpdate applies a patch if the version is still ifVersion (0 skips the check).
func EnvironmentUpdate(ctx context.Context, q Querier, id uuid.UUID, p EnvironmentPatch, ifVersion int64) (horizon.Environment, error) {
	var got uuid.UUID
	setNagios, nagios := p.NagiosServerID != nil, (*uuid.UUID)(nil)
	if setNagios {
		nagios = *p.NagiosServerID
	}
	err := q.QueryRow(ctx, `UPDATE environments SET name = COALESCE($2, name), description = COALESCE($3, description),
		nagios_server_id = CASE WHEN $5 THEN $6 ELSE nagios_server_id END,
		version = version + 1, updated_at = now() WHERE id = $1 AND ($4 = 0 OR version = $4) RETURNING id`,
		id, p.Name, p.Description, ifVersion, setNagios, nagios).Scan(&got)
	if err != nil {
		return horizon.Environment{}, staleOrMissing(ctx, q, err, "environments", id)
	}
	if p.NetworkIDs != nil {
		if err := setEnvironmentLinks(ctx, q, id, "environment_networks", "network_id", *p.NetworkIDs); err != nil {
			return horizon.Environment{}, err
		}
	}
	if p.ProxmoxServerIDs != nil {
		if err := setEnvironmentLinks(ctx, q, id, "environment_proxmox_servers", "server_id", *p.ProxmoxServerIDs); err != nil {
			return horizon.Environment{}, err
		}
	}
	return EnvironmentGet(ctx, q, id)
}

// NetworksMissing returns those of ids that name no network.
func NetworksMissing(ctx context.Context, q Querier, ids []uuid.UUID) ([]uuid.UUID, error) {
	return missingIDs(ctx, q, "networks", ids)
}

// NagiosServersMissing returns those of ids that name no Nagios server.
func NagiosServersMissing(ctx context.Context, q Querier, ids []uuid.UUID) ([]uuid.UUID, error) {
	return missingIDs(ctx, q, "nagios_servers", ids)
}

// EnvironmentsMissing returns those of ids that name no environment.
func EnvironmentsMissing(ctx context.Context, q Querier, ids []uuid.UUID) ([]uuid.UUID, error) {
	return missingIDs(ctx, q, "environments", ids)
}
