package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/auth"
	"horizon/shared/horizon"
)

const sshKeyColumns = `id, user_id, name, public_key, key_type, bits, fingerprint, created_at`

func scanSSHKey(row pgx.Row) (horizon.SSHKey, error) {
	var k horizon.SSHKey
	err := row.Scan(&k.ID, &k.UserID, &k.Name, &k.PublicKey, &k.Type, &k.Bits, &k.Fingerprint, &k.CreatedAt)
	return k, err
}

// SSHKeyCreate stores a user's public key. The same name or the same key twice for one user is
// a *horizon.ConflictError.
func SSHKeyCreate(ctx context.Context, q Querier, k horizon.SSHKey) (horizon.SSHKey, error) {
	out, err := scanSSHKey(q.QueryRow(ctx, `INSERT INTO ssh_keys (user_id, name, public_key, key_type, bits, fingerprint)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+sshKeyColumns, k.UserID, k.Name, k.PublicKey, k.Type, k.Bits, k.Fingerprint))
	return out, translate(err)
}

// SSHKeyGet returns a key the principal may see: their own, or any for admins.
func SSHKeyGet(ctx context.Context, q Querier, who auth.Principal, id uuid.UUID) (horizon.SSHKey, error) {
	k, err := scanSSHKey(q.QueryRow(ctx, `SELECT `+sshKeyColumns+` FROM ssh_keys WHERE id = $1 AND ($2 OR user_id = $3)`,
		id, who.IsAdmin(), who.UserID))
	if err != nil {
		return k, fmt.Errorf("ssh key %s: %w", id, translate(err))
	}
	return k, nil
}

// SSHKeyForTeam returns a key a stack of the team may install on its machines: one whose
// owner is a member of the team, or an admin. Any other key — deleted, or another team's — is
// horizon.ErrNotFound: to the team it does not exist, and saying more would tell one team
// which key ids another has.
func SSHKeyForTeam(ctx context.Context, q Querier, id, team uuid.UUID) (horizon.SSHKey, error) {
	k, err := scanSSHKey(q.QueryRow(ctx, `SELECT `+prefixed("k.", sshKeyColumns)+` FROM ssh_keys k JOIN users u ON u.id = k.user_id
		WHERE k.id = $1 AND (u.role = 'admin' OR EXISTS (SELECT 1 FROM memberships m WHERE m.user_id = k.user_id AND m.team_id = $2))`,
		id, team))
	if err != nil {
		return k, fmt.Errorf("ssh key %s: %w", id, translate(err))
	}
	return k, nil
}

// SSHKeyList returns one page of keys: the principal's own, or for admins everyone's (or only
// forUser's when given).
func SSHKeyList(ctx context.Context, q Querier, who auth.Principal, forUser *uuid.UUID, p Page) ([]horizon.SSHKey, *uuid.UUID, error) {
	owner := forUser
	if !who.IsAdmin() {
		owner = &who.UserID
	}
	rows, err := q.Query(ctx, `SELECT `+sshKeyColumns+` FROM ssh_keys
		WHERE ($1::uuid IS NULL OR user_id = $1) AND ($2::uuid IS NULL OR id > $2) ORDER BY id LIMIT $3`,
		owner, p.After, p.limit())
	if err != nil {
		return nil, nil, translate(err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.SSHKey, error) { return scanSSHKey(r) })
	if err != nil {
		return nil, nil, translate(err)
	}
	keys, next := cut(keys, p, func(k horizon.SSHKey) uuid.UUID { return k.ID })
	return keys, next, nil
}

// SSHKeyDelete deletes a key the principal owns (any key, for admins).
func SSHKeyDelete(ctx context.Context, q Querier, who auth.Principal, id uuid.UUID) error {
	tag, err := q.Exec(ctx, `DELETE FROM ssh_keys WHERE id = $1 AND ($2 OR user_id = $3)`, id, who.IsAdmin(), who.UserID)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("ssh key %s: %w", id, horizon.ErrNotFound)
	}
	return nil
}
