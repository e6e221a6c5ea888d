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
	return api.AdminEdit(d, func(ctx context.Context, tx pgx.Tx, e api.Edit[templates.UpdateRequest]) (api.Edited, error) {
		if err := e.Body.Check(); err != nil {
			return api.Edited{}, err
		}
		t, err := store.ISOTemplateUpdate(ctx, tx, e.ID, e.Body.Patch(), e.IfVersion)
		if err != nil {
			return api.Edited{}, err
		}
		return api.Edited{View: toDetail(t), Version: t.Version}, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &e.Who.UserID,
			Action: "iso_template.update", ObjectType: "iso_template", ObjectID: &t.ID, Details: map[string]any{"name": t.Name, "active": t.Active}})
	})
}
