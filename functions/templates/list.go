package templates

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// List returns templates, optionally only ?active=true or false.
func List(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		page, err := api.ParsePage(c)
		if err != nil {
			return err
		}
		active, err := api.QueryBool(c, "active")
		if err != nil {
			return err
		}
		ts, next, err := store.TemplateList(ctx, d.DB, store.TemplateFilter{Active: active}, page)
		if err != nil {
			return err
		}
		return c.JSON(api.NewList(api.Map(ts, toTemplate), next))
	})
}
