package gitcredentials

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// List returns git credentials (admin), without their secrets.
func List(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := api.RequireAdmin(c); err != nil {
			return err
		}
		page, err := api.ParsePage(c)
		if err != nil {
			return err
		}
		gs, next, err := store.GitCredentialList(c.UserContext(), d.DB, page)
		if err != nil {
			return err
		}
		return c.JSON(api.NewList(api.Map(gs, toGitCredential), next))
	}
}
