package templates

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// GetVersion returns one version of a template: its definition, hash, pinned commits and
// inspected modules.
func GetVersion(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		n, err := paramVersion(c)
		if err != nil {
			return err
		}
		v, err := store.TemplateVersionGet(c.UserContext(), d.DB, id, n)
		if err != nil {
			return err
		}
		return c.JSON(toVersion(v))
	}
}
