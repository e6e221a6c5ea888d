package webhooks

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// List returns the subscriptions the caller sees (their teams'; admins also the global ones),
// of one team with ?team_id=.
func List(d api.Deps) fiber.Handler {
	return api.ListPage(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None], page store.Page) ([]horizon.Webhook, *uuid.UUID, error) {
		team, err := api.QueryID(c, "team_id")
		if err != nil {
			return nil, nil, err
		}
		return store.WebhookList(ctx, d.DB, r.Who.Scope(), team, page)
	}, toWebhook)
}

// Get returns one subscription.
func Get(d api.Deps) fiber.Handler {
	return api.Get(func(ctx context.Context, r api.Req[api.None]) (api.Object, error) {
		w, err := get(ctx, d, r)
		return api.Object{View: toWebhook(w), Version: w.Version}, err
	})
}

// ListDeliveries returns a subscription's delivery log, newest first, a page at a time.
func ListDeliveries(d api.Deps) fiber.Handler {
	return api.ListPage(func(ctx context.Context, _ *fiber.Ctx, r api.Req[api.None], page store.Page) ([]horizon.Delivery, *uuid.UUID, error) {
		w, err := get(ctx, d, r)
		if err != nil {
			return nil, nil, err
		}
		return store.DeliveryList(ctx, d.DB, w.ID, page)
	}, toDelivery)
}
