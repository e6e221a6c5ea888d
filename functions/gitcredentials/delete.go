package gitcredentials

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Delete removes a git credential (admin). Repositories it served are read anonymously (or with
// a shorter matching prefix's credential) from then on.
func Delete(d api.Deps) fiber.Handler {
	return api.Delete(d, func(ctx context.Context, tx pgx.Tx, r api.Req[api.None]) error {
		id, who := r.ID, r.Who
		g, err := store.GitCredentialGet(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := store.GitCredentialDelete(ctx, tx, id); err != nil {
			return err
		}
		return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "git_credential.delete",
			ObjectType: "git_credential", ObjectID: &id, Details: map[string]any{"name": g.Name, "url_prefix": g.URLPrefix}})
	})
}
