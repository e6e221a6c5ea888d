package isotemplates

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Get returns an ISO template with the summaries of its versions.
func Get(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		t, err := store.ISOTemplateGet(c.UserContext(), d.DB, id)
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(t.Version))
		return c.JSON(toDetail(t))
	}
}

// GetVersion returns one version of an ISO template in full.
func GetVersion(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		n, err := paramVersion(c)
		if err != nil {
			return err
		}
		ctx := c.UserContext()
		t, err := store.ISOTemplateGet(ctx, d.DB, id)
		if err != nil {
			return err
		}
		v, err := store.ISOTemplateVersionGet(ctx, d.DB, id, n)
		if err != nil {
			return err
		}
		out, err := toVersion(t.Kind, v)
		if err != nil {
			return err
		}
		return c.JSON(out)
	}
}
