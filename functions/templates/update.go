package templates

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// UpdateRequest is the body of PATCH /v1/templates/{id}; absent fields are left as they are,
// and none may be null.
type UpdateRequest struct {
	Name        api.Field[string] `json:"name"`
	Description api.Field[string] `json:"description"`
	Active      api.Field[bool]   `json:"active"`
}

// Check names the fields of a PATCH of a template (or an ISO template) that break the rules.
func (r UpdateRequest) Check() error {
	var p horizon.Problems
	if r.Name.Given() {
		horizon.CheckName(&p, "name", r.Name.Value(), horizon.MaxNameLength)
	}
	if r.Description.Given() {
		horizon.CheckText(&p, "description", r.Description.Value(), maxDescription)
	}
	return p.Err()
}

// Patch is the store's form of the request.
func (r UpdateRequest) Patch() store.TemplatePatch {
	return store.TemplatePatch{Name: r.Name.Ptr(), Description: r.Description.Ptr(), Active: r.Active.Ptr()}
}

// Update changes a template's name, description or active flag (admin), honouring If-Match.
// Versions are immutable: a new definition is a new version.
func Update(d api.Deps) fiber.Handler {
	return api.Edit(d, func(ctx context.Context, tx pgx.Tx, r api.Req[UpdateRequest]) (api.Object, error) {
		if err := r.Body.Check(); err != nil {
			return api.Object{}, err
		}
		t, err := store.TemplateUpdate(ctx, tx, r.ID, r.Body.Patch(), r.IfVersion)
		if err != nil {
			return api.Object{}, err
		}
		return api.Object{View: toDetail(t), Version: t.Version}, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID,
			Action: "template.update", ObjectType: "template", ObjectID: &t.ID, Details: map[string]any{"name": t.Name, "active": t.Active}})
	})
}
