package networks

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// List returns networks.
func List(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		page, err := api.ParsePage(c)
		if err != nil {
			return err
		}
		nets, next, err := store.NetworkList(c.UserContext(), d.DB, page)
		if err != nil {
			return err
		}
		return c.JSON(api.NewList(api.Map(nets, toNetwork), next))
	}
}
