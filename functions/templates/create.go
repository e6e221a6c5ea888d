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

// CreateRequest is the body of POST /v1/templates. Name and description default to the
// definition's; active defaults to true.
type CreateRequest struct {
	Name        *string         `json:"name"`
	Description *string         `json:"description"`
	Active      *bool           `json:"active"`
	Definition  json.RawMessage `json:"definition"`
	// Source reads the definition from git instead.
	Source *Source `json:"source"`
}

// Create adds a template and its version 1 (admin): it parses and validates the definition,
// resolves every branch to a commit and inspects every module (see the package doc), and
// answers 201 with the template and its version. Every problem is reported at once (422); a
// taken name is 409; a definition over the size limit is 413.
func Create(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[CreateRequest]) error {
		var err error
		if r.Body.Definition, err = definitionOf(ctx, d, r.Body.Definition, r.Body.Source); err != nil {
			return err
		}
		var p horizon.Problems
		def, err := parseDefinition(&p, r.Body.Definition)
		if err != nil {
			return err
		}
		t := horizon.Template{Active: r.Body.Active == nil || *r.Body.Active}
		switch {
		case r.Body.Name != nil:
			t.Name = *r.Body.Name
			horizon.CheckName(&p, "name", t.Name, horizon.MaxNameLength)
		case def != nil:
			t.Name = def.Name
		}
		switch {
		case r.Body.Description != nil:
			t.Description = *r.Body.Description
			horizon.CheckText(&p, "description", t.Description, maxDescription)
		case def != nil:
			t.Description = def.Description
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
		t.CreatedBy = &r.Who.UserID
		t, err = store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.Template, error) {
			t, v, err := store.TemplateCreate(ctx, tx, t, v)
			if err != nil {
				return t, err
			}
			return t, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "template.create",
				ObjectType: "template", ObjectID: &t.ID, Details: map[string]any{"name": t.Name, "active": t.Active,
					"version": v.Number, "definition_hash": v.DefinitionHash, "commits": v.JobCommits}})
		})
		if err != nil {
			return err
		}
		d.Announce().Published(ctx, t.ID, t.LatestVersion)
		c.Set(fiber.HeaderETag, api.ETag(t.Version))
		c.Set(fiber.HeaderLocation, "/v1/templates/"+t.ID.String())
		return c.Status(fiber.StatusCreated).JSON(toDetail(t))
	})
}
