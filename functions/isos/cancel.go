package isos

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

// runOwner is an ISO as the owner of runs (api.RunOwner): a catalogue object, whose runs only
// admins change.
var runOwner = api.RunOwner{
	Noun: "iso",
	Lock: func(ctx context.Context, tx pgx.Tx, _ auth.Principal, id uuid.UUID) (api.OwnerRef, error) {
		iso, err := store.ISOGetForUpdate(ctx, tx, id)
		if err != nil {
			return api.OwnerRef{}, err
		}
		return api.OwnerRef{Runs: store.OfISO(iso.ID), ID: iso.ID, ISOID: iso.ID}, nil
	},
	Location: func(iso, _ uuid.UUID) string { return "/v1/isos/" + iso.String() },
	Actions:  func(r horizon.Run, who auth.Principal) []string { return runActions(r, capabilities(who)) },
}

// Cancel interrupts the ISO's run in progress (api.CancelRun): the worker running a stage
// stops it and the Proxmox task it waits on, and the run ends canceled with the ISO failed.
func Cancel(d api.Deps) fiber.Handler { return api.CancelRun(d, runOwner) }
