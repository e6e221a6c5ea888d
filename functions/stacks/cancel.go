package stacks

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// runOwner is a stack as the owner of runs (api.RunOwner): writers change its runs, within their
// teams.
var runOwner = api.RunOwner{
	Noun: "stack",
	Lock: func(ctx context.Context, tx pgx.Tx, who auth.Principal, id uuid.UUID) (api.OwnerRef, error) {
		s, err := store.StackGetForUpdate(ctx, tx, who.Scope(), id)
		if err != nil {
			return api.OwnerRef{}, err
		}
		return api.OwnerRef{Runs: store.OfStack(s.ID), ID: s.ID, StackID: s.ID, TeamID: s.TeamID}, nil
	},
	Location: func(stack, run uuid.UUID) string { return "/v1/stacks/" + stack.String() + "/runs/" + run.String() },
	Actions: func(r horizon.Run, who auth.Principal) []string {
		return horizon.RunActions(r.State, capabilities(who))
	},
}

// Cancel interrupts the stack's run in progress (api.CancelRun): the worker running a step
// interrupts Terraform (it saves its state; nothing is rolled back), and the run ends canceled
// with the stack failed.
func Cancel(d api.Deps) fiber.Handler { return api.CancelRun(d, runOwner) }
