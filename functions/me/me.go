// Package me serves GET /v1/me: who the caller's token acts as.
package me

import (
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
	return func(c *fiber.Ctx) error {
		who := api.Principal(c)
		u, err := store.UserGet(c.UserContext(), d.DB, who, who.UserID)
		if err != nil {
			return err
		}
		return c.JSON(Me{User: users.ToUser(u), TokenID: who.TokenID})
	}
}
