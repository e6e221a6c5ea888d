package isos

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// GetRuns returns an ISO's runs (builds, rebuilds, retries, removals), newest first: its build
// history. Each run's log is GET /v1/isos/{id}/logs?run=.
func GetRuns(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		page, err := api.ParsePage(c)
		if err != nil {
			return err
		}
		if _, err := store.ISOGet(ctx, d.DB, r.ID); err != nil {
			return err
		}
		runs, next, err := store.RunList(ctx, d.DB, store.OfISO(r.ID), page)
		if err != nil {
			return err
		}
		can := capabilities(r.Who)
		out := make([]Run, len(runs))
		for i, r := range runs {
			out[i] = toRun(r, can)
		}
		return c.JSON(api.NewList(out, next))
	})
}
