package live

import (
	"context"

	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// TokenRequest is the body of POST /v1/stream-tokens.
type TokenRequest struct {
	// Purpose is "events" (GET /v1/events), "logs" (GET /v1/stacks/{stack_id}/logs/stream and
	// the download …/logs) or "iso_logs" (GET /v1/isos/{iso_id}/logs/stream and …/logs).
	Purpose auth.StreamPurpose `json:"purpose"`
	// StackID is the stack whose log a "logs" token opens; absent otherwise.
	StackID *uuid.UUID `json:"stack_id"`
	// ISOID is the ISO whose build log an "iso_logs" token opens; absent otherwise.
	ISOID *uuid.UUID `json:"iso_id"`
}

// Token is a minted stream token.
type Token struct {
	Token     string             `json:"token"`
	Purpose   auth.StreamPurpose `json:"purpose"`
	StackID   *uuid.UUID         `json:"stack_id,omitempty"`
	ISOID     *uuid.UUID         `json:"iso_id,omitempty"`
	ExpiresAt time.Time          `json:"expires_at"`
}

// CreateToken mints a stream token for the caller: pass it as ?stream_token= to open the stream
// of its purpose from a browser. It stores nothing; any viewer may mint one.
func CreateToken(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[TokenRequest]) error {
		var p horizon.Problems
		switch {
		case !r.Body.Purpose.Valid():
			p.Add("purpose", "must be events, logs or iso_logs")
		case r.Body.Purpose == auth.StreamLogs && r.Body.StackID == nil:
			p.Add("stack_id", "is required for a logs token")
		case r.Body.Purpose == auth.StreamISOLogs && r.Body.ISOID == nil:
			p.Add("iso_id", "is required for an iso_logs token")
		}
		if r.Body.StackID != nil && r.Body.Purpose != auth.StreamLogs {
			p.Add("stack_id", "is only for a logs token (filter the events with ?stack= instead)")
		}
		if r.Body.ISOID != nil && r.Body.Purpose != auth.StreamISOLogs {
			p.Add("iso_id", "is only for an iso_logs token")
		}
		if err := p.Err(); err != nil {
			return err
		}
		claims := auth.StreamClaims{Purpose: r.Body.Purpose, UserID: r.Who.UserID, TokenID: r.Who.TokenID,
			Expires: d.Now().Add(min(d.StreamTokenTTL, auth.MaxStreamTokenTTL)).Truncate(time.Second)}
		if r.Body.StackID != nil {
			_, err := store.StackGet(ctx, d.DB, r.Who.Scope(), *r.Body.StackID)
			if errors.Is(err, horizon.ErrNotFound) {
				return horizon.Invalid("stack_id", "is not a stack you may see")
			}
			if err != nil {
				return err
			}
			claims.Object = *r.Body.StackID
		}
		if r.Body.ISOID != nil {
			// ISOs are catalogue objects every user may read.
			_, err := store.ISOGet(ctx, d.DB, *r.Body.ISOID)
			if errors.Is(err, horizon.ErrNotFound) {
				return horizon.Invalid("iso_id", "is not an ISO")
			}
			if err != nil {
				return err
			}
			claims.Object = *r.Body.ISOID
		}
		c.Set(fiber.HeaderCacheControl, "no-store")
		return c.JSON(Token{Token: d.StreamTokens.Sign(claims), Purpose: claims.Purpose, StackID: r.Body.StackID, ISOID: r.Body.ISOID, ExpiresAt: claims.Expires.UTC()})
	})
}
