package networks

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// Delete removes a network (admin) that has no addresses and is in no environment (409).
func Delete(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := api.RequireAdmin(c); err != nil {
			return err
		}
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		who := api.Principal(c)
		err = store.WithTx(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) error {
			if err := store.NetworkDelete(ctx, tx, id); err != nil {
				return err
			}
			return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "network.delete", ObjectType: "network", ObjectID: &id})
		})
		if errors.Is(err, horizon.ErrConflict) {
			return problem.Conflict("The network still has addresses or is used by an environment; remove those first.")
		}
		if err != nil {
			return err
		}
		return c.SendStatus(fiber.StatusNoContent)
	}
}
