package isos

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// RetryRequest is the body of POST /v1/isos/{id}/retry.
type RetryRequest struct {
	api.Optional                // the body may be left out
	Stages       *StagesRequest `json:"stages"`
}

// Retry starts the ISO's next run (admin) and answers 202 with the ISO: a build run in which
// every selected stage runs and skips what already exists — finishing a failed build,
// rebuilding an edited one, or confirming a built one — or, after a failed removal, the
// removal again.
func Retry(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[RetryRequest]) error {
		var iso horizon.ISO
		var run horizon.Run
		out, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (Detail, error) {
			var err error
			if iso, err = store.ISOGetForUpdate(ctx, tx, r.ID); err != nil {
				return Detail{}, err
			}
			if iso.State == horizon.ISORemoved {
				return Detail{}, problem.Conflict("The ISO was removed; build a new one.")
			}
			if err := notBusy(ctx, tx, iso); err != nil {
				return Detail{}, err
			}
			last, err := store.RunLatest(ctx, tx, store.OfISO(iso.ID))
			if err == nil && last.Kind == horizon.RunISORemove {
				if r.Body.Stages != nil {
					return Detail{}, horizon.Invalid("stages", "a removal has no stages to select")
				}
				run, err = startRemoval(ctx, tx, iso, r.Who)
			} else {
				t, terr := store.ISOTemplateGet(ctx, tx, iso.ISOTemplateID)
				if terr != nil {
					return Detail{}, terr
				}
				spec, _, serr := specOf(ctx, tx, t, iso.ISOTemplateVersion)
				if serr != nil {
					return Detail{}, serr
				}
				var p horizon.Problems
				sel := r.Body.Stages.selection()
				sel.Check(&p, "stages", spec.Stages(iso.Kind))
				if perr := p.Err(); perr != nil {
					return Detail{}, perr
				}
				run, err = startBuild(ctx, tx, iso, spec, sel, r.Who)
			}
			if err != nil {
				return Detail{}, err
			}
			if iso, err = store.ISOGet(ctx, tx, iso.ID); err != nil {
				return Detail{}, err
			}
			return detail(ctx, tx, iso, r.Who)
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(out.Version))
		return accepted(c, d, iso, run, out)
	})
}
