package proxmoxservers

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// List returns the registered servers with their inventories.
func List(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		page, err := api.ParsePage(c)
		if err != nil {
			return err
		}
		servers, next, err := store.ProxmoxServerList(c.UserContext(), d.DB, page)
		if err != nil {
			return err
		}
		return c.JSON(api.NewList(api.Map(servers, toServer), next))
	}
}
