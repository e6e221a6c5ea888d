package store

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"horizon/shared/horizon"
)

// VMIDAllocate returns the VM id of an execution on a cluster, allocating the lowest free one
// (from 100) when it has none. Ids taken in the cluster outside Horizon are passed as inUse.
// Uniqueness per cluster is the vm_ids primary key: a concurrent allocation of the same id
// fails the insert, and the next free id is tried.
func VMIDAllocate(ctx context.Context, q Querier, server, execution uuid.UUID, inUse []int) (int, error) {
	var vmid int
	err := q.QueryRow(ctx, `SELECT vmid FROM vm_ids WHERE execution_id = $1`, execution).Scan(&vmid)
	if err == nil {
		return vmid, nil
	}
	if !errors.Is(translate(err), horizon.ErrNotFound) {
		return 0, translate(err)
	}
	if inUse == nil {
		inUse = []int{}
	}
	for tries := 0; tries < 20; tries++ {
		// The lowest id ≥ 100 that neither Horizon nor the cluster uses.
		err = q.QueryRow(ctx, `WITH taken AS (
				SELECT vmid FROM vm_ids WHERE server_id = $1 UNION SELECT unnest($2::int[]))
			SELECT min(c) FROM (SELECT 100 AS c UNION SELECT vmid + 1 FROM taken) cand
			WHERE c >= 100 AND c NOT IN (SELECT vmid FROM taken)`, server, inUse).Scan(&vmid)
		if err != nil {
			return 0, translate(err)
		}
		_, err = q.Exec(ctx, `INSERT INTO vm_ids (server_id, vmid, execution_id) VALUES ($1, $2, $3) ON CONFLICT (server_id, vmid) DO NOTHING`,
			server, vmid, execution)
		if err != nil {
			return 0, translate(err)
		}
		var owner uuid.UUID
		if err := q.QueryRow(ctx, `SELECT execution_id FROM vm_ids WHERE server_id = $1 AND vmid = $2`, server, vmid).Scan(&owner); err != nil {
			return 0, translate(err)
		}
		if owner == execution {
			return vmid, nil
		}
	}
	return 0, errors.New("allocate vm id: too many concurrent allocations")
}

// VMIDRelease frees an execution's VM id once its VM is destroyed.
func VMIDRelease(ctx context.Context, q Querier, execution uuid.UUID) error {
	_, err := q.Exec(ctx, `DELETE FROM vm_ids WHERE execution_id = $1`, execution)
	return translate(err)
}
