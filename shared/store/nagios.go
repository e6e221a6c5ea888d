package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/horizon"
)

const nagiosColumns = `id, name, url, username, password, version, created_at, updated_at`

func scanNagios(row pgx.Row) (horizon.NagiosServer, error) {
	var n horizon.NagiosServer
	err := row.Scan(&n.ID, &n.Name, &n.URL, &n.Username, &n.Password, &n.Version, &n.CreatedAt, &n.UpdatedAt)
	return n, err
}

// NagiosServerCreate inserts a Nagios server; Password must already be sealed.
func NagiosServerCreate(ctx context.Context, q Querier, n horizon.NagiosServer) (horizon.NagiosServer, error) {
	out, err := scanNagios(q.QueryRow(ctx, `INSERT INTO nagios_servers (name, url, username, password)
		VALUES ($1, $2, $3, $4) RETURNING `+nagiosColumns, n.Name, n.URL, n.Username, n.Password))
	return out, translate(err)
}

// NagiosServerGet returns a Nagios server, its password still sealed.
func NagiosServerGet(ctx context.Context, q Querier, id uuid.UUID) (horizon.NagiosServer, error) {
	n, err := scanNagios(q.QueryRow(ctx, `SELECT `+nagiosColumns+` FROM nagios_servers WHERE id = $1`, id))
	if err != nil {
		return n, fmt.Errorf("nagios server %s: %w", id, translate(err))
	}
	return n, nil
}

// NagiosServerList returns one page of Nagios servers.
func NagiosServerList(ctx context.Context, q Querier, p Page) ([]horizon.NagiosServer, *uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT `+nagiosColumns+` FROM nagios_servers
		WHERE ($1::uuid IS NULL OR id > $1) ORDER BY id LIMIT $2`, p.After, p.limit())
	if err != nil {
		return nil, nil, translate(err)
	}
	ns, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.NagiosServer, error) { return scanNagios(r) })
	if err != nil {
		return nil, nil, translate(err)
	}
	ns, next := cut(ns, p, func(n horizon.NagiosServer) uuid.UUID { return n.ID })
	return ns, next, nil
}
