package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"horizon/shared/auth"
	"horizon/shared/horizon"
)

// setupLockKey serialises the making of the first admin.
const setupLockKey = 727_400_003

// SetupTokenIssue stores a one-time setup token's hash, valid for ttl, when the installation
// has no admin yet, and reports whether it did. Each API process that starts without an admin
// issues its own; the first one used makes the admin and ends them all.
func SetupTokenIssue(ctx context.Context, q Querier, hash []byte, ttl time.Duration) (bool, error) {
	tag, err := q.Exec(ctx, `INSERT INTO setup_tokens (hash, expires_at) SELECT $1, now() + $2::interval
		WHERE NOT EXISTS (SELECT 1 FROM users WHERE role = 'admin')`, hash, fmt.Sprintf("%d seconds", int(ttl.Seconds())))
	if err != nil {
		return false, translate(err)
	}
	return tag.RowsAffected() == 1, nil
}

// SetupClaim makes the first admin with a setup token: while no admin exists and the token is
// valid, it creates the admin user and an API token of theirs (its hash given), and deletes every
// setup token. Run it in a transaction. An admin that already exists is horizon.ErrConflict; an
// unknown or expired token, horizon.ErrNotFound.
func SetupClaim(ctx context.Context, q Querier, setupHash []byte, name, email string, tokenHash []byte) (uuid.UUID, error) {
	if _, err := q.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, setupLockKey); err != nil {
		return uuid.Nil, translate(err)
	}
	var admins int
	if err := q.QueryRow(ctx, `SELECT count(*) FROM users WHERE role = 'admin'`).Scan(&admins); err != nil {
		return uuid.Nil, translate(err)
	}
	if admins > 0 {
		return uuid.Nil, fmt.Errorf("setup: an admin exists: %w", horizon.ErrConflict)
	}
	tag, err := q.Exec(ctx, `DELETE FROM setup_tokens WHERE hash = $1 AND expires_at > now()`, setupHash)
	if err != nil {
		return uuid.Nil, translate(err)
	}
	if tag.RowsAffected() == 0 {
		return uuid.Nil, fmt.Errorf("setup token: %w", horizon.ErrNotFound)
	}
	if _, err := q.Exec(ctx, `DELETE FROM setup_tokens`); err != nil {
		return uuid.Nil, translate(err)
	}
	var user uuid.UUID
	if err := q.QueryRow(ctx, `INSERT INTO users (name, email, role) VALUES ($1, $2, 'admin') RETURNING id`, name, email).Scan(&user); err != nil {
		return uuid.Nil, translate(err)
	}
	if _, err := TokenCreate(ctx, q, user, "setup", auth.TokenFull, tokenHash); err != nil {
		return uuid.Nil, err
	}
	return user, nil
}
