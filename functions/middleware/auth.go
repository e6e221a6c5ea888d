package middleware

import (
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

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

// Auth authenticates the bearer token and stores the principal for the handlers.
func Auth(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		for _, q := range tokenQueryParams {
			if c.Query(q) != "" {
				return problem.Unauthenticated("API tokens are never accepted in URLs; send them as Authorization: Bearer hzn_….")
			}
		}
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
			return c.Next()
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
		return c.Next()
	}
}
