package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/horizon"
)

const isoColumns = `id, name, iso_template_id, iso_template_version, kind, server_id, node, storage, artifact_storage, state,
	config_hash, built_hash, outputs, version, created_by, created_at, updated_at`

func scanISO(row pgx.Row) (horizon.ISO, error) {
	var i horizon.ISO
	var server *uuid.UUID // NULL for a removed ISO whose server was forgotten since
	err := row.Scan(&i.ID, &i.Name, &i.ISOTemplateID, &i.ISOTemplateVersion, &i.Kind, &server, &i.Node, &i.Storage,
		&i.ArtifactStorage, &i.State, &i.ConfigHash, &i.BuiltHash, &i.Outputs, &i.Version, &i.CreatedBy, &i.CreatedAt, &i.UpdatedAt)
	if server != nil {
		i.ServerID = *server
	}
	return i, err
}

// ISOInsert inserts an ISO in state building and records that first state in its history.
func ISOInsert(ctx context.Context, q Querier, i horizon.ISO) (horizon.ISO, error) {
	out, err := scanISO(q.QueryRow(ctx, `INSERT INTO isos (name, iso_template_id, iso_template_version, kind, server_id, node, storage,
		artifact_storage, config_hash, created_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING `+isoColumns,
		i.Name, i.ISOTemplateID, i.ISOTemplateVersion, i.Kind, i.ServerID, i.Node, i.Storage, i.ArtifactStorage, i.ConfigHash, i.CreatedBy))
	return out, translate(err)
}

// ISOGet returns an ISO. ISOs are catalogue objects every authenticated user reads.
func ISOGet(ctx context.Context, q Querier, id uuid.UUID) (horizon.ISO, error) {
	i, err := scanISO(q.QueryRow(ctx, `SELECT `+isoColumns+` FROM isos WHERE id = $1`, id))
	if err != nil {
		return i, fmt.Errorf("ISO %s: %w", id, translate(err))
	}
	return i, nil
}

// ISOGetForUpdate returns an ISO locked until the transaction ends.
func ISOGetForUpdate(ctx context.Context, q Querier, id uuid.UUID) (horizon.ISO, error) {
	i, err := scanISO(q.QueryRow(ctx, `SELECT `+isoColumns+` FROM isos WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return i, fmt.Errorf("ISO %s: %w", id, translate(err))
	}
	return i, nil
}

// ISOFilter narrows ISOList; zero fields do not filter. Removed ISOs are listed only when
// State asks for them.
type ISOFilter struct {
	State      horizon.ISOState
	ServerID   *uuid.UUID
	TemplateID *uuid.UUID
	// AvailableOn, with ServerID, keeps the built ISOs a machine on this node can use: on the
	// same cluster, with what they built on a shared storage or on this very node, or an
	// installer image the node has a directory storage for iso content to copy it to.
	AvailableOn string
}

// ISOList returns one page of ISOs, oldest first.
func ISOList(ctx context.Context, q Querier, f ISOFilter, p Page) ([]horizon.ISO, *uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT `+prefixed("i.", isoColumns)+` FROM isos i
		WHERE ($1 = '' AND i.state <> 'removed' OR i.state = $1)
		AND ($2::uuid IS NULL OR i.server_id = $2) AND ($3::uuid IS NULL OR i.iso_template_id = $3)
		AND ($4 = '' OR i.state = 'built' AND (i.node = $4 OR EXISTS (SELECT 1 FROM proxmox_storages s
			WHERE s.server_id = i.server_id AND s.name = i.artifact_storage AND s.shared AND $4 = ANY(s.nodes))
			OR i.kind = 'iso' AND EXISTS (SELECT 1 FROM proxmox_storages s
			WHERE s.server_id = i.server_id AND $4 = ANY(s.nodes) AND s.path <> '' AND 'iso' = ANY(s.content))))
		AND ($5::uuid IS NULL OR i.id > $5) ORDER BY i.id LIMIT $6`,
		string(f.State), f.ServerID, f.TemplateID, f.AvailableOn, p.After, p.limit())
	if err != nil {
		return nil, nil, translate(err)
	}
	is, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.ISO, error) { return scanISO(r) })
	if err != nil {
		return nil, nil, translate(err)
	}
	is, next := cut(is, p, func(i horizon.ISO) uuid.UUID { return i.ID })
	return is, next, nil
}

