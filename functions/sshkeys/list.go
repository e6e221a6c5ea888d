package sshkeys

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// List returns the caller's keys; admins see everyone's, or one user's with ?user_id=.
func List(d api.Deps) fiber.Handler {
	return api.OwnerList("keys", func(ctx context.Context, who auth.Principal, forUser *uuid.UUID, page store.Page) ([]horizon.SSHKey, *uuid.UUID, error) {
		return store.SSHKeyList(ctx, d.DB, who, forUser, page)
	}, toSSHKey)
}
