package stacks

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/problem"
)

// PlanEdit answers exactly what saving an edit (the body of PATCH) would do: executions to
// create, to destroy (with the cleanup scripts that run first), to re-apply because their
// answers changed, dependents that run again, addresses attached and freed — each with why,
// in run order, and the stack version it was computed from. It changes nothing. With another
// template_version it previews upgrade-template.
func PlanEdit(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[UpdateRequest]) error {
		l, err := load(ctx, d.DB, r.Who.Scope(), r.ID, false)
		if err != nil {
			return err
		}
		if err := notBusy(ctx, d.DB, l.stack); err != nil {
			return err
		}
		if err := removalPending(l.stack); err != nil {
			return err
		}
		// Another template version previews upgrade-template.
		var upgradeTo *int
		if v := r.Body.TemplateVersion; v.Given() && v.Value() != l.stack.TemplateVersion {
			upgradeTo, r.Body.TemplateVersion = v.Ptr(), api.Field[int]{}
		}
		if err := editable(l.stack, r.Body); err != nil {
			return err
		}
		ed, err := planEdit(ctx, d.DB, d, r.Who, l, r.Body, upgradeTo)
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(l.stack.Version))
		return c.JSON(ed.plan())
	})
}

// editable refuses what no edit of a stack in its state may do.
func editable(s horizon.Stack, req UpdateRequest) error {
	var p horizon.Problems
	switch s.State {
	case horizon.StackDeployed, horizon.StackFailed:
	case horizon.StackDraft:
		return problem.Conflict("The stack is a draft: edit it with PATCH; nothing runs until it is deployed.")
	default:
		return problem.Conflict("The stack is %s: it cannot be edited.", s.State)
	}
	if req.EnvironmentID.Given() && req.EnvironmentID.Value() != s.EnvironmentID {
		p.Add("environment_id", "cannot change once the stack has been deployed")
	}
	if req.TemplateVersion.Given() && req.TemplateVersion.Value() != s.TemplateVersion {
		p.Add("template_version", "changes only through upgrade-template (admins)")
	}
	return p.Err()
}
