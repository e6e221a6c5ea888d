package isotemplates

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// List returns ISO templates, optionally only ?active=true or false and ?kind=iso or
// cloud-image.
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
		kind := horizon.ISOKind(c.Query("kind"))
		if kind != "" && kind != horizon.ISOKindISO && kind != horizon.ISOKindCloudImage {
			return problem.Malformed("The query parameter kind must be iso or cloud-image.")
		}
		ts, next, err := store.ISOTemplateList(ctx, d.DB, store.ISOTemplateFilter{Active: active, Kind: kind}, page)
		if err != nil {
			return err
		}
		return c.JSON(api.NewList(api.Map(ts, toISOTemplate), next))
	})
}
