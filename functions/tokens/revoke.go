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
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		err := store.WithTx(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) error {
			t, err := store.TokenRevoke(ctx, tx, r.Who, r.ID)
			if err != nil {
				return err
			}
			return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "token.revoke",
				ObjectType: "token", ObjectID: &t.ID, Details: map[string]any{"user_id": t.UserID}})
		})
		if err != nil {
			return err
		}
		d.Auth.Forget(ctx, d.Log, &r.ID, nil)
		return c.SendStatus(fiber.StatusNoContent)
	})
}
