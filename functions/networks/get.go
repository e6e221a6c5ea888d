package networks

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns one network.
func Get(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		n, err := store.NetworkGet(c.UserContext(), d.DB, id)
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(n.Version))
		return c.JSON(toNetwork(n))
	}
}
