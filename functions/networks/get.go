package networks

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns one network.
func Get(d api.Deps) fiber.Handler {
	return api.Get(func(ctx context.Context, r api.Req[api.None]) (api.Object, error) {
		n, err := store.NetworkGet(ctx, d.DB, r.ID)
		return api.Object{View: toNetwork(n), Version: n.Version}, err
	})
}
