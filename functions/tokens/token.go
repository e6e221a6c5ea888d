// Package tokens serves /v1/tokens. A token is shown once, in the answer that mints it; only
// its hash is stored. Admins mint and revoke tokens for anyone; other users (viewers included:
// a token is how they read at all) only for themselves.
//
// A token's scope says what it may call (auth.TokenScope): "full", the default, acts as its user
// everywhere; "deploy" reads and starts or stops work on existing stacks (what a chat-ops bot
// does); "read" only reads; "prometheus" only reads GET /v1/prometheus/targets, and sees the
// machines of its user's teams (of every team when the user is an admin), so a Prometheus
// server's credential is worth nothing else. A scope never widens the user's role. The scope is
// fixed when the token is minted.
package tokens

import (
	"time"

	"github.com/google/uuid"

	"horizon/shared/auth"
	"horizon/shared/horizon"
)

// Token is a token's metadata as the API shows it.
type Token struct {
	ID         uuid.UUID       `json:"id"`
	UserID     uuid.UUID       `json:"user_id"`
	Name       string          `json:"name"`
	Scope      auth.TokenScope `json:"scope"`
	CreatedAt  time.Time       `json:"created_at"`
	LastUsedAt *time.Time      `json:"last_used_at"`
	RevokedAt  *time.Time      `json:"revoked_at"`
}

func toToken(t horizon.Token) Token {
	return Token{ID: t.ID, UserID: t.UserID, Name: t.Name, Scope: t.Scope, CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt, RevokedAt: t.RevokedAt}
}
