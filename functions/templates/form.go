package templates

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
	"horizon/shared/template"
)

// Form returns what a frontend needs to draw the creation form of a template version
// (template.Form): phases in order, per job a JSON Schema of its parameters, the attachments of
// each execution, multiplicity and secrets. It reads only the stored version, never git.
func Form(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		n, err := paramVersion(c)
		if err != nil {
			return err
		}
		v, err := store.TemplateVersionGet(ctx, d.DB, r.ID, n)
		if err != nil {
			return err
		}
		def, mods, err := decode(v)
		if err != nil {
			return err
		}
		return c.JSON(template.Form(def, mods))
	})
}
