package templates

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// GetVersion returns one version of a template: its definition, hash, pinned commits and
// inspected modules.
func GetVersion(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		n, err := paramVersion(c)
		if err != nil {
			return err
		}
		v, err := store.TemplateVersionGet(ctx, d.DB, r.ID, n)
		if err != nil {
			return err
		}
		return c.JSON(toVersion(v))
	})
}
