package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"horizon/shared/horizon"
)

// VMIDLock serialises the VM id allocations on servers until the transaction ends, so that
// each allocation's "lowest free id" sees the ids the ones before it took. Without it, deploys
// that allocate at once on one cluster all pick the same id, and all but one wait for its
// commit and try again: a hundred of them exhaust VMIDAllocate's tries. The servers are locked
// in order, so two transactions that lock the same servers never wait on each other in a
// cycle; lock them all before allocating on several.
func VMIDLock(ctx context.Context, q Querier, servers ...uuid.UUID) error {
	servers = slices.Clone(servers)
	slices.SortFunc(servers, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	for _, s := range slices.Compact(servers) {
		if _, err := q.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('vmids:' || $1::text, 0))`, s); err != nil {
			return translate(err)
		}
	}
	return nil
}

// VMIDAllocate returns the VM id of an execution on a cluster, allocating the lowest free one
// (from 100) when it has none. Ids taken in the cluster outside Horizon are passed as inUse.
// Allocations on a cluster take its VMIDLock; uniqueness per cluster is the vm_ids primary
// key, so an id an ISO reserved meanwhile fails the insert, and the next free id is tried.
func VMIDAllocate(ctx context.Context, q Querier, server, execution uuid.UUID, inUse []int) (int, error) {
	var vmid int
	err := q.QueryRow(ctx, `SELECT vmid FROM vm_ids WHERE execution_id = $1`, execution).Scan(&vmid)
	if err == nil {
		return vmid, nil
	}
	if !errors.Is(translate(err), horizon.ErrNotFound) {
		return 0, translate(err)
	}
	if err := VMIDLock(ctx, q, server); err != nil {
		return 0, err
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
		var owner *uuid.UUID // NULL when an ISO holds the id
		if err := q.QueryRow(ctx, `SELECT execution_id FROM vm_ids WHERE server_id = $1 AND vmid = $2`, server, vmid).Scan(&owner); err != nil {
			return 0, translate(err)
		}
		if owner != nil && *owner == execution {
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

// VMIDTakenError says which VM id an ISO could not reserve, and who holds it.
type VMIDTakenError struct {
	VMID int
	// Holder describes the owner: "stack <name> (job[n])" or "ISO <name>".
	Holder string
}

func (e *VMIDTakenError) Error() string {
	return fmt.Sprintf("VM id %d is reserved in this cluster by %s", e.VMID, e.Holder)
}

func (e *VMIDTakenError) Unwrap() error { return horizon.ErrConflict }

// VMIDReserveISO makes vmids exactly the VM ids an ISO holds on a cluster: ids it held and no
// longer names are released, new ones reserved. An id another ISO or an execution holds is a
// *VMIDTakenError naming it.
func VMIDReserveISO(ctx context.Context, q Querier, server, iso uuid.UUID, vmids []int) error {
	if _, err := q.Exec(ctx, `DELETE FROM vm_ids WHERE iso_id = $1 AND NOT (server_id = $2 AND vmid = ANY($3))`, iso, server, vmids); err != nil {
		return translate(err)
	}
	for _, vmid := range vmids {
		tag, err := q.Exec(ctx, `INSERT INTO vm_ids (server_id, vmid, iso_id) VALUES ($1, $2, $3) ON CONFLICT (server_id, vmid) DO NOTHING`,
			server, vmid, iso)
		if err != nil {
			return translate(err)
		}
		if tag.RowsAffected() == 1 {
			continue
		}
		var holder string
		err = q.QueryRow(ctx, `SELECT CASE
				WHEN v.iso_id = $3 THEN ''
				WHEN v.iso_id IS NOT NULL THEN 'ISO ' || i.name
				ELSE 'stack ' || s.name || ' (' || e.job || '[' || e.index || '])' END
			FROM vm_ids v LEFT JOIN isos i ON i.id = v.iso_id
				LEFT JOIN executions e ON e.id = v.execution_id LEFT JOIN stacks s ON s.id = e.stack_id
			WHERE v.server_id = $1 AND v.vmid = $2`, server, vmid, iso).Scan(&holder)
		if err != nil {
			return translate(err)
		}
		if holder != "" {
			return &VMIDTakenError{VMID: vmid, Holder: holder}
		}
	}
	return nil
}

// VMIDReleaseISO frees every VM id an ISO holds.
func VMIDReleaseISO(ctx context.Context, q Querier, iso uuid.UUID) error {
	_, err := q.Exec(ctx, `DELETE FROM vm_ids WHERE iso_id = $1`, iso)
	return translate(err)
}
