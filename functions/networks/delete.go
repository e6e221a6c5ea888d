package networks

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Delete removes a network (admin) that has no addresses and is in no environment (409).
func Delete(d api.Deps) fiber.Handler {
	return api.Delete(d, func(ctx context.Context, tx pgx.Tx, r api.Req[api.None]) error {
		id, who := r.ID, r.Who
		if err := store.NetworkDelete(ctx, tx, id); err != nil {
			return api.InUse(err, "This network", "take it out of those environments and delete its addresses first.")
		}
		return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "network.delete", ObjectType: "network", ObjectID: &id})
	})
}
