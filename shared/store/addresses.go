package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/auth"

	"horizon/shared/horizon"
)

const addressSelect = `SELECT a.id, a.network_id, a.name, a.ip, x.execution_id, x.attached_at, a.created_at
	FROM addresses a LEFT JOIN address_attachments x ON x.address_id = a.id`

func scanAddress(row pgx.Row) (horizon.Address, error) {
	var a horizon.Address
	err := row.Scan(&a.ID, &a.NetworkID, &a.Name, &a.IP, &a.ExecutionID, &a.AttachedAt, &a.CreatedAt)
	return a, err
}

// AddressCreate inserts an address on a network and, in the same statement (so atomically and
// in one round trip: this is the catalogue's hottest write), its activity record; act.ObjectID
// is filled with the new address. A taken name or ip on that network is a
// *horizon.ConflictError naming the field.
func AddressCreate(ctx context.Context, q Querier, a horizon.Address, act Activity) (horizon.Address, error) {
	details := act.Details
	if details == nil {
		details = map[string]any{}
	}
	out, err := scanAddress(q.QueryRow(ctx, `WITH a AS (
		INSERT INTO addresses (network_id, name, ip) VALUES ($1, $2, $3)
		RETURNING id, network_id, name, ip, NULL::uuid AS execution_id, NULL::timestamptz AS attached_at, created_at),
	  audit AS (
		INSERT INTO activity (actor_id, action, object_type, object_id, details)
		SELECT $4, $5, $6, a.id, $7 FROM a)
		SELECT * FROM a`, a.NetworkID, a.Name, a.IP, act.ActorID, act.Action, act.ObjectType, details))
	return out, translate(err)
}

// AddressGet returns an address of network.
func AddressGet(ctx context.Context, q Querier, network, id uuid.UUID) (horizon.Address, error) {
	a, err := scanAddress(q.QueryRow(ctx, addressSelect+` WHERE a.network_id = $1 AND a.id = $2`, network, id))
	if err != nil {
		return a, fmt.Errorf("address %s: %w", id, translate(err))
	}
	return a, nil
}

// AddressFilter narrows AddressList; a nil field does not filter.
type AddressFilter struct {
	// Attached selects attached (true) or free (false) addresses.
	Attached *bool
}

// AddressList returns one page of a network's addresses.
func AddressList(ctx context.Context, q Querier, network uuid.UUID, f AddressFilter, p Page) ([]horizon.Address, *uuid.UUID, error) {
	rows, err := q.Query(ctx, addressSelect+` WHERE a.network_id = $1
		AND ($2::bool IS NULL OR (x.address_id IS NOT NULL) = $2)
		AND ($3::uuid IS NULL OR a.id > $3) ORDER BY a.id LIMIT $4`, network, f.Attached, p.After, p.limit())
	if err != nil {
		return nil, nil, translate(err)
	}
	as, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.Address, error) { return scanAddress(r) })
	if err != nil {
		return nil, nil, translate(err)
	}
	as, next := cut(as, p, func(a horizon.Address) uuid.UUID { return a.ID })
	return as, next, nil
}

// AddressDelete deletes a free address; one attached to a machine of a stack not removed is a
// *horizon.InUseError naming it (inuse.go).
func AddressDelete(ctx context.Context, q Querier, network, id uuid.UUID) error {
	var one int
	if err := q.QueryRow(ctx, `SELECT 1 FROM addresses WHERE network_id = $1 AND id = $2`, network, id).Scan(&one); err != nil {
		return fmt.Errorf("address %s: %w", id, translate(err))
	}
	return deleteUnused(ctx, q, addressUse, id)
}

// AddressAttach attaches an address to an execution. Exclusivity is the attachments table's
// primary key: of two concurrent attaches of one address exactly one commits, the other gets a
// *horizon.ConflictError — there is no read-then-write window.
func AddressAttach(ctx context.Context, q Querier, address, execution uuid.UUID) error {
	_, err := q.Exec(ctx, `INSERT INTO address_attachments (address_id, execution_id) VALUES ($1, $2)`, address, execution)
	return translate(err)
}

// AddressDetach frees whatever address execution holds. Detaching a free address is a no-op.
func AddressDetach(ctx context.Context, q Querier, execution uuid.UUID) error {
	_, err := q.Exec(ctx, `DELETE FROM address_attachments WHERE execution_id = $1`, execution)
	return translate(err)
}

// AddressByID returns an address by its id alone (workers resolve an execution's attachment).
func AddressByID(ctx context.Context, q Querier, id uuid.UUID) (horizon.Address, error) {
	a, err := scanAddress(q.QueryRow(ctx, addressSelect+` WHERE a.id = $1`, id))
	if err != nil {
		return a, fmt.Errorf("address %s: %w", id, translate(err))
	}
	return a, nil
}

// AddressBridges returns, for each of the addresses that exists, the bridge of its network: the
// bridge a machine on that address is plugged into.
func AddressBridges(ctx context.Context, q Querier, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	rows, err := q.Query(ctx, `SELECT a.id, n.bridge FROM addresses a JOIN networks n ON n.id = a.network_id WHERE a.id = ANY($1)`, ids)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[uuid.UUID]string{}
	for rows.Next() {
		var id uuid.UUID
		var bridge string
		if err := rows.Scan(&id, &bridge); err != nil {
			return nil, translate(err)
		}
		out[id] = bridge
	}
	return out, translate(rows.Err())
}

// StackRef names a stack: what an attached address shows of the stack that holds it.
type StackRef struct {
	ID   uuid.UUID
	Name string
}

// AddressStacks returns, for each of the executions that exists in a stack scope may see, that
// stack: the addresses it holds name it. Executions of other teams' stacks are left out, so their
// names never reach another team.
func AddressStacks(ctx context.Context, q Querier, scope auth.Scope, executions []uuid.UUID) (map[uuid.UUID]StackRef, error) {
	rows, err := q.Query(ctx, `SELECT e.id, s.id, s.name FROM executions e JOIN stacks s ON s.id = e.stack_id
		WHERE e.id = ANY($1) AND ($2 OR s.team_id = ANY($3))`, executions, scope.All, scope.TeamIDs())
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[uuid.UUID]StackRef{}
	for rows.Next() {
		var e uuid.UUID
		var r StackRef
		if err := rows.Scan(&e, &r.ID, &r.Name); err != nil {
			return nil, translate(err)
		}
		out[e] = r
	}
	return out, translate(rows.Err())
}
