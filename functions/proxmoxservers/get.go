package proxmoxservers

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns one server with its inventory.
func Get(d api.Deps) fiber.Handler {
	return api.Get(func(ctx context.Context, r api.Req[api.None]) (api.Object, error) {
		s, err := store.ProxmoxServerGet(ctx, d.DB, r.ID)
		return api.Object{View: toServer(s), Version: s.Version}, err
	})
}
