package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/horizon"
)

const nagiosColumns = `id, name, url, username, password, ssh_address, ssh_user, ssh_private_key, ssh_host_key,
	config_dir, verify_command, reload_command, hostgroups, commands, discovered_at, discovery_error, version, created_at, updated_at`

func scanNagios(row pgx.Row) (horizon.NagiosServer, error) {
	var n horizon.NagiosServer
	err := row.Scan(&n.ID, &n.Name, &n.URL, &n.Username, &n.Password, &n.SSHAddress, &n.SSHUser, &n.SSHPrivateKey, &n.SSHHostKey,
		&n.ConfigDir, &n.VerifyCommand, &n.ReloadCommand, &n.Hostgroups, &n.Commands, &n.DiscoveredAt, &n.DiscoveryError,
		&n.Version, &n.CreatedAt, &n.UpdatedAt)
	return n, err
}

// NagiosServerCreate inserts a Nagios server with what its discovery found; Password and
// SSHPrivateKey must already be sealed.
func NagiosServerCreate(ctx context.Context, q Querier, n horizon.NagiosServer) (horizon.NagiosServer, error) {
	out, err := scanNagios(q.QueryRow(ctx, `INSERT INTO nagios_servers (name, url, username, password, ssh_address, ssh_user,
		ssh_private_key, ssh_host_key, config_dir, verify_command, reload_command, hostgroups, commands, discovered_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, now()) RETURNING `+nagiosColumns,
		n.Name, n.URL, n.Username, n.Password, n.SSHAddress, n.SSHUser, n.SSHPrivateKey, n.SSHHostKey, n.ConfigDir,
		n.VerifyCommand, n.ReloadCommand, nonNil(n.Hostgroups), nonNil(n.Commands)))
	return out, translate(err)
}

// NagiosServerUpdate rewrites a server's settings if its version is still ifVersion (0 skips the
// check); Password and SSHPrivateKey must already be sealed. When discovered, n's lists are what
// a discovery just found and are recorded as such; otherwise the stored lists are kept.
func NagiosServerUpdate(ctx context.Context, q Querier, n horizon.NagiosServer, ifVersion int64, discovered bool) (horizon.NagiosServer, error) {
	out, err := scanNagios(q.QueryRow(ctx, `UPDATE nagios_servers SET name = $2, url = $3, username = $4, password = $5,
		ssh_address = $6, ssh_user = $7, ssh_private_key = $8, ssh_host_key = $9, config_dir = $10, verify_command = $11,
		reload_command = $12,
		hostgroups = CASE WHEN $15 THEN $13 ELSE hostgroups END,
		commands = CASE WHEN $15 THEN $14 ELSE commands END,
		discovered_at = CASE WHEN $15 THEN now() ELSE discovered_at END,
		discovery_error = CASE WHEN $15 THEN NULL ELSE discovery_error END,
		version = version + 1, updated_at = now()
		WHERE id = $1 AND ($16 = 0 OR version = $16) RETURNING `+nagiosColumns,
		n.ID, n.Name, n.URL, n.Username, n.Password, n.SSHAddress, n.SSHUser, n.SSHPrivateKey, n.SSHHostKey, n.ConfigDir,
		n.VerifyCommand, n.ReloadCommand, nonNil(n.Hostgroups), nonNil(n.Commands), discovered, ifVersion))
	if err != nil {
		return out, staleOrMissing(ctx, q, err, "nagios_servers", n.ID)
	}
	return out, nil
}

// NagiosServerDiscovered records a discovery: the lists when it succeeded (failure nil), or why
// it failed, keeping the lists of the last success. It does not change the server's version:
// discovery is not an edit.
func NagiosServerDiscovered(ctx context.Context, q Querier, id uuid.UUID, hostgroups, commands []string, failure *string) error {
	tag, err := q.Exec(ctx, `UPDATE nagios_servers SET
		hostgroups = CASE WHEN $4::text IS NULL THEN $2 ELSE hostgroups END,
		commands = CASE WHEN $4::text IS NULL THEN $3 ELSE commands END,
		discovered_at = CASE WHEN $4::text IS NULL THEN now() ELSE discovered_at END,
		discovery_error = $4 WHERE id = $1`, id, nonNil(hostgroups), nonNil(commands), failure)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("nagios server %s: %w", id, horizon.ErrNotFound)
	}
	return nil
}

// NagiosPublication is what one stack has published: its file on a server, listing hosts.
type NagiosPublication struct {
	StackID        uuid.UUID
	NagiosServerID uuid.UUID
	Hosts          []string
}

// NagiosPublicationGet returns a stack's publication; ErrNotFound when nothing is published.
func NagiosPublicationGet(ctx context.Context, q Querier, stackID uuid.UUID) (NagiosPublication, error) {
	p := NagiosPublication{StackID: stackID}
	err := q.QueryRow(ctx, `SELECT nagios_server_id, hosts FROM nagios_publications WHERE stack_id = $1`, stackID).
		Scan(&p.NagiosServerID, &p.Hosts)
	return p, translate(err)
}

// NagiosPublicationSet records that a stack's file on a server lists hosts.
func NagiosPublicationSet(ctx context.Context, q Querier, p NagiosPublication) error {
	_, err := q.Exec(ctx, `INSERT INTO nagios_publications (stack_id, nagios_server_id, hosts) VALUES ($1, $2, $3)
		ON CONFLICT (stack_id) DO UPDATE SET nagios_server_id = $2, hosts = $3, published_at = now()`,
		p.StackID, p.NagiosServerID, nonNil(p.Hosts))
	return translate(err)
}

// NagiosPublicationDelete records that a stack has nothing published on a server (a
// publication on another server is kept).
func NagiosPublicationDelete(ctx context.Context, q Querier, stackID, server uuid.UUID) error {
	_, err := q.Exec(ctx, `DELETE FROM nagios_publications WHERE stack_id = $1 AND nagios_server_id = $2`, stackID, server)
	return translate(err)
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

// NagiosServerDelete deletes a Nagios server: a *horizon.InUseError while an environment uses
// it or the hosts of a stack not removed are published to it (inuse.go).
func NagiosServerDelete(ctx context.Context, q Querier, id uuid.UUID) error {
	return deleteUnused(ctx, q, nagiosUse, id)
}