// ISOPatch is what an edit changes; nil fields are left as they are.
type ISOPatch struct {
	Name            *string
	Version         *int
	Storage         *string
	ArtifactStorage *string
	ConfigHash      *string
}

// ISOUpdate applies a patch if the ISO's version is still ifVersion (0 skips the check).
func ISOUpdate(ctx context.Context, q Querier, id uuid.UUID, p ISOPatch, ifVersion int64) (horizon.ISO, error) {
	i, err := scanISO(q.QueryRow(ctx, `UPDATE isos SET name = COALESCE($2, name), iso_template_version = COALESCE($3, iso_template_version),
		storage = COALESCE($4, storage), artifact_storage = COALESCE($5, artifact_storage), config_hash = COALESCE($6, config_hash),
		version = version + 1, updated_at = now()
		WHERE id = $1 AND ($7 = 0 OR version = $7) RETURNING `+isoColumns,
		id, p.Name, p.Version, p.Storage, p.ArtifactStorage, p.ConfigHash, ifVersion))
	if err != nil {
		return i, staleOrMissing(ctx, q, err, "isos", id)
	}
	return i, nil
}

// ISOSetState moves an ISO to c.To and records the change in its history (c.From is filled).
// Reaching built records the configuration that was built (built_hash).
func ISOSetState(ctx context.Context, q Querier, c horizon.ISOStateChange) (horizon.ISO, error) {
	var from horizon.ISOState
	if err := q.QueryRow(ctx, `SELECT state FROM isos WHERE id = $1`, c.ISOID).Scan(&from); err != nil {
		return horizon.ISO{}, fmt.Errorf("ISO %s: %w", c.ISOID, translate(err))
	}
	i, err := scanISO(q.QueryRow(ctx, `UPDATE isos SET state = $2, version = version + 1, updated_at = now(),
		built_hash = CASE WHEN $2 = 'built' THEN config_hash ELSE built_hash END
		WHERE id = $1 RETURNING `+isoColumns, c.ISOID, c.To))
	if err != nil {
		return i, translate(err)
	}
	if from == c.To {
		return i, nil
	}
	c.From = &from
	return i, ISOStateRecord(ctx, q, c)
}

// ISOStateRecord appends to an ISO's state history.
func ISOStateRecord(ctx context.Context, q Querier, c horizon.ISOStateChange) error {
	_, err := q.Exec(ctx, `INSERT INTO iso_state_history (iso_id, run_id, from_state, to_state, actor_id, error)
		VALUES ($1, $2, $3, $4, $5, $6)`, c.ISOID, c.RunID, c.From, c.To, c.ActorID, c.Error)
	return translate(err)
}

// ISOHistory returns one page of an ISO's state changes, newest first.
func ISOHistory(ctx context.Context, q Querier, iso uuid.UUID, p Page) ([]horizon.ISOStateChange, *uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT id, iso_id, run_id, from_state, to_state, actor_id, error, at FROM iso_state_history
		WHERE iso_id = $1 AND ($2::uuid IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`, iso, p.After, p.limit())
	if err != nil {
		return nil, nil, translate(err)
	}
	hs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.ISOStateChange, error) {
		var c horizon.ISOStateChange
		err := r.Scan(&c.ID, &c.ISOID, &c.RunID, &c.From, &c.To, &c.ActorID, &c.Error, &c.At)
		return c, err
	})
	if err != nil {
		return nil, nil, translate(err)
	}
	hs, next := cut(hs, p, func(c horizon.ISOStateChange) uuid.UUID { return c.ID })
	return hs, next, nil
}

// ISOOutputSet sets one output of an ISO: key is "image" or "vm" (value nil removes it), or,
// with clone set, the clone of that name under "clones".
func ISOOutputSet(ctx context.Context, q Querier, iso uuid.UUID, key, clone string, value any) error {
	var err error
	switch {
	case clone != "" && value == nil:
		_, err = q.Exec(ctx, `UPDATE isos SET outputs = outputs #- ARRAY['clones', $2] WHERE id = $1`, iso, clone)
	case clone != "":
		_, err = q.Exec(ctx, `UPDATE isos SET outputs = outputs ||
			jsonb_build_object('clones', COALESCE(outputs->'clones', '{}') || jsonb_build_object($2::text, $3::jsonb)) WHERE id = $1`,
			iso, clone, value)
	case value == nil:
		_, err = q.Exec(ctx, `UPDATE isos SET outputs = outputs - $2::text WHERE id = $1`, iso, key)
	default:
		_, err = q.Exec(ctx, `UPDATE isos SET outputs = outputs || jsonb_build_object($2::text, $3::jsonb) WHERE id = $1`, iso, key, value)
	}
	return translate(err)
}

