package isos

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns an ISO: its state, outputs and artifact, its state history (newest first), its
// run in progress, and its latest run's stages and summary.
func Get(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		iso, err := store.ISOGet(ctx, d.DB, r.ID)
		if err != nil {
			return err
		}
		out, err := detail(ctx, d.DB, iso, r.Who)
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(iso.Version))
		return c.JSON(out)
	})
}
