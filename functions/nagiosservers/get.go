package nagiosservers

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns one Nagios server.
func Get(d api.Deps) fiber.Handler {
	return api.Get(func(ctx context.Context, r api.Req[api.None]) (api.Object, error) {
		n, err := store.NagiosServerGet(ctx, d.DB, r.ID)
		return api.Object{View: toNagiosServer(n), Version: n.Version}, err
	})
}
