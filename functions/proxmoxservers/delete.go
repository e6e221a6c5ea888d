package proxmoxservers

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

// Delete forgets a server (admin). It touches nothing on the cluster. A server an environment
// uses is 409.
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
			if err := store.ProxmoxServerDelete(ctx, tx, id); err != nil {
				return err
			}
			return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "proxmox_server.delete", ObjectType: "proxmox_server", ObjectID: &id})
		})
		if errors.Is(err, horizon.ErrConflict) {
			return problem.Conflict("An environment uses this server; remove it from the environment first.")
		}
		if err != nil {
			return err
		}
		return c.SendStatus(fiber.StatusNoContent)
	}
}
