package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/auth"
	"horizon/shared/horizon"
)

const tokenColumns = `id, user_id, name, scope, created_at, last_used_at, revoked_at`

func scanToken(row pgx.Row) (horizon.Token, error) {
	var t horizon.Token
	err := row.Scan(&t.ID, &t.UserID, &t.Name, &t.Scope, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt)
	return t, err
}

// TokenCreate stores a token's hash for user, limited to scope.
func TokenCreate(ctx context.Context, q Querier, user uuid.UUID, name string, scope auth.TokenScope, hash []byte) (horizon.Token, error) {
	t, err := scanToken(q.QueryRow(ctx, `INSERT INTO api_tokens (user_id, name, scope, hash) VALUES ($1, $2, $3, $4)
		RETURNING `+tokenColumns, user, name, scope, hash))
	return t, translate(err)
}

// Authenticated is the outcome of a successful token lookup.
type Authenticated struct {
	Principal auth.Principal
	// LastUsedAt is when the token was last marked used; the caller refreshes it when it is old.
	LastUsedAt *time.Time
}

// TokenAuthenticate finds the live (not revoked) token with hash and the principal it acts as,
// in one query. An unknown or revoked token is horizon.ErrNotFound.
func TokenAuthenticate(ctx context.Context, q Querier, hash []byte) (Authenticated, error) {
	var a Authenticated
	var role string
	err := q.QueryRow(ctx, `SELECT t.id, t.scope, t.last_used_at, u.id, u.name, u.role,
		ARRAY(SELECT m.team_id FROM memberships m WHERE m.user_id = u.id ORDER BY m.team_id)
		FROM api_tokens t JOIN users u ON u.id = t.user_id
		WHERE t.hash = $1 AND t.revoked_at IS NULL`, hash).
		Scan(&a.Principal.TokenID, &a.Principal.TokenScope, &a.LastUsedAt, &a.Principal.UserID, &a.Principal.Name, &role, &a.Principal.Teams)
	if err != nil {
		return a, translate(err)
	}
	a.Principal.Role = auth.Role(role)
	return a, nil
}

// TokenPrincipal returns the principal the live (not revoked) token id acts as, read afresh:
// stream tokens name the API token that minted them and act as it. An unknown or revoked token
// is horizon.ErrNotFound.
func TokenPrincipal(ctx context.Context, q Querier, id uuid.UUID) (auth.Principal, error) {
	var p auth.Principal
	var role string
	err := q.QueryRow(ctx, `SELECT t.id, t.scope, u.id, u.name, u.role,
		ARRAY(SELECT m.team_id FROM memberships m WHERE m.user_id = u.id ORDER BY m.team_id)
		FROM api_tokens t JOIN users u ON u.id = t.user_id
		WHERE t.id = $1 AND t.revoked_at IS NULL`, id).
		Scan(&p.TokenID, &p.TokenScope, &p.UserID, &p.Name, &role, &p.Teams)
	if err != nil {
		return p, translate(err)
	}
	p.Role = auth.Role(role)
	return p, nil
}

// TokenTouch records that a token was used.
func TokenTouch(ctx context.Context, q Querier, id uuid.UUID) error {
	_, err := q.Exec(ctx, `UPDATE api_tokens SET last_used_at = now() WHERE id = $1`, id)
	return translate(err)
}

// TokenList returns one page of tokens: the principal's own, or for admins every user's (or
// only forUser's when given).
func TokenList(ctx context.Context, q Querier, who auth.Principal, forUser *uuid.UUID, p Page) ([]horizon.Token, *uuid.UUID, error) {
	owner := forUser
	if !who.IsAdmin() {
		owner = &who.UserID
	}
	rows, err := q.Query(ctx, `SELECT `+tokenColumns+` FROM api_tokens
		WHERE ($1::uuid IS NULL OR user_id = $1) AND ($2::uuid IS NULL OR id > $2)
		ORDER BY id LIMIT $3`, owner, p.After, p.limit())
	if err != nil {
		return nil, nil, translate(err)
	}
	tokens, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.Token, error) { return scanToken(r) })
	if err != nil {
		return nil, nil, translate(err)
	}
	tokens, next := cut(tokens, p, func(t horizon.Token) uuid.UUID { return t.ID })
	return tokens, next, nil
}

// TokenGet returns a token of the principal's own (any token, for admins).
func TokenGet(ctx context.Context, q Querier, who auth.Principal, id uuid.UUID) (horizon.Token, error) {
	t, err := scanToken(q.QueryRow(ctx, `SELECT `+tokenColumns+` FROM api_tokens WHERE id = $1 AND ($2 OR user_id = $3)`,
		id, who.IsAdmin(), who.UserID))
	if err != nil {
		return t, fmt.Errorf("token %s: %w", id, translate(err))
	}
	return t, nil
}

// TokenRevoke revokes a token of the principal's own (any token, for admins). Revoking an
// already revoked token is a no-op that returns it.
func TokenRevoke(ctx context.Context, q Querier, who auth.Principal, id uuid.UUID) (horizon.Token, error) {
	t, err := scanToken(q.QueryRow(ctx, `UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, now())
		WHERE id = $1 AND ($2 OR user_id = $3) RETURNING `+tokenColumns, id, who.IsAdmin(), who.UserID))
	if err != nil {
		return t, fmt.Errorf("token %s: %w", id, translate(err))
	}
	return t, nil
}

// bootstrapLockKey serialises EnsureBootstrapAdmin across API replicas starting together.
const bootstrapLockKey = 727_400_002

// EnsureBootstrapAdmin makes sure an admin user holds a live token with hash: it creates the
// user and token when the token is unknown, and otherwise restores the token's user to admin and
// un-revokes it, since the operator asked for exactly this token to work.
func EnsureBootstrapAdmin(ctx context.Context, q Querier, hash []byte) (restored bool, err error) {
	if _, err := q.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, bootstrapLockKey); err != nil {
		return false, translate(err)
	}
	var user uuid.UUID
	var revoked *time.Time
	err = q.QueryRow(ctx, `SELECT user_id, revoked_at FROM api_tokens WHERE hash = $1`, hash).Scan(&user, &revoked)
	switch {
	case err == nil:
		if _, err := q.Exec(ctx, `UPDATE users SET role = 'admin', version = version + 1, updated_at = now() WHERE id = $1 AND role <> 'admin'`, user); err != nil {
			return false, translate(err)
		}
		if _, err := q.Exec(ctx, `UPDATE api_tokens SET revoked_at = NULL WHERE hash = $1`, hash); err != nil {
			return false, translate(err)
		}
		return revoked != nil, nil
	case err != pgx.ErrNoRows:
		return false, translate(err)
	}
	err = q.QueryRow(ctx, `INSERT INTO users (name, email, role) VALUES ('bootstrap-admin', 'bootstrap-admin@horizon.invalid', 'admin')
		ON CONFLICT (lower(email)) DO UPDATE SET role = 'admin' RETURNING id`).Scan(&user)
	if err != nil {
		return false, translate(err)
	}
	_, err = TokenCreate(ctx, q, user, "bootstrap", auth.TokenFull, hash)
	return false, err
}
