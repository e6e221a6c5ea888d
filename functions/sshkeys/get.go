package sshkeys

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns one of the caller's keys (any key, for admins).
func Get(d api.Deps) fiber.Handler {
	return api.Get(func(ctx context.Context, r api.Req[api.None]) (api.Object, error) {
		k, err := store.SSHKeyGet(ctx, d.DB, r.Who, r.ID)
		return api.Object{View: toSSHKey(k)}, err
	})
}
