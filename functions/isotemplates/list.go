package isotemplates

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// List returns ISO templates, optionally only ?active=true or false and ?kind=iso or
// cloud-image.
func List(d api.Deps) fiber.Handler {
	return api.ListPage(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None], page store.Page) ([]horizon.ISOTemplate, *uuid.UUID, error) {
		active, err := api.QueryBool(c, "active")
		if err != nil {
			return nil, nil, err
		}
		kind := horizon.ISOKind(c.Query("kind"))
		if kind != "" && kind != horizon.ISOKindISO && kind != horizon.ISOKindCloudImage {
			return nil, nil, problem.Malformed("The query parameter kind must be iso or cloud-image.")
		}
		return store.ISOTemplateList(ctx, d.DB, store.ISOTemplateFilter{Active: active, Kind: kind}, page)
	}, toISOTemplate)
}
