package tokens

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// List returns the caller's tokens; admins see everyone's, or one user's with ?user_id=.
func List(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		page, err := api.ParsePage(c)
		if err != nil {
			return err
		}
		forUser, err := api.QueryID(c, "user_id")
		if err != nil {
			return err
		}
		who := api.Principal(c)
		if forUser != nil && *forUser != who.UserID && !who.IsAdmin() {
			return problem.Forbidden("Only admins may list other users' tokens.")
		}
		tokens, next, err := store.TokenList(c.UserContext(), d.DB, who, forUser, page)
		if err != nil {
			return err
		}
		return c.JSON(api.NewList(api.Map(tokens, toToken), next))
	}
}

// Get returns one token of the caller's (any, for admins): its metadata, never its secret.
func Get(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		t, err := store.TokenGet(c.UserContext(), d.DB, api.Principal(c), id)
		if err != nil {
			return err
		}
		return c.JSON(toToken(t))
	}
}
