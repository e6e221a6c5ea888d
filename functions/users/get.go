package users

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns one user the caller may see.
func Get(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		u, err := store.UserGet(c.UserContext(), d.DB, api.Principal(c), id)
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(u.Version))
		return c.JSON(ToUser(u))
	}
}
