package nagiosservers

import (
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
	return func(c *fiber.Ctx) error {
		if err := api.RequireAdmin(c); err != nil {
			return err
		}
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		err = nagios.Rediscover(c.UserContext(), d.DB, d.Box, id)
		if errors.Is(err, nagios.ErrUnavailable) || errors.Is(err, nagios.ErrUnauthorized) {
			return problem.Unavailable(err, "Nagios could not be read: %v", err)
		}
		if err != nil {
			return err
		}
		n, err := store.NagiosServerGet(c.UserContext(), d.DB, id)
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(n.Version))
		return c.JSON(toNagiosServer(n))
	}
}
