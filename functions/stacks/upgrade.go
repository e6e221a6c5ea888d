package stacks

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/horizon"
)

// UpgradeRequest is the body of POST /v1/stacks/{id}/upgrade-template.
type UpgradeRequest struct {
	Version int `json:"version"`
	// TemplateID, when given, must be the stack's template: a stack never changes template.
	TemplateID *uuid.UUID `json:"template_id"`
	// Jobs answers jobs the version adds (and may edit others, as PATCH does); jobs left out
	// keep their executions.
	Jobs Jobs `json:"jobs"`
}

// UpgradeTemplate (admins) moves a deployed or failed stack to another version of its
// template in one run: jobs the version no longer has are destroyed first, with the code of
// the version that created them; every other execution is re-pinned to the version's commits
// and re-applied where that changes what is applied. POST /plan with template_version
// previews it. If-Match is checked when sent.
func UpgradeTemplate(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[UpgradeRequest]) error {
		l, err := load(ctx, d.DB, r.Who.Scope(), r.ID, false)
		if err != nil {
			return err
		}
		var p horizon.Problems
		switch {
		case r.Body.TemplateID != nil && *r.Body.TemplateID != l.stack.TemplateID:
			p.Add("template_id", "is another template: a stack is upgraded only to versions of its own template (%s)", l.stack.TemplateID)
		case r.Body.Version < 1:
			p.Add("version", "is required (a version number of the stack's template)")
		case r.Body.Version == l.stack.TemplateVersion:
			p.Add("version", "is the stack's version already")
		}
		if err := p.Err(); err != nil {
			return err
		}
		if r.IfVersion == 0 {
			r.IfVersion = l.stack.Version
		}
		return saveEdit(c, d, l, UpdateRequest{Confirm: true, Jobs: r.Body.Jobs}, r.IfVersion, &r.Body.Version)
	})
}
