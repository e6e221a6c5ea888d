package templates

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
	"horizon/shared/template"
)

// Form returns what a frontend needs to draw the creation form of a template version
// (template.Form): phases in order, per job a JSON Schema of its parameters, the attachments of
// each execution, multiplicity and secrets. It reads only the stored version, never git.
func Form(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		n, err := paramVersion(c)
		if err != nil {
			return err
		}
		v, err := store.TemplateVersionGet(c.UserContext(), d.DB, id, n)
		if err != nil {
			return err
		}
		def, mods, err := decode(v)
		if err != nil {
			return err
		}
		return c.JSON(template.Form(def, mods))
	}
}
