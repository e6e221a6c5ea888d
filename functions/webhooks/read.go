package webhooks

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// List returns the subscriptions the caller sees (their teams'; admins also the global ones),
// of one team with ?team_id=.
func List(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		page, err := api.ParsePage(c)
		if err != nil {
			return err
		}
		team, err := api.QueryID(c, "team_id")
		if err != nil {
			return err
		}
		ws, next, err := store.WebhookList(c.UserContext(), d.DB, api.Principal(c).Scope(), team, page)
		if err != nil {
			return err
		}
		return c.JSON(api.NewList(api.Map(ws, toWebhook), next))
	}
}

// Get returns one subscription.
func Get(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		w, err := get(c, d)
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(w.Version))
		return c.JSON(toWebhook(w))
	}
}

// ListDeliveries returns a subscription's delivery log, newest first.
func ListDeliveries(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		page, err := api.ParsePage(c)
		if err != nil {
			return err
		}
		w, err := get(c, d)
		if err != nil {
			return err
		}
		ds, next, err := store.DeliveryList(c.UserContext(), d.DB, w.ID, page)
		if err != nil {
			return err
		}
		return c.JSON(api.NewList(api.Map(ds, toDelivery), next))
	}
}
