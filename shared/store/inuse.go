package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/horizon"
)

// A catalogue object (a Proxmox server, a network, an address, a Nagios server) may be deleted
// once nothing uses it. What uses it is asked, not inferred from a foreign key's refusal: a
// removed stack keeps its executions for the history, and their references (ON DELETE
// RESTRICT, to protect live machines) used to pin a server forever, with a refusal that named
// the wrong user. The history is detached instead, in the transaction that deletes the object.
//
// The object's row is locked first (FOR UPDATE): a concurrent write that would start using it
// takes a key share lock on it for its foreign key check, so it waits, and either commits before
// the users are asked (and is named) or fails on the foreign key afterwards.

// catalogueUse says how to find and detach what uses one kind of catalogue object. Every
// statement takes the object's id as $1.
type catalogueUse struct {
	table, noun string
	// users returns one line per user, e.g. "environment prod".
	users string
	// unpin detaches the history that still refers to the object.
	unpin []string
}

// deleteUnused deletes the object id of kind c: horizon.ErrNotFound when there is none, a
// *horizon.InUseError naming its users when something uses it.
func deleteUnused(ctx context.Context, q Querier, c catalogueUse, id uuid.UUID) error {
	var one int
	if err := q.QueryRow(ctx, `SELECT 1 FROM `+c.table+` WHERE id = $1 FOR UPDATE`, id).Scan(&one); err != nil {
		if err = translate(err); errors.Is(err, horizon.ErrNotFound) {
			return fmt.Errorf("%s %s: %w", c.noun, id, horizon.ErrNotFound)
		}
		return err
	}
	rows, err := q.Query(ctx, `SELECT u FROM (`+c.users+`) AS users (u) ORDER BY u`, id)
	if err != nil {
		return translate(err)
	}
	users, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return translate(err)
	}
	if len(users) > 0 {
		return fmt.Errorf("delete %s %s: %w", c.noun, id, &horizon.InUseError{Users: users})
	}
	for _, stmt := range c.unpin {
		if _, err := q.Exec(ctx, stmt, id); err != nil {
			return translate(err)
		}
	}
	return deleteByID(ctx, q, c.table, c.noun, id)
}

// serverUse: environments that list the server, stacks not removed with a machine on it that is
// not removed, ISOs not removed built on it. The history — executions of removed stacks, removed
// executions, removed ISOs — keeps its node names, its steps their server id (no foreign key).
var serverUse = catalogueUse{table: "proxmox_servers", noun: "proxmox server",
	users: `SELECT 'environment ' || e.name FROM environment_proxmox_servers es JOIN environments e ON e.id = es.environment_id
		WHERE es.server_id = $1
	UNION ALL
	SELECT 'stack ' || s.name FROM stacks s WHERE s.state <> 'removed'
		AND EXISTS (SELECT 1 FROM executions x WHERE x.stack_id = s.id AND x.server_id = $1 AND x.state <> 'removed')
	UNION ALL
	SELECT 'ISO ' || i.name FROM isos i WHERE i.server_id = $1 AND i.state <> 'removed'`,
	unpin: []string{
		`UPDATE executions SET server_id = NULL WHERE server_id = $1`,
		`UPDATE isos SET server_id = NULL WHERE server_id = $1`,
	}}

// networkUse: environments that offer the network, and its addresses (deleted first, each on
// its own).
var networkUse = catalogueUse{table: "networks", noun: "network",
	users: `SELECT 'environment ' || e.name FROM environment_networks en JOIN environments e ON e.id = en.environment_id
		WHERE en.network_id = $1
	UNION ALL
	SELECT count(*) || CASE count(*) WHEN 1 THEN ' address' ELSE ' addresses' END FROM addresses WHERE network_id = $1 HAVING count(*) > 0`}

// addressUse: the machine of a stack not removed it is attached to. An attachment left on a
// removed execution or stack (its destroy frees it; a force-remove may not have) is history.
var addressUse = catalogueUse{table: "addresses", noun: "address",
	users: `SELECT 'stack ' || s.name || ' (' || x.job || '[' || x.index || '])' FROM address_attachments aa
		JOIN executions x ON x.id = aa.execution_id JOIN stacks s ON s.id = x.stack_id
		WHERE aa.address_id = $1 AND x.state <> 'removed' AND s.state <> 'removed'`,
	unpin: []string{`DELETE FROM address_attachments aa USING executions x, stacks s
		WHERE aa.address_id = $1 AND x.id = aa.execution_id AND s.id = x.stack_id AND (x.state = 'removed' OR s.state = 'removed')`}}

// nagiosUse: environments that monitor with the server, stacks not removed published to it. A
// removed stack's publication (a force-remove that could not unpublish) is history.
var nagiosUse = catalogueUse{table: "nagios_servers", noun: "nagios server",
	users: `SELECT 'environment ' || e.name FROM environments e WHERE e.nagios_server_id = $1
	UNION ALL
	SELECT 'stack ' || s.name FROM nagios_publications p JOIN stacks s ON s.id = p.stack_id
		WHERE p.nagios_server_id = $1 AND s.state <> 'removed'`,
	unpin: []string{`DELETE FROM nagios_publications p USING stacks s
		WHERE p.nagios_server_id = $1 AND s.id = p.stack_id AND s.state = 'removed'`}}
