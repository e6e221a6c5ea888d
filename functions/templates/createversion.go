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
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[CreateVersionRequest]) error {
		// A missing template answers 404 before any git work; one deleted meanwhile fails the
		// insert below the same way.
		if _, err := store.TemplateGet(ctx, d.DB, r.ID); err != nil {
			return err
		}
		var err error
		if r.Body.Definition, err = definitionOf(ctx, d, r.Body.Definition, r.Body.Source); err != nil {
			return err
		}
		var p horizon.Problems
		def, err := parseDefinition(&p, r.Body.Definition)
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
		v, err := newVersion(def, mods, r.Who.UserID)
		if err != nil {
			return err
		}
		v.TemplateID = r.ID
		v, err = store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.TemplateVersion, error) {
			v, err := store.TemplateVersionCreate(ctx, tx, v, r.IfVersion)
			if err != nil {
				return v, err
			}
			return v, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "template.version_create",
				ObjectType: "template", ObjectID: &r.ID, Details: map[string]any{"version": v.Number,
					"definition_hash": v.DefinitionHash, "commits": v.JobCommits}})
		})
		if err != nil {
			return err
		}
		d.Announce().Published(ctx, r.ID, v.Number)
		c.Set(fiber.HeaderLocation, versionPath(r.ID, v.Number))
		return c.Status(fiber.StatusCreated).JSON(toVersion(v))
	})
}
