package isotemplates

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns an ISO template with the summaries of its versions.
func Get(d api.Deps) fiber.Handler {
	return api.Get(func(ctx context.Context, r api.Req[api.None]) (api.Object, error) {
		t, err := store.ISOTemplateGet(ctx, d.DB, r.ID)
		return api.Object{View: toDetail(t), Version: t.Version}, err
	})
}

// GetVersion returns one version of an ISO template in full.
func GetVersion(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		n, err := paramVersion(c)
		if err != nil {
			return err
		}
		t, err := store.ISOTemplateGet(ctx, d.DB, r.ID)
		if err != nil {
			return err
		}
		v, err := store.ISOTemplateVersionGet(ctx, d.DB, r.ID, n)
		if err != nil {
			return err
		}
		out, err := toVersion(t.Kind, v)
		if err != nil {
			return err
		}
		return c.JSON(out)
	})
}
