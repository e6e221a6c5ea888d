package sshkeys

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Delete removes one of the caller's keys (any key, for admins). VMs already built keep it.
func Delete(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := api.RequireWriter(c); err != nil {
			return err
		}
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		who := api.Principal(c)
		err = store.WithTx(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) error {
			if err := store.SSHKeyDelete(ctx, tx, who, id); err != nil {
				return err
			}
			return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "ssh_key.delete", ObjectType: "ssh_key", ObjectID: &id})
		})
		if err != nil {
			return err
		}
		return c.SendStatus(fiber.StatusNoContent)
	}
}
