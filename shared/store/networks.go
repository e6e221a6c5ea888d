package store

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/horizon"
)

const networkColumns = `id, name, cidr, gateway, dns, bridge, vlan, version, created_at, updated_at`

func scanNetwork(row pgx.Row) (horizon.Network, error) {
	var n horizon.Network
	err := row.Scan(&n.ID, &n.Name, &n.CIDR, &n.Gateway, &n.DNS, &n.Bridge, &n.VLAN, &n.Version, &n.CreatedAt, &n.UpdatedAt)
	return n, err
}

// NetworkCreate inserts a network. A taken name is a *horizon.ConflictError.
func NetworkCreate(ctx context.Context, q Querier, n horizon.Network) (horizon.Network, error) {
	dns := n.DNS
	if dns == nil {
		dns = []netip.Addr{}
	}
	out, err := scanNetwork(q.QueryRow(ctx, `INSERT INTO networks (name, cidr, gateway, dns, bridge, vlan)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+networkColumns, n.Name, n.CIDR, n.Gateway, dns, n.Bridge, n.VLAN))
	return out, translate(err)
}

// NetworkGet returns a network. Networks are catalogue objects every authenticated user reads.
func NetworkGet(ctx context.Context, q Querier, id uuid.UUID) (horizon.Network, error) {
	n, err := scanNetwork(q.QueryRow(ctx, `SELECT `+networkColumns+` FROM networks WHERE id = $1`, id))
	if err != nil {
		return n, fmt.Errorf("network %s: %w", id, translate(err))
	}
	return n, nil
}

// NetworkList returns one page of networks.
func NetworkList(ctx context.Context, q Querier, p Page) ([]horizon.Network, *uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT `+networkColumns+` FROM networks
		WHERE ($1::uuid IS NULL OR id > $1) ORDER BY id LIMIT $2`, p.After, p.limit())
	if err != nil {
		return nil, nil, translate(err)
	}
	nets, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.Network, error) { return scanNetwork(r) })
	if err != nil {
		return nil, nil, translate(err)
	}
	nets, next := cut(nets, p, func(n horizon.Network) uuid.UUID { return n.ID })
	return nets, next, nil
}

// NetworkDelete deletes a network that has no addresses and no environment using it; otherwise
// it is a *horizon.InUseError naming them (inuse.go).
func NetworkDelete(ctx context.Context, q Querier, id uuid.UUID) error {
	return deleteUnused(ctx, q, networkUse, id)
}
