package tokens

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// List returns the caller's tokens; admins see everyone's, or one user's with ?user_id=.
func List(d api.Deps) fiber.Handler {
	return api.OwnerList("tokens", func(ctx context.Context, who auth.Principal, forUser *uuid.UUID, page store.Page) ([]horizon.Token, *uuid.UUID, error) {
		return store.TokenList(ctx, d.DB, who, forUser, page)
	}, toToken)
}

// Get returns one token of the caller's (any, for admins): its metadata, never its secret.
func Get(d api.Deps) fiber.Handler {
	return api.Get(func(ctx context.Context, r api.Req[api.None]) (api.Object, error) {
		t, err := store.TokenGet(ctx, d.DB, r.Who, r.ID)
		return api.Object{View: toToken(t)}, err
	})
}
