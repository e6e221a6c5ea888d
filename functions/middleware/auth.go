package middleware

import (
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// touchEvery bounds how often a token's last_used_at is written: once a minute is enough to
// answer "is this token still used?" without a write per request.
const touchEvery = time.Minute

// tokenQueryParams are query parameters through which clients commonly try to pass tokens.
// They are refused outright: a token in a URL ends up in proxy logs and browser history.
var tokenQueryParams = []string{"access_token", "token", "api_token", "api_key"}

// StreamTokenParam is the query parameter carrying a stream token (auth.StreamSigner).
const StreamTokenParam = "stream_token"

// Auth authenticates the bearer token and stores the principal for the handlers. A stream
// token is refused here: it opens only the event streams and the log download (StreamAuth).
// Auth checks who the caller is, not what the token's scope opens: Scope, registered on each
// route, does that.
func Auth(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := refuseURLTokens(c); err != nil {
			return err
		}
		if c.Query(StreamTokenParam) != "" {
			return problem.Unauthenticated("A stream token opens only the event streams; send an API token as Authorization: Bearer hzn_….")
		}
		if err := bearer(d, c); err != nil {
			return err
		}
		return c.Next()
	}
}

// Scope refuses (403) a token whose scope does not open need (auth.TokenScope.Opens). It runs
// after Auth or StreamAuth, on every /v1 route, with the scope the route table declares: a
// route without one cannot be registered.
func Scope(need auth.TokenScope) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if p := api.Principal(c); !p.TokenScope.Opens(need) {
			return problem.Forbidden("This API token's scope is %q, which does not open this route (it needs %q).", p.TokenScope, need)
		}
		return c.Next()
	}
}

// StreamAuth authenticates an event-stream route of purpose (or the log download, which a logs
// token opens too): with a bearer token like every
// route, or — because browsers' EventSource cannot send headers — with ?stream_token=, minted
// by POST /v1/stream-tokens for this purpose (and, for a log stream, this stack: the route's
// :id). The stream token acts as the API token that minted it, whose principal is read afresh:
// a revoked API token or a user removed from a team loses access at the next connection.
func StreamAuth(d api.Deps, purpose auth.StreamPurpose) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := refuseURLTokens(c); err != nil {
			return err
		}
		tok := c.Query(StreamTokenParam)
		if tok == "" {
			if err := bearer(d, c); err != nil {
				return err
			}
			return c.Next()
		}
		if auth.WellFormed(tok) {
			return problem.Unauthenticated("API tokens are never accepted in URLs; mint a stream token with POST /v1/stream-tokens.")
		}
		claims, err := d.StreamTokens.Verify(tok, d.Now())
		switch {
		case errors.Is(err, auth.ErrStreamTokenExpired):
			return problem.Unauthenticated("The stream token has expired; mint a new one with POST /v1/stream-tokens.")
		case err != nil:
			return problem.Unauthenticated("The stream token is not valid.")
		}
		if claims.Purpose != purpose {
			return problem.Unauthenticated("This stream token opens another stream.")
		}
		if purpose.HasObject() {
			if id, err := uuid.Parse(c.Params("id")); err != nil || id != claims.Object {
				return problem.Unauthenticated("This stream token opens another log.")
			}
		}
		p, err := store.TokenPrincipal(c.UserContext(), d.DB, claims.TokenID)
		if errors.Is(err, horizon.ErrNotFound) || err == nil && p.UserID != claims.UserID {
			return problem.Unauthenticated("The API token this stream token was minted with is revoked.")
		}
		if err != nil {
			return problem.Unavailable(err, "Authentication is unavailable right now; retry shortly.")
		}
		c.Locals(api.PrincipalLocal, p)
		return c.Next()
	}
}

func refuseURLTokens(c *fiber.Ctx) error {
	for _, q := range tokenQueryParams {
		if c.Query(q) != "" {
			return problem.Unauthenticated("API tokens are never accepted in URLs; send them as Authorization: Bearer hzn_….")
		}
	}
	return nil
}

// bearer authenticates the Authorization header and stores the principal.
func bearer(d api.Deps, c *fiber.Ctx) error {
	scheme, token, found := strings.Cut(c.Get(fiber.HeaderAuthorization), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return problem.Unauthenticated("Send an API token as Authorization: Bearer hzn_….")
	}
	token = strings.TrimSpace(token)
	if !auth.WellFormed(token) {
		return problem.Unauthenticated("The bearer token is not a Horizon API token.")
	}
	ctx := c.UserContext()
	hash := auth.HashToken(token)
	if p, ok := d.Auth.Get(hash); ok {
		c.Locals(api.PrincipalLocal, p)
		return nil
	}
	a, err := store.TokenAuthenticate(ctx, d.DB, hash)
	if errors.Is(err, horizon.ErrNotFound) {
		return problem.Unauthenticated("The API token is unknown or revoked.")
	}
	if err != nil {
		return problem.Unavailable(err, "Authentication is unavailable right now; retry shortly.")
	}
	if a.LastUsedAt == nil || d.Now().Sub(*a.LastUsedAt) > touchEvery {
		if err := store.TokenTouch(ctx, d.DB, a.Principal.TokenID); err != nil {
			d.Log.WarnContext(ctx, "record token use", "token_id", a.Principal.TokenID, "error", err)
		}
	}
	d.Auth.Put(hash, a.Principal)
	c.Locals(api.PrincipalLocal, a.Principal)
	return nil
}
