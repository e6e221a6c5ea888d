package teams

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns one team; another team's id is 404 for non-admins.
func Get(d api.Deps) fiber.Handler {
	return api.Get(func(ctx context.Context, r api.Req[api.None]) (api.Object, error) {
		t, err := store.TeamGet(ctx, d.DB, r.Who.Scope(), r.ID)
		return api.Object{View: toTeam(t), Version: t.Version}, err
	})
}
