package templates

import (
	"context"
	"encoding/json"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// CreateVersionRequest is the body of POST /v1/templates/{id}/versions.
type CreateVersionRequest struct {
	Definition json.RawMessage `json:"definition"`
	// Source reads the definition from git instead.
	Source *Source `json:"source"`
}

// CreateVersion adds the next immutable version of a template (admin), checked and pinned as
// Create does, and answers 201 with it. With If-Match, the template must not have changed since
// (412). The same definition may be uploaded again: the new version pins what the branches
// point to now.
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
		// A missing template answers 404 before any git work; one deleted meanwhile fails the
		// insert below the same way.
		if _, err := store.TemplateGet(ctx, d.DB, id); err != nil {
			return err
		}
		if req.Definition, err = definitionOf(ctx, d, req.Definition, req.Source); err != nil {
			return err
		}
		var p horizon.Problems
		def, err := parseDefinition(&p, req.Definition)
		if err != nil {
			return err
		}
		if err := p.Err(); err != nil {
			return err
		}
		mods, err := inspect(ctx, d, def)
		if err != nil {
			return err
		}
		who := api.Principal(c)
		v, err := newVersion(def, mods, who.UserID)
		if err != nil {
			return err
		}
		v.TemplateID = id
		v, err = store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.TemplateVersion, error) {
			v, err := store.TemplateVersionCreate(ctx, tx, v, ifVersion)
			if err != nil {
				return v, err
			}
			return v, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "template.version_create",
				ObjectType: "template", ObjectID: &id, Details: map[string]any{"version": v.Number,
					"definition_hash": v.DefinitionHash, "commits": v.JobCommits}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderLocation, versionPath(id, v.Number))
		return c.Status(fiber.StatusCreated).JSON(toVersion(v))
	}
}
