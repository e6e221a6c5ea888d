package environments

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns one environment.
func Get(d api.Deps) fiber.Handler {
	return api.Get(func(ctx context.Context, r api.Req[api.None]) (api.Object, error) {
		e, err := store.EnvironmentGet(ctx, d.DB, r.ID)
		return api.Object{View: toEnvironment(e), Version: e.Version}, err
	})
}
