package nagiosservers

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns one Nagios server.
func Get(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := api.ParamID(c, "id")
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
