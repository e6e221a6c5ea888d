package nagiosservers

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// List returns Nagios servers.
func List(d api.Deps) fiber.Handler {
	return api.ListPage(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None], page store.Page) ([]horizon.NagiosServer, *uuid.UUID, error) {
		return store.NagiosServerList(ctx, d.DB, page)
	}, toNagiosServer)
}
