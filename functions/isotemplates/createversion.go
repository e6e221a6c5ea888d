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

// CreateVersionRequest is the body of POST /v1/iso-templates/{id}/versions.
type CreateVersionRequest struct {
	Spec json.RawMessage `json:"spec"`
}

// CreateVersion adds the next immutable version of an ISO template (admin), its spec of the
// template's kind, and answers 201 with it. With If-Match the template must not have changed
// since (412).
func CreateVersion(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[CreateVersionRequest]) error {
		t, err := store.ISOTemplateGet(ctx, d.DB, r.ID)
		if err != nil {
			return err
		}
		v, err := newVersion(t.Kind, r.Body.Spec, r.Who.UserID)
		if err != nil {
			return err
		}
		v.ISOTemplateID = r.ID
		v, err = store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.ISOTemplateVersion, error) {
			v, err := store.ISOTemplateVersionCreate(ctx, tx, v, r.IfVersion)
			if err != nil {
				return v, err
			}
			return v, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "iso_template.version_create",
				ObjectType: "iso_template", ObjectID: &r.ID, Details: map[string]any{"version": v.Number, "spec_hash": v.SpecHash}})
		})
		if err != nil {
			return err
		}
		out, err := toVersion(t.Kind, v)
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderLocation, versionPath(r.ID, v.Number))
		return c.Status(fiber.StatusCreated).JSON(out)
	})
}
