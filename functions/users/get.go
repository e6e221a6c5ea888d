package users

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns one user the caller may see.
func Get(d api.Deps) fiber.Handler {
	return api.Get(func(ctx context.Context, r api.Req[api.None]) (api.Object, error) {
		u, err := store.UserGet(ctx, d.DB, r.Who, r.ID)
		return api.Object{View: ToUser(u), Version: u.Version}, err
	})
}
