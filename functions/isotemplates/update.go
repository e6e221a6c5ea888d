package isotemplates

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/functions/templates"
	"horizon/shared/store"
)

// Update changes an ISO template's name, description or active flag (admin), honouring
// If-Match, with the body and rules of PATCH /v1/templates/{id}. The kind cannot change, and a
// new spec is a new version.
func Update(d api.Deps) fiber.Handler {
	return api.Edit(d, func(ctx context.Context, tx pgx.Tx, r api.Req[templates.UpdateRequest]) (api.Object, error) {
		if err := r.Body.Check(); err != nil {
			return api.Object{}, err
		}
		t, err := store.ISOTemplateUpdate(ctx, tx, r.ID, r.Body.Patch(), r.IfVersion)
		if err != nil {
			return api.Object{}, err
		}
		return api.Object{View: toDetail(t), Version: t.Version}, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID,
			Action: "iso_template.update", ObjectType: "iso_template", ObjectID: &t.ID, Details: map[string]any{"name": t.Name, "active": t.Active}})
	})
}