// ISOUser is a stack execution that uses an ISO.
type ISOUser struct {
	StackID   uuid.UUID
	StackName string
	TeamID    uuid.UUID
	Job       string
	Index     int
}

// ISOUsers returns the executions of stacks not removed that use an ISO, by stack name.
func ISOUsers(ctx context.Context, q Querier, iso uuid.UUID) ([]ISOUser, error) {
	rows, err := q.Query(ctx, `SELECT s.id, s.name, s.team_id, e.job, e.index FROM executions e JOIN stacks s ON s.id = e.stack_id
		WHERE e.config ? 'iso_id' AND e.config->>'iso_id' = $1::text AND e.state <> 'removed' AND s.state <> 'removed'
		ORDER BY s.name, e.job, e.index`, iso)
	if err != nil {
		return nil, translate(err)
	}
	us, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ISOUser, error) {
		var u ISOUser
		err := r.Scan(&u.StackID, &u.StackName, &u.TeamID, &u.Job, &u.Index)
		return u, err
	})
	return us, translate(err)
}

// ISOsWithImage returns the ISOs of a server, other than except and not removed, whose
// outputs record the image volid (a download another ISO reuses).
func ISOsWithImage(ctx context.Context, q Querier, server uuid.UUID, volid string, except uuid.UUID) ([]horizon.ISO, error) {
	rows, err := q.Query(ctx, `SELECT `+isoColumns+` FROM isos WHERE server_id = $1 AND id <> $3 AND state <> 'removed'
		AND outputs->'image'->>'volid' = $2 ORDER BY id`, server, volid, except)
	if err != nil {
		return nil, translate(err)
	}
	is, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.ISO, error) { return scanISO(r) })
	return is, translate(err)
}

// ISOCopyGet returns the ISO's copy on node, or horizon.ErrNotFound.
func ISOCopyGet(ctx context.Context, q Querier, iso uuid.UUID, node string) (horizon.ISOCopy, error) {
	var c horizon.ISOCopy
	err := q.QueryRow(ctx, `SELECT iso_id, node, storage, volid, checksum, checksum_algorithm, size, copied_at
		FROM iso_copies WHERE iso_id = $1 AND node = $2`, iso, node).
		Scan(&c.ISOID, &c.Node, &c.Storage, &c.VolID, &c.Checksum, &c.ChecksumAlgorithm, &c.Size, &c.CopiedAt)
	return c, translate(err)
}

// ISOCopyPut records a copy, replacing the node's previous one.
func ISOCopyPut(ctx context.Context, q Querier, c horizon.ISOCopy) error {
	_, err := q.Exec(ctx, `INSERT INTO iso_copies (iso_id, node, storage, volid, checksum, checksum_algorithm, size)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (iso_id, node) DO UPDATE SET storage = EXCLUDED.storage, volid = EXCLUDED.volid, checksum = EXCLUDED.checksum,
		checksum_algorithm = EXCLUDED.checksum_algorithm, size = EXCLUDED.size, copied_at = now()`,
		c.ISOID, c.Node, c.Storage, c.VolID, c.Checksum, c.ChecksumAlgorithm, c.Size)
	return translate(err)
}

// ISOCopies lists the ISO's copies by node.
func ISOCopies(ctx context.Context, q Querier, iso uuid.UUID) ([]horizon.ISOCopy, error) {
	rows, err := q.Query(ctx, `SELECT iso_id, node, storage, volid, checksum, checksum_algorithm, size, copied_at
		FROM iso_copies WHERE iso_id = $1 ORDER BY node`, iso)
	if err != nil {
		return nil, translate(err)
	}
	cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.ISOCopy, error) {
		var c horizon.ISOCopy
		return c, r.Scan(&c.ISOID, &c.Node, &c.Storage, &c.VolID, &c.Checksum, &c.ChecksumAlgorithm, &c.Size, &c.CopiedAt)
	})
	return cs, translate(err)
}

// ISOCopyDelete forgets the ISO's copy on node.
func ISOCopyDelete(ctx context.Context, q Querier, iso uuid.UUID, node string) error {
	_, err := q.Exec(ctx, `DELETE FROM iso_copies WHERE iso_id = $1 AND node = $2`, iso, node)
	return translate(err)
}
