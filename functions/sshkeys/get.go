package sshkeys

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns one of the caller's keys (any key, for admins).
func Get(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		k, err := store.SSHKeyGet(c.UserContext(), d.DB, api.Principal(c), id)
		if err != nil {
			return err
		}
		return c.JSON(toSSHKey(k))
	}
}
