package teams

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// List returns the teams the caller may see.
func List(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		page, err := api.ParsePage(c)
		if err != nil {
			return err
		}
		teams, next, err := store.TeamList(c.UserContext(), d.DB, api.Principal(c).Scope(), page)
		if err != nil {
			return err
		}
		return c.JSON(api.NewList(api.Map(teams, toTeam), next))
	}
}
