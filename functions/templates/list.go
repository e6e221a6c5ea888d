package templates

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// List returns templates, optionally only ?active=true or false.
func List(d api.Deps) fiber.Handler {
	return api.ListPage(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None], page store.Page) ([]horizon.Template, *uuid.UUID, error) {
		active, err := api.QueryBool(c, "active")
		if err != nil {
			return nil, nil, err
		}
		return store.TemplateList(ctx, d.DB, store.TemplateFilter{Active: active}, page)
	}, toTemplate)
}
