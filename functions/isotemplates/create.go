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
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[CreateRequest]) error {
		var p horizon.Problems
		horizon.CheckName(&p, "name", r.Body.Name, horizon.MaxNameLength)
		horizon.CheckText(&p, "description", r.Body.Description, maxDescription)
		kind := horizon.ISOKind(r.Body.Kind)
		var v horizon.ISOTemplateVersion
		var err error
		if kind != horizon.ISOKindISO && kind != horizon.ISOKindCloudImage {
			p.Add("kind", "must be iso or cloud-image")
		} else if v, err = newVersion(kind, r.Body.Spec, r.Who.UserID); err != nil && !p.Merge("", err) {
			return err
		}
		if err := p.Err(); err != nil {
			return err
		}
		t := horizon.ISOTemplate{Name: r.Body.Name, Description: r.Body.Description, Kind: kind, Active: r.Body.Active == nil || *r.Body.Active,
			CreatedBy: &r.Who.UserID}
		t, err = store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.ISOTemplate, error) {
			t, err := store.ISOTemplateCreate(ctx, tx, t, v)
			if err != nil {
				return t, err
			}
			return t, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "iso_template.create",
				ObjectType: "iso_template", ObjectID: &t.ID, Details: map[string]any{"name": t.Name, "kind": t.Kind, "version": 1, "spec_hash": v.SpecHash}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(t.Version))
		c.Set(fiber.HeaderLocation, "/v1/iso-templates/"+t.ID.String())
		return c.Status(fiber.StatusCreated).JSON(toDetail(t))
	})
}
