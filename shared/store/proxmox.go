package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/horizon"
)

const proxmoxServerColumns = `id, name, api_url, token_id, token_secret, tls_fingerprint, ca_cert, ssh_user,
	ssh_private_key, ssh_public_key, pve_version, cluster_name, refreshed_at, version, created_at, updated_at`

func scanProxmoxServer(row pgx.Row) (horizon.ProxmoxServer, error) {
	var s horizon.ProxmoxServer
	err := row.Scan(&s.ID, &s.Name, &s.APIURL, &s.TokenID, &s.TokenSecret, &s.TLSFingerprint, &s.CACert, &s.SSHUser,
		&s.SSHPrivateKey, &s.SSHPublicKey, &s.PVEVersion, &s.ClusterName, &s.RefreshedAt, &s.Version, &s.CreatedAt, &s.UpdatedAt)
	return s, err
}

// ProxmoxServerCreate inserts a server and its inventory; secrets must already be sealed.
func ProxmoxServerCreate(ctx context.Context, q Querier, s horizon.ProxmoxServer) (horizon.ProxmoxServer, error) {
	var id uuid.UUID
	err := q.QueryRow(ctx, `INSERT INTO proxmox_servers (name, api_url, token_id, token_secret, tls_fingerprint, ca_cert,
		ssh_user, ssh_private_key, ssh_public_key, pve_version, cluster_name)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`,
		s.Name, s.APIURL, s.TokenID, s.TokenSecret, s.TLSFingerprint, s.CACert, s.SSHUser, s.SSHPrivateKey, s.SSHPublicKey,
		s.PVEVersion, s.ClusterName).Scan(&id)
	if err != nil {
		return horizon.ProxmoxServer{}, translate(err)
	}
	if err := ProxmoxInventoryReplace(ctx, q, id, s); err != nil {
		return horizon.ProxmoxServer{}, err
	}
	return ProxmoxServerGet(ctx, q, id)
}

// ProxmoxServerUpdate rewrites a server's connection settings and inventory if its version is
// still ifVersion (0 skips the check).
func ProxmoxServerUpdate(ctx context.Context, q Querier, s horizon.ProxmoxServer, ifVersion int64) (horizon.ProxmoxServer, error) {
	var id uuid.UUID
	err := q.QueryRow(ctx, `UPDATE proxmox_servers SET name = $2, api_url = $3, token_id = $4, token_secret = $5,
		tls_fingerprint = $6, ca_cert = $7, ssh_user = $8, ssh_private_key = $9, ssh_public_key = $10, pve_version = $11,
		cluster_name = $12, refreshed_at = now(), version = version + 1, updated_at = now()
		WHERE id = $1 AND ($13 = 0 OR version = $13) RETURNING id`,
		s.ID, s.Name, s.APIURL, s.TokenID, s.TokenSecret, s.TLSFingerprint, s.CACert, s.SSHUser, s.SSHPrivateKey,
		s.SSHPublicKey, s.PVEVersion, s.ClusterName, ifVersion).Scan(&id)
	if err != nil {
		return horizon.ProxmoxServer{}, staleOrMissing(ctx, q, err, "proxmox_servers", s.ID)
	}
	if err := ProxmoxInventoryReplace(ctx, q, id, s); err != nil {
		return horizon.ProxmoxServer{}, err
	}
	return ProxmoxServerGet(ctx, q, id)
}

