package environments

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns one environment.
func Get(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		e, err := store.EnvironmentGet(c.UserContext(), d.DB, id)
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(e.Version))
		return c.JSON(toEnvironment(e))
	}
}
