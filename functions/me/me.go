// Package me serves GET /v1/me: who the caller's token acts as.
package me

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/functions/users"
	"horizon/shared/auth"
	"horizon/shared/store"
)

// Me is the caller's user, the id of the token in use and that token's scope: what it may
// call (full, deploy, read or prometheus), so that a client can tell what to offer. The console
// signs in with a token too (a sign-in code stands for one), so every caller has a scope.
type Me struct {
	users.User
	TokenID    uuid.UUID       `json:"token_id"`
	TokenScope auth.TokenScope `json:"token_scope"`
}

// Get returns the caller.
func Get(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		u, err := store.UserGet(ctx, d.DB, r.Who, r.Who.UserID)
		if err != nil {
			return err
		}
		return c.JSON(Me{User: users.ToUser(u), TokenID: r.Who.TokenID, TokenScope: r.Who.TokenScope})
	})
}
