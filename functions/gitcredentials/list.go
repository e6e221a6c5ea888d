package gitcredentials

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// List returns git credentials (admin), without their secrets.
func List(d api.Deps) fiber.Handler {
	return api.ListPage(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None], page store.Page) ([]horizon.GitCredential, *uuid.UUID, error) {
		return store.GitCredentialList(ctx, d.DB, page)
	}, toGitCredential)
}
