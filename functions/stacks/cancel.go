package stacks

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/events"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// Cancel interrupts the stack's run in progress: the run becomes canceling, the worker running
// a step interrupts Terraform (it saves its state; nothing is rolled back), steps not started
// are canceled, and the run ends canceled with the stack failed. Answers 202 with the run.
func Cancel(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := api.RequireWriter(c); err != nil {
			return err
		}
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		who := api.Principal(c)
		ctx := c.UserContext()
		var team uuid.UUID
		run, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.Run, error) {
			s, err := store.StackGetForUpdate(ctx, tx, who.Scope(), id)
			if err != nil {
				return horizon.Run{}, err
			}
			team = s.TeamID
			active, err := store.RunActive(ctx, tx, s.ID)
			if errors.Is(err, horizon.ErrNotFound) {
				return horizon.Run{}, problem.Conflict("No run is in progress on this stack: there is nothing to cancel.")
			}
			if err != nil {
				return horizon.Run{}, err
			}
			if active, err = store.RunGetForUpdate(ctx, tx, active.ID); err != nil {
				return horizon.Run{}, err
			}
			if active.State != horizon.RunCanceling {
				if active, err = store.RunSetState(ctx, tx, active.ID, horizon.RunCanceling, nil); err != nil {
					return horizon.Run{}, err
				}
			}
			return active, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "stack.cancel", ObjectType: "stack",
				ObjectID: &s.ID, TeamID: &s.TeamID, Details: map[string]any{"run_id": active.ID}})
		})
		if err != nil {
			return err
		}
		d.Announce().Canceling(ctx, run.ID, events.Event{Type: events.Run, ID: run.ID, StackID: id, TeamID: team, RunID: run.ID, State: string(run.State)})
		c.Set(fiber.HeaderLocation, "/v1/stacks/"+id.String()+"/runs/"+run.ID.String())
		return c.Status(fiber.StatusAccepted).JSON(toRun(run, capabilities(who)))
	}
}
