// Package tokens serves /v1/tokens. A token is shown once, in the answer that mints it; only
// its hash is stored. Admins mint and revoke tokens for anyone; other users (viewers included:
// a token is how they read at all) only for themselves.
package tokens

import (
	"time"

	"github.com/google/uuid"

	"horizon/shared/horizon"
)

// Token is a token's metadata as the API shows it.
type Token struct {
	ID         uuid.UUID  `json:"id"`
	UserID     uuid.UUID  `json:"user_id"`
	Name       string     `json:"name"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

func toToken(t horizon.Token) Token {
	return Token{ID: t.ID, UserID: t.UserID, Name: t.Name, CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt, RevokedAt: t.RevokedAt}
}
