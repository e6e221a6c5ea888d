package isos

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// GetRuns returns an ISO's runs (builds, rebuilds, retries, removals), newest first: its build
// history. Each run's log is GET /v1/isos/{id}/logs?run=.
func GetRuns(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		page, err := api.ParsePage(c)
		if err != nil {
			return err
		}
		ctx := c.UserContext()
		if _, err := store.ISOGet(ctx, d.DB, id); err != nil {
			return err
		}
		runs, next, err := store.RunList(ctx, d.DB, store.OfISO(id), page)
		if err != nil {
			return err
		}
		can := capabilities(api.Principal(c))
		out := make([]Run, len(runs))
		for i, r := range runs {
			out[i] = toRun(r, can)
		}
		return c.JSON(api.NewList(out, next))
	}
}
