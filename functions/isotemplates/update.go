package isotemplates

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// UpdateRequest is the body of PATCH /v1/iso-templates/{id}; absent fields are left as they
// are. The kind cannot change, and a new spec is a new version.
type UpdateRequest struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
	Active      *bool   `json:"active"`
}

// Update changes an ISO template's name, description or active flag (admin), honouring
// If-Match.
func Update(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := api.RequireAdmin(c); err != nil {
			return err
		}
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		ifVersion, err := api.IfMatch(c)
		if err != nil {
			return err
		}
		req, err := api.Decode[UpdateRequest](c)
		if err != nil {
			return err
		}
		var p horizon.Problems
		if req.Name != nil {
			horizon.CheckName(&p, "name", *req.Name, horizon.MaxNameLength)
		}
		if req.Description != nil {
			horizon.CheckText(&p, "description", *req.Description, maxDescription)
		}
		if err := p.Err(); err != nil {
			return err
		}
		who := api.Principal(c)
		t, err := store.WithTxV(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.ISOTemplate, error) {
			t, err := store.ISOTemplateUpdate(ctx, tx, id, store.TemplatePatch{Name: req.Name, Description: req.Description, Active: req.Active}, ifVersion)
			if err != nil {
				return t, err
			}
			return t, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "iso_template.update",
				ObjectType: "iso_template", ObjectID: &t.ID, Details: map[string]any{"name": t.Name, "active": t.Active}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(t.Version))
		return c.JSON(toDetail(t))
	}
}
