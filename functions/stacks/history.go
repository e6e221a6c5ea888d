package stacks

import (
	"context"

	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// StateChange is one entry of a stack's state history.
type StateChange struct {
	From    *string    `json:"from"`
	To      string     `json:"to"`
	At      time.Time  `json:"at"`
	ActorID *uuid.UUID `json:"actor_id"`
	// ActorName is the user's name, so that a reader needs no access to the users list.
	ActorName *string    `json:"actor_name"`
	RunID     *uuid.UUID `json:"run_id"`
	Error     *string    `json:"error"`
}

// GetHistory returns the stack's state history: who, when, and the error if any.
func GetHistory(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		page, err := api.ParsePage(c)
		if err != nil {
			return err
		}
		if _, err := store.StackGet(ctx, d.DB, r.Who.Scope(), r.ID); err != nil {
			return err
		}
		hs, next, err := store.StateHistory(ctx, d.DB, r.ID, page)
		if err != nil {
			return err
		}
		return c.JSON(api.NewList(api.Map(hs, func(h horizon.StateChange) StateChange {
			var from *string
			if h.From != nil {
				f := string(*h.From)
				from = &f
			}
			return StateChange{From: from, To: string(h.To), At: h.At, ActorID: h.ActorID, ActorName: h.ActorName, RunID: h.RunID, Error: h.Error}
		}), next))
	})
}

// GetRuns returns the stack's runs, newest first, each naming who started it.
func GetRuns(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		page, err := api.ParsePage(c)
		if err != nil {
			return err
		}
		if _, err := store.StackGet(ctx, d.DB, r.Who.Scope(), r.ID); err != nil {
			return err
		}
		kind := horizon.RunKind(c.Query("kind"))
		runs, next, err := store.RunListOfKind(ctx, d.DB, store.OfStack(r.ID), kind, page)
		if err != nil {
			return err
		}
		can := capabilities(r.Who)
		var actors []uuid.UUID
		for _, r := range runs {
			if r.ActorID != nil {
				actors = append(actors, *r.ActorID)
			}
		}
		names, err := store.UserNames(ctx, d.DB, actors)
		if err != nil {
			return err
		}
		out := make([]Run, 0, len(runs))
		for _, r := range runs {
			run, err := withAction(ctx, d, toRun(r, can))
			if err != nil {
				return err
			}
			if r.ActorID != nil {
				if name, ok := names[*r.ActorID]; ok {
					run.ActorName = &name
				}
			}
			out = append(out, run)
		}
		return c.JSON(api.NewList(out, next))
	})
}