// ProxmoxInventoryReplace replaces a server's nodes, storages, pools and ISO files with those of
// s. Nodes keep the SSH settings s carries for them.
func ProxmoxInventoryReplace(ctx context.Context, q Querier, id uuid.UUID, s horizon.ProxmoxServer) error {
	for _, table := range []string{"proxmox_nodes", "proxmox_storages", "proxmox_pools", "proxmox_iso_files"} {
		if _, err := q.Exec(ctx, `DELETE FROM `+table+` WHERE server_id = $1`, id); err != nil {
			return translate(err)
		}
	}
	b := &pgx.Batch{}
	for _, n := range s.Nodes {
		b.Queue(`INSERT INTO proxmox_nodes (server_id, name, online, cpus, memory, ssh_address, ssh_host_key, host_key_source, token_lacks)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, id, n.Name, n.Online, n.CPUs, n.Memory, n.SSHAddress, n.SSHHostKey, n.HostKeySource, nonNil(n.TokenLacks))
	}
	for _, st := range s.Storages {
		b.Queue(`INSERT INTO proxmox_storages (server_id, name, type, content, shared, path, nodes, token_lacks) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			id, st.Name, st.Type, nonNil(st.Content), st.Shared, st.Path, nonNil(st.Nodes), nonNil(st.TokenLacks))
	}
	for _, p := range s.Pools {
		b.Queue(`INSERT INTO proxmox_pools (server_id, pool, comment, token_lacks) VALUES ($1, $2, $3, $4)`, id, p.Pool, p.Comment, nonNil(p.TokenLacks))
	}
	for _, f := range s.ISOFiles {
		b.Queue(`INSERT INTO proxmox_iso_files (server_id, volid, storage, size, nodes) VALUES ($1, $2, $3, $4, $5)`,
			id, f.VolID, f.Storage, f.Size, nonNil(f.Nodes))
	}
	return translate(q.SendBatch(ctx, b).Close())
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ProxmoxServerGet returns a server with its inventory, secrets still sealed.
func ProxmoxServerGet(ctx context.Context, q Querier, id uuid.UUID) (horizon.ProxmoxServer, error) {
	s, err := scanProxmoxServer(q.QueryRow(ctx, `SELECT `+proxmoxServerColumns+` FROM proxmox_servers WHERE id = $1`, id))
	if err != nil {
		return s, fmt.Errorf("proxmox server %s: %w", id, translate(err))
	}
	return s, loadInventory(ctx, q, &s)
}

func loadInventory(ctx context.Context, q Querier, s *horizon.ProxmoxServer) error {
	rows, err := q.Query(ctx, `SELECT name, online, cpus, memory, ssh_address, ssh_host_key, host_key_source, token_lacks
		FROM proxmox_nodes WHERE server_id = $1 ORDER BY name`, s.ID)
	if err != nil {
		return translate(err)
	}
	s.Nodes, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.ProxmoxNode, error) {
		var n horizon.ProxmoxNode
		err := r.Scan(&n.Name, &n.Online, &n.CPUs, &n.Memory, &n.SSHAddress, &n.SSHHostKey, &n.HostKeySource, &n.TokenLacks)
		return n, err
	})
	if err != nil {
		return translate(err)
	}
	rows, err = q.Query(ctx, `SELECT name, type, content, shared, path, nodes, token_lacks FROM proxmox_storages WHERE server_id = $1 ORDER BY name`, s.ID)
	if err != nil {
		return translate(err)
	}
	s.Storages, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.ProxmoxStorage, error) {
		var st horizon.ProxmoxStorage
		err := r.Scan(&st.Name, &st.Type, &st.Content, &st.Shared, &st.Path, &st.Nodes, &st.TokenLacks)
		return st, err
	})
	if err != nil {
		return translate(err)
	}
	rows, err = q.Query(ctx, `SELECT pool, comment, token_lacks FROM proxmox_pools WHERE server_id = $1 ORDER BY pool`, s.ID)
	if err != nil {
		return translate(err)
	}
	s.Pools, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.ProxmoxPool, error) {
		var p horizon.ProxmoxPool
		err := r.Scan(&p.Pool, &p.Comment, &p.TokenLacks)
		return p, err
	})
	if err != nil {
		return translate(err)
	}
	rows, err = q.Query(ctx, `SELECT volid, storage, size, nodes FROM proxmox_iso_files WHERE server_id = $1 ORDER BY volid, nodes`, s.ID)
	if err != nil {
		return translate(err)
	}
	s.ISOFiles, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.ProxmoxISOFile, error) {
		var f horizon.ProxmoxISOFile
		err := r.Scan(&f.VolID, &f.Storage, &f.Size, &f.Nodes)
		return f, err
	})
	return translate(err)
}

// ProxmoxServerList returns one page of servers, with their inventories.
func ProxmoxServerList(ctx context.Context, q Querier, p Page) ([]horizon.ProxmoxServer, *uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT `+proxmoxServerColumns+` FROM proxmox_servers
		WHERE ($1::uuid IS NULL OR id > $1) ORDER BY id LIMIT $2`, p.After, p.limit())
	if err != nil {
		return nil, nil, translate(err)
	}
	servers, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.ProxmoxServer, error) { return scanProxmoxServer(r) })
	if err != nil {
		return nil, nil, translate(err)
	}
	servers, next := cut(servers, p, func(s horizon.ProxmoxServer) uuid.UUID { return s.ID })
	for i := range servers {
		if err := loadInventory(ctx, q, &servers[i]); err != nil {
			return nil, nil, err
		}
	}
	return servers, next, nil
}

// ProxmoxServerDelete deletes a server nothing uses: a *horizon.InUseError names the
// environments, stacks and ISOs that do. The history of removed stacks and ISOs is detached
// from it (inuse.go).
func ProxmoxServerDelete(ctx context.Context, q Querier, id uuid.UUID) error {
	return deleteUnused(ctx, q, serverUse, id)
}

// ProxmoxServersMissing returns those of ids that name no Proxmox server.
func ProxmoxServersMissing(ctx context.Context, q Querier, ids []uuid.UUID) ([]uuid.UUID, error) {
	return missingIDs(ctx, q, "proxmox_servers", ids)
}
