package teams

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// List returns the teams the caller may see.
func List(d api.Deps) fiber.Handler {
	return api.ListPage(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None], page store.Page) ([]horizon.Team, *uuid.UUID, error) {
		return store.TeamList(ctx, d.DB, r.Who.Scope(), page)
	}, toTeam)
}
