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
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		l, err := load(ctx, d.DB, r.Who.Scope(), r.ID, false)
		if err != nil {
			return err
		}
		out, err := detail(ctx, d.DB, l, capabilities(r.Who))
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(out.Version))
		return c.JSON(out)
	})
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
		cat, err := loadCatalogue(ctx, q, l.stack.EnvironmentID, l.stack.TeamID, l.stack.ID)
		if err != nil {
			return Stack{}, err
		}
		if probs, err = deployProblems(ctx, q, l, cat); err != nil {
			return Stack{}, err
		}
	}
	out := toStack(l, run, probs, nil, can)
	var err error
	out.Drift, err = stackDrift(ctx, q, l.stack.ID)
	return out, err
}
