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
		return startRunOn(c, d, r.Who, r.ID, func(ctx context.Context, tx pgx.Tx, iso horizon.ISO) (launch, error) {
			if iso.State == horizon.ISORemoved {
				return launch{}, problem.Conflict("The ISO was removed; build a new one.")
			}
			last, err := store.RunLatest(ctx, tx, store.OfISO(iso.ID))
			if err == nil && last.Kind == horizon.RunISORemove {
				if r.Body.Stages != nil {
					return launch{}, horizon.Invalid("stages", "a removal has no stages to select")
				}
				return removal(iso), nil
			}
			t, err := store.ISOTemplateGet(ctx, tx, iso.ISOTemplateID)
			if err != nil {
				return launch{}, err
			}
			spec, _, err := specOf(ctx, tx, t, iso.ISOTemplateVersion)
			if err != nil {
				return launch{}, err
			}
			var p horizon.Problems
			sel := r.Body.Stages.selection()
			sel.Check(&p, "stages", spec.Stages(iso.Kind))
			if err := p.Err(); err != nil {
				return launch{}, err
			}
			return build(iso, spec, sel), nil
		})
	})
}
