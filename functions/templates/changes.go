package templates

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/gitcred"
	"horizon/shared/store"
	"horizon/shared/template"
)

// ChangesResponse says whether a template changed since one of its versions was made.
type ChangesResponse struct {
	TemplateID    uuid.UUID `json:"template_id"`
	Version       int       `json:"version"`
	LatestVersion int       `json:"latest_version"`
	template.Changes
}

// Changes tells whether the template changed since version v was made: the latest version's
// definition differs (by hash), or a branch of the latest definition now points to another
// commit than v pinned under that job's or action's name (template.Compare). It lists one ref
// per distinct branch and reads no tree.
func Changes(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		n, err := paramVersion(c)
		if err != nil {
			return err
		}
		pinned, err := store.TemplateVersionGet(ctx, d.DB, r.ID, n)
		if err != nil {
			return err
		}
		t, err := store.TemplateGet(ctx, d.DB, r.ID)
		if err != nil {
			return err
		}
		latest := pinned
		if t.LatestVersion != n {
			if latest, err = store.TemplateVersionGet(ctx, d.DB, r.ID, t.LatestVersion); err != nil {
				return err
			}
		}
		def, _, err := decode(latest)
		if err != nil {
			return err
		}
		creds, err := gitcred.For(ctx, d.DB, d.Box, def.Repos())
		if err != nil {
			return err
		}
		ch, err := template.Compare(ctx, def, template.Pin{Hash: pinned.DefinitionHash, JobCommits: pinned.JobCommits,
			ActionCommits: pinned.ActionCommits}, d.Git, creds)
		if err != nil {
			return err
		}
		return c.JSON(ChangesResponse{TemplateID: r.ID, Version: n, LatestVersion: t.LatestVersion, Changes: ch})
	})
}
