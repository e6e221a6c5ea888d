package networks

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

// Delete removes a network (admin) that has no addresses and is in no environment (409).
func Delete(d api.Deps) fiber.Handler {
	return api.AdminDelete(d, func(ctx context.Context, tx pgx.Tx, id uuid.UUID, who auth.Principal) error {
		if err := store.NetworkDelete(ctx, tx, id); errors.Is(err, horizon.ErrConflict) {
			return problem.Conflict("The network still has addresses or is used by an environment; remove those first.")
		} else if err != nil {
			return err
		}
		return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "network.delete", ObjectType: "network", ObjectID: &id})
	})
}
