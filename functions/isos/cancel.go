package isos

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/events"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// Cancel interrupts the ISO's run in progress (admin): the run becomes canceling, the worker
// running a stage stops it (and the Proxmox task it waits on), stages not started are canceled,
// and the run ends canceled with the ISO failed. Nothing is rolled back. Answers 202 with the
// run.
func Cancel(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := api.RequireAdmin(c); err != nil {
			return err
		}
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		who := api.Principal(c)
		ctx := c.UserContext()
		run, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.Run, error) {
			iso, err := store.ISOGetForUpdate(ctx, tx, id)
			if err != nil {
				return horizon.Run{}, err
			}
			active, err := store.RunActiveOfISO(ctx, tx, iso.ID)
			if errors.Is(err, horizon.ErrNotFound) {
				return horizon.Run{}, problem.Conflict("No run is in progress on this ISO: there is nothing to cancel.")
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
			return active, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "iso.cancel", ObjectType: "iso",
				ObjectID: &iso.ID, Details: map[string]any{"run_id": active.ID}})
		})
		if err != nil {
			return err
		}
		d.Announce().Canceling(ctx, run.ID, events.Event{Type: events.Run, ID: run.ID, ISOID: id, RunID: run.ID, State: string(run.State)})
		c.Set(fiber.HeaderLocation, "/v1/isos/"+id.String())
		return c.Status(fiber.StatusAccepted).JSON(toRun(run, capabilities(who)))
	}
}
