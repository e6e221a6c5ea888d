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
		req, err := api.Decode[CreateVersionRequest](c)
		if err != nil {
			return err
		}
		ctx := c.UserContext()
		t, err := store.ISOTemplateGet(ctx, d.DB, id)
		if err != nil {
			return err
		}
		who := api.Principal(c)
		v, err := newVersion(t.Kind, req.Spec, who.UserID)
		if err != nil {
			return err
		}
		v.ISOTemplateID = id
		v, err = store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.ISOTemplateVersion, error) {
			v, err := store.ISOTemplateVersionCreate(ctx, tx, v, ifVersion)
			if err != nil {
				return v, err
			}
			return v, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "iso_template.version_create",
				ObjectType: "iso_template", ObjectID: &id, Details: map[string]any{"version": v.Number, "spec_hash": v.SpecHash}})
		})
		if err != nil {
			return err
		}
		out, err := toVersion(t.Kind, v)
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderLocation, versionPath(id, v.Number))
		return c.Status(fiber.StatusCreated).JSON(out)
	}
}
