package stacks

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// Remove removes a stack. A draft has built nothing: it is removed at once (204). Otherwise
// this starts the remove run (202): its terraform action instances undone, newest first, then
// every execution destroyed in reverse phase order, cleanup scripts first, addresses and VM ids freed, Terraform state and logs deleted; the stack ends
// removed and its activity record stays. A removal that fails leaves the stack failed: retry
// retries the removal.
func Remove(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		return startRunOn(c, d, r.Who, r.ID, finishesRemoval, func(ctx context.Context, tx pgx.Tx, l *loaded) (launch, error) {
			switch l.stack.State {
			case horizon.StackRemoved:
				return launch{}, problem.Conflict("The stack is already removed.")
			case horizon.StackDraft:
				return launch{}, removeDraft(ctx, tx, l, r.Who)
			}
			steps, err := removalSteps(ctx, tx, l)
			return launch{kind: horizon.RunRemove, steps: steps}, err
		})
	})
}

// removeDraft removes a stack that never deployed: its executions hold nothing.
func removeDraft(ctx context.Context, tx pgx.Tx, l *loaded, who auth.Principal) error {
	if err := store.ExecutionDeleteDrafts(ctx, tx, l.stack.ID); err != nil {
		return err
	}
	if _, err := store.StackSetState(ctx, tx, horizon.StateChange{StackID: l.stack.ID, To: horizon.StackRemoved, ActorID: &who.UserID}); err != nil {
		return err
	}
	return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "stack.remove", ObjectType: "stack",
		ObjectID: &l.stack.ID, TeamID: &l.stack.TeamID, Details: map[string]any{"draft": true}})
}
