package proxmoxservers

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// Delete forgets a server (admin). It touches nothing on the cluster. A server an environment
// uses is 409.
func Delete(d api.Deps) fiber.Handler {
	return api.AdminDelete(d, func(ctx context.Context, tx pgx.Tx, id uuid.UUID, who auth.Principal) error {
		if err := store.ProxmoxServerDelete(ctx, tx, id); errors.Is(err, horizon.ErrConflict) {
			return problem.Conflict("An environment uses this server; remove it from the environment first.")
		} else if err != nil {
			return err
		}
		return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "proxmox_server.delete", ObjectType: "proxmox_server", ObjectID: &id})
	})
}
