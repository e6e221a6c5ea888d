package templates

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// UpdateRequest is the body of PATCH /v1/templates/{id}; absent fields are left as they are.
type UpdateRequest struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
	Active      *bool   `json:"active"`
}

// Check names the fields of a PATCH of a template (or an ISO template) that break the rules.
func (r UpdateRequest) Check() error {
	var p horizon.Problems
	if r.Name != nil {
		horizon.CheckName(&p, "name", *r.Name, horizon.MaxNameLength)
	}
	if r.Description != nil {
		horizon.CheckText(&p, "description", *r.Description, maxDescription)
	}
	return p.Err()
}

// Patch is the store's form of the request.
func (r UpdateRequest) Patch() store.TemplatePatch {
	return store.TemplatePatch{Name: r.Name, Description: r.Description, Active: r.Active}
}

// Update changes a template's name, description or active flag (admin), honouring If-Match.
// Versions are immutable: a new definition is a new version.
func Update(d api.Deps) fiber.Handler {
	return api.AdminEdit(d, func(ctx context.Context, tx pgx.Tx, e api.Edit[UpdateRequest]) (api.Edited, error) {
		if err := e.Body.Check(); err != nil {
			return api.Edited{}, err
		}
		t, err := store.TemplateUpdate(ctx, tx, e.ID, e.Body.Patch(), e.IfVersion)
		if err != nil {
			return api.Edited{}, err
		}
		return api.Edited{View: toDetail(t), Version: t.Version}, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &e.Who.UserID,
			Action: "template.update", ObjectType: "template", ObjectID: &t.ID, Details: map[string]any{"name": t.Name, "active": t.Active}})
	})
}
