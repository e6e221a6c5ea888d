package nagiosservers

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// List returns Nagios servers.
func List(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		page, err := api.ParsePage(c)
		if err != nil {
			return err
		}
		ns, next, err := store.NagiosServerList(c.UserContext(), d.DB, page)
		if err != nil {
			return err
		}
		return c.JSON(api.NewList(api.Map(ns, toNagiosServer), next))
	}
}
