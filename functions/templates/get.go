package templates

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns a template with the summaries of its versions.
func Get(d api.Deps) fiber.Handler {
	return api.Get(func(ctx context.Context, r api.Req[api.None]) (api.Object, error) {
		t, err := store.TemplateGet(ctx, d.DB, r.ID)
		return api.Object{View: toDetail(t), Version: t.Version}, err
	})
}
