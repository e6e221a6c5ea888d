package nagiosservers

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Delete forgets a Nagios server (admin). It touches nothing on the server. While an
// environment uses it, or a stack's hosts are published to it (their unpublish needs it), it is
// 409: remove it from the environment, and remove or edit those stacks, first.
func Delete(d api.Deps) fiber.Handler {
	return api.Delete(d, func(ctx context.Context, tx pgx.Tx, r api.Req[api.None]) error {
		id, who := r.ID, r.Who
		if err := store.NagiosServerDelete(ctx, tx, id); err != nil {
			return api.InUse(err, "This Nagios server", "take it out of those environments and unpublish (or remove) those stacks first.")
		}
		return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "nagios_server.delete", ObjectType: "nagios_server", ObjectID: &id})
	})
}
