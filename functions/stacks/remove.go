package stacks

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/events"
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
		var run *horizon.Run
		var stack horizon.Stack
		err := store.WithTx(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) error {
			l, err := load(ctx, tx, r.Who.Scope(), r.ID, true)
			if err != nil {
				return err
			}
			stack = l.stack
			if err := notBusy(ctx, tx, l.stack); err != nil {
				return err
			}
			switch l.stack.State {
			case horizon.StackRemoved:
				return problem.Conflict("The stack is already removed.")
			case horizon.StackDraft:
				return removeDraft(ctx, tx, l, r.Who)
			}
			steps, err := removalSteps(ctx, tx, l)
			if err != nil {
				return err
			}
			r, err := startRun(ctx, tx, l, horizon.RunRemove, steps, r.Who)
			run = &r
			return err
		})
		if err != nil {
			return err
		}
		if run != nil {
			return accepted(c, d, *run, r.Who)
		}
		d.Notify(ctx, events.Event{Type: events.Stack, ID: stack.ID, StackID: stack.ID, TeamID: stack.TeamID, State: string(horizon.StackRemoved)})
		return c.SendStatus(fiber.StatusNoContent)
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

// removalPending refuses anything but finishing the removal (retry, remove) or force-remove on
// a stack whose removal failed: what is left of it is half destroyed.
func removalPending(s horizon.Stack) error {
	if s.RemovalFailed() {
		return problem.Conflict("The stack's removal failed: retry it to finish the removal, or force-remove it (admins).")
	}
	return nil
}
