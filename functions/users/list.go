package users

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// List returns the users the caller may see.
func List(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		page, err := api.ParsePage(c)
		if err != nil {
			return err
		}
		users, next, err := store.UserList(c.UserContext(), d.DB, api.Principal(c), page)
		if err != nil {
			return err
		}
		return c.JSON(api.NewList(api.Map(users, ToUser), next))
	}
}
