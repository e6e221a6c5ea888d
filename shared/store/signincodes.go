package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"horizon/shared/horizon"
)

// SignInCodeInsert stores a sign-in code's hash and the sealed API token it stands for, valid
// for ttl, and returns when it expires. It first deletes every expired code, so the table
// holds only live ones without a sweeper.
func SignInCodeInsert(ctx context.Context, q Querier, hash []byte, tokenID uuid.UUID, sealedToken []byte, ttl time.Duration) (time.Time, error) {
	if _, err := q.Exec(ctx, `DELETE FROM sign_in_codes WHERE expires_at <= now()`); err != nil {
		return time.Time{}, translate(err)
	}
	var expires time.Time
	err := q.QueryRow(ctx, `INSERT INTO sign_in_codes (hash, token_id, sealed_token, expires_at)
		VALUES ($1, $2, $3, now() + $4::interval) RETURNING expires_at`,
		hash, tokenID, sealedToken, fmt.Sprintf("%d milliseconds", ttl.Milliseconds())).Scan(&expires)
	return expires, translate(err)
}

// SignInCodeSpend uses a sign-in code up: it deletes the code, whatever its state, and returns
// the sealed token, its id and its user's when the code was still valid and its token not
// revoked. An
// unknown, used or expired code, or a revoked token's, is horizon.ErrNotFound. Two requests
// with the same code serialise on its row: one gets the token, the other ErrNotFound.
func SignInCodeSpend(ctx context.Context, q Querier, hash []byte) (sealedToken []byte, tokenID, userID uuid.UUID, err error) {
	var valid bool
	err = q.QueryRow(ctx, `DELETE FROM sign_in_codes c USING api_tokens t
		WHERE c.hash = $1 AND t.id = c.token_id
		RETURNING c.sealed_token, c.token_id, t.user_id, c.expires_at > now() AND t.revoked_at IS NULL`, hash).Scan(&sealedToken, &tokenID, &userID, &valid)
	if err != nil {
		return nil, uuid.Nil, uuid.Nil, translate(err)
	}
	if !valid {
		return nil, uuid.Nil, uuid.Nil, fmt.Errorf("sign-in code expired or its token revoked: %w", horizon.ErrNotFound)
	}
	return sealedToken, tokenID, userID, nil
}
