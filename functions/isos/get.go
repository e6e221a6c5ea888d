package isos

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns an ISO: its state, outputs and artifact, its state history (newest first), its
// run in progress, and its latest run's stages and summary.
func Get(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		ctx := c.UserContext()
		iso, err := store.ISOGet(ctx, d.DB, id)
		if err != nil {
			return err
		}
		out, err := detail(ctx, d.DB, iso, api.Principal(c))
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(iso.Version))
		return c.JSON(out)
	}
}
