package webhooks

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// List returns the subscriptions the caller sees (their teams'; admins also the global ones),
// of one team with ?team_id=.
func List(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		page, err := api.ParsePage(c)
		if err != nil {
			return err
		}
		team, err := api.QueryID(c, "team_id")
		if err != nil {
			return err
		}
		ws, next, err := store.WebhookList(ctx, d.DB, r.Who.Scope(), team, page)
		if err != nil {
			return err
		}
		return c.JSON(api.NewList(api.Map(ws, toWebhook), next))
	})
}

// Get returns one subscription.
func Get(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		w, err := get(ctx, d, r)
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(w.Version))
		return c.JSON(toWebhook(w))
	})
}

// ListDeliveries returns a subscription's delivery log, newest first.
func ListDeliveries(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		page, err := api.ParsePage(c)
		if err != nil {
			return err
		}
		w, err := get(ctx, d, r)
		if err != nil {
			return err
		}
		ds, next, err := store.DeliveryList(ctx, d.DB, w.ID, page)
		if err != nil {
			return err
		}
		return c.JSON(api.NewList(api.Map(ds, toDelivery), next))
	})
}
