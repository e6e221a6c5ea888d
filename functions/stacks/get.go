package stacks

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// Get returns a stack with its executions, its problems (for drafts), the run in progress and
// what can be done to it.
func Get(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		who := api.Principal(c)
		ctx := c.UserContext()
		l, err := load(ctx, d.DB, who.Scope(), id, false)
		if err != nil {
			return err
		}
		out, err := detail(ctx, d.DB, l, capabilities(who))
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(out.Version))
		return c.JSON(out)
	}
}

// detail renders a loaded stack with its run in progress and, for drafts and failed stacks,
// its problems.
func detail(ctx context.Context, q store.Querier, l *loaded, can horizon.Capabilities) (Stack, error) {
	var run *horizon.Run
	if r, err := store.RunActive(ctx, q, store.OfStack(l.stack.ID)); err == nil {
		run = &r
	} else if !errors.Is(err, horizon.ErrNotFound) {
		return Stack{}, err
	}
	var probs []horizon.FieldError
	if l.stack.State == horizon.StackDraft || l.stack.State == horizon.StackFailed {
		cat, err := loadCatalogue(ctx, q, l.stack.EnvironmentID, l.stack.TeamID)
		if err != nil {
			return Stack{}, err
		}
		if probs, err = problems(ctx, q, l.def, l.execs, cat); err != nil {
			return Stack{}, err
		}
	}
	out := toStack(l, run, probs, nil, can)
	var err error
	out.Drift, err = stackDrift(ctx, q, l.stack.ID)
	return out, err
}
