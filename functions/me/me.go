// Package me serves GET /v1/me: who the caller's token acts as.
package me

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/functions/users"
	"horizon/shared/store"
)

// Me is the caller's user and the id of the token in use.
type Me struct {
	users.User
	TokenID uuid.UUID `json:"token_id"`
}

// Get returns the caller.
func Get(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		u, err := store.UserGet(ctx, d.DB, r.Who, r.Who.UserID)
		if err != nil {
			return err
		}
		return c.JSON(Me{User: users.ToUser(u), TokenID: r.Who.TokenID})
	})
}
