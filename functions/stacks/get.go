package stacks

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// Get returns a stack with its executions, its problems (for drafts), the run in progress and
// what can be done to it.
func Get(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		out, err := view(ctx, d.DB, r.Who.Scope(), r.ID, capabilities(r.Who))
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(out.Version))
		return c.JSON(out)
	})
}

// view reads a stack the scope may see and renders it with its run in progress, its drift and,
// for drafts and failed stacks, its problems. Postgres is asked once (store.StackViewGet),
// and once more the first time the process reads the stack's template version (version); a
// draft's problems read what its answers refer to besides.
func view(ctx context.Context, q store.Querier, scope auth.Scope, id uuid.UUID, can horizon.Capabilities) (Stack, error) {
	v, err := store.StackViewGet(ctx, q, scope, id)
	if err != nil {
		return Stack{}, err
	}
	l := &loaded{stack: v.Stack, execs: v.Executions}
	if l.version, l.def, err = version(ctx, q, l.stack.TemplateID, l.stack.TemplateVersion); err != nil {
		return Stack{}, err
	}
	var probs []horizon.FieldError
	if l.stack.State == horizon.StackDraft || l.stack.State == horizon.StackFailed {
		cat, err := loadCatalogue(ctx, q, l.stack.EnvironmentID, l.stack.TeamID, l.stack.ID)
		if err != nil {
			return Stack{}, err
		}
		if probs, err = deployProblems(ctx, q, l, cat); err != nil {
			return Stack{}, err
		}
	}
	out := toStack(l, v.Active, probs, nil, can)
	out.Drift = toDrift(v)
	return out, nil
}
