package proxmoxservers

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Delete forgets a server (admin). It touches nothing on the cluster. A server that an
// environment, a stack or an ISO uses is 409, naming them; removed stacks and ISOs do not count
// (they keep their history).
func Delete(d api.Deps) fiber.Handler {
	return api.Delete(d, func(ctx context.Context, tx pgx.Tx, r api.Req[api.None]) error {
		id, who := r.ID, r.Who
		if err := store.ProxmoxServerDelete(ctx, tx, id); err != nil {
			return api.InUse(err, "This Proxmox server", "it can be forgotten once none of them uses it (removed stacks and ISOs do not count).")
		}
		return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "proxmox_server.delete", ObjectType: "proxmox_server", ObjectID: &id})
	})
}
