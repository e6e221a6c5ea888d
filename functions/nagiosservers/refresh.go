package nagiosservers

import (
	"context"

	"errors"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/nagios"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// Refresh re-discovers a server's host groups and commands (admin) and returns the server. When
// Nagios cannot be read the failure is recorded on the server (discovery_error, the last lists
// kept) and the answer is 503.
func Refresh(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		err := nagios.Rediscover(ctx, d.DB, d.Box, r.ID)
		if errors.Is(err, nagios.ErrUnavailable) || errors.Is(err, nagios.ErrUnauthorized) {
			return problem.Unavailable(err, "Nagios could not be read: %v", err)
		}
		if err != nil {
			return err
		}
		n, err := store.NagiosServerGet(ctx, d.DB, r.ID)
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(n.Version))
		return c.JSON(toNagiosServer(n))
	})
}
