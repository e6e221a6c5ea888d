package gitcredentials

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns one git credential (admin), without its secrets.
func Get(d api.Deps) fiber.Handler {
	return api.Get(func(ctx context.Context, r api.Req[api.None]) (api.Object, error) {
		g, err := store.GitCredentialGet(ctx, d.DB, r.ID)
		return api.Object{View: toGitCredential(g)}, err
	})
}
