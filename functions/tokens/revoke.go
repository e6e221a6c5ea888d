package tokens

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Revoke revokes a token at once: the next request that presents it gets 401.
func Revoke(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		who := api.Principal(c)
		err = store.WithTx(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) error {
			t, err := store.TokenRevoke(ctx, tx, who, id)
			if err != nil {
				return err
			}
			return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "token.revoke",
				ObjectType: "token", ObjectID: &t.ID, Details: map[string]any{"user_id": t.UserID}})
		})
		if err != nil {
			return err
		}
		d.Auth.Forget(c.UserContext(), d.Log, &id, nil)
		return c.SendStatus(fiber.StatusNoContent)
	}
}
