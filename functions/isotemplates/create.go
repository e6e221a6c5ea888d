package isotemplates

import (
	"context"
	"encoding/json"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// CreateRequest is the body of POST /v1/iso-templates.
type CreateRequest struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Kind        string          `json:"kind"`
	Active      *bool           `json:"active"`
	Spec        json.RawMessage `json:"spec"`
}

// Create adds an ISO template and its version 1 (admin) and answers 201 with it. Every problem
// of the request and its spec is reported at once (422); a taken name is 409.
func Create(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := api.RequireAdmin(c); err != nil {
			return err
		}
		req, err := api.Decode[CreateRequest](c)
		if err != nil {
			return err
		}
		var p horizon.Problems
		horizon.CheckName(&p, "name", req.Name, horizon.MaxNameLength)
		horizon.CheckText(&p, "description", req.Description, maxDescription)
		kind := horizon.ISOKind(req.Kind)
		var v horizon.ISOTemplateVersion
		who := api.Principal(c)
		if kind != horizon.ISOKindISO && kind != horizon.ISOKindCloudImage {
			p.Add("kind", "must be iso or cloud-image")
		} else if v, err = newVersion(kind, req.Spec, who.UserID); err != nil && !p.Merge("", err) {
			return err
		}
		if err := p.Err(); err != nil {
			return err
		}
		t := horizon.ISOTemplate{Name: req.Name, Description: req.Description, Kind: kind, Active: req.Active == nil || *req.Active,
			CreatedBy: &who.UserID}
		t, err = store.WithTxV(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.ISOTemplate, error) {
			t, err := store.ISOTemplateCreate(ctx, tx, t, v)
			if err != nil {
				return t, err
			}
			return t, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "iso_template.create",
				ObjectType: "iso_template", ObjectID: &t.ID, Details: map[string]any{"name": t.Name, "kind": t.Kind, "version": 1, "spec_hash": v.SpecHash}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(t.Version))
		c.Set(fiber.HeaderLocation, "/v1/iso-templates/"+t.ID.String())
		return c.Status(fiber.StatusCreated).JSON(toDetail(t))
	}
}
