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
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		err := store.WithTx(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) error {
			if err := store.SSHKeyDelete(ctx, tx, r.Who, r.ID); err != nil {
				return err
			}
			return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "ssh_key.delete", ObjectType: "ssh_key", ObjectID: &r.ID})
		})
		if err != nil {
			return err
		}
		return c.SendStatus(fiber.StatusNoContent)
	})
}
