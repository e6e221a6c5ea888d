package gitcredentials

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns one git credential (admin), without its secrets.
func Get(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := api.RequireAdmin(c); err != nil {
			return err
		}
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		g, err := store.GitCredentialGet(c.UserContext(), d.DB, id)
		if err != nil {
			return err
		}
		return c.JSON(toGitCredential(g))
	}
}
