package teams

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns one team; another team's id is 404 for non-admins.
func Get(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		t, err := store.TeamGet(c.UserContext(), d.DB, api.Principal(c).Scope(), id)
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(t.Version))
		return c.JSON(toTeam(t))
	}
}
