package webhooks

import (
	"cmp"
	"context"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/notify"
	"horizon/shared/queue"
	"horizon/shared/store"
)

// UpdateRequest is the body of PATCH /v1/webhooks/{id}: the fields given change, and none may be
// null.
type UpdateRequest struct {
	Name    api.Field[string]   `json:"name"`
	Kind    api.Field[string]   `json:"kind"`
	URL     api.Field[string]   `json:"url"`
	Events  api.Field[[]string] `json:"events"`
	Enabled api.Field[bool]     `json:"enabled"`
}

// Update changes a subscription, honouring If-Match. Enabling it (or changing the destination of
// an enabled one) first sends a test message (verify).
func Update(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[UpdateRequest]) error {
		w, err := getManaged(ctx, d, r)
		if err != nil {
			return err
		}
		url, secrets, err := notify.Unseal(d.Box, w, d.Now())
		if err != nil {
			return err
		}
		wasEnabled := w.Enabled
		r.Body.Name.Apply(&w.Name)
		r.Body.Kind.Apply(&w.Kind)
		newURL := r.Body.URL.Apply(&url)
		r.Body.Events.Apply(&w.Events)
		r.Body.Enabled.Apply(&w.Enabled)
		var p horizon.Problems
		check(ctx, d, &p, w.Name, w.Kind, url, w.Events)
		if err := p.Err(); err != nil {
			return err
		}
		if w.Enabled && (!wasEnabled || newURL) {
			if err := verify(ctx, d, w.Kind, url, secrets[0], w.TeamID, w.ID); err != nil {
				return err
			}
		}
		w.URLSealed, w.URLShown = d.Box.SealString(notify.PurposeURL, url), notify.Redact(url)
		out, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.Webhook, error) {
			out, err := store.WebhookUpdate(ctx, tx, w, r.IfVersion)
			if err != nil {
				return out, err
			}
			return out, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "webhook.update", ObjectType: "webhook",
				ObjectID: &out.ID, TeamID: out.TeamID, Details: map[string]any{"name": out.Name, "kind": out.Kind, "events": out.Events, "enabled": out.Enabled}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(out.Version))
		return c.JSON(toWebhook(out))
	})
}

// Delete removes a subscription and its delivery log; its pending deliveries are dropped.
func Delete(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		w, err := getManaged(ctx, d, r)
		if err != nil {
			return err
		}
		if err := store.WithTx(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) error {
			if err := store.WebhookDelete(ctx, tx, w.ID); err != nil {
				return err
			}
			return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "webhook.delete", ObjectType: "webhook",
				ObjectID: &w.ID, TeamID: w.TeamID, Details: map[string]any{"name": w.Name}})
		}); err != nil {
			return err
		}
		return c.SendStatus(fiber.StatusNoContent)
	})
}

// SecretGrace is how long the previous signing secret keeps signing after a rotation, so that
// receivers can switch without losing a message.
const SecretGrace = 24 * time.Hour

// RotateSecret makes a new signing secret, shown once; the previous one signs too for
// SecretGrace.
func RotateSecret(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		w, err := getManaged(ctx, d, r)
		if err != nil {
			return err
		}
		secret := notify.NewSecret()
		out, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.Webhook, error) {
			out, err := store.WebhookRotateSecret(ctx, tx, w.ID, d.Box.SealString(notify.PurposeSecret, secret), d.Now().Add(SecretGrace))
			if err != nil {
				return out, err
			}
			return out, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "webhook.rotate_secret",
				ObjectType: "webhook", ObjectID: &out.ID, TeamID: out.TeamID})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(out.Version))
		return c.JSON(Created{Webhook: toWebhook(out), Secret: secret})
	})
}

// Test queues a test message to the subscription (enabled or not); its delivery is in the log.
func Test(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		w, err := getManaged(ctx, d, r)
		if err != nil {
			return err
		}
		del, err := store.DeliveryCreateTest(ctx, d.DB, w.ID, lease(d))
		if err != nil {
			return err
		}
		enqueue(ctx, d, del)
		return c.Status(fiber.StatusAccepted).JSON(toDelivery(del))
	})
}

// Redeliver sends a delivery's event again, as a new delivery (same webhook-id).
func Redeliver(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		w, err := getManaged(ctx, d, r)
		if err != nil {
			return err
		}
		del, err := store.DeliveryRedeliver(ctx, d.DB, w.ID, r.Sub, lease(d))
		if err != nil {
			return err
		}
		enqueue(ctx, d, del)
		return c.Status(fiber.StatusAccepted).JSON(toDelivery(del))
	})
}

// lease is how long a delivery the API queues stays claimed (HORIZON_WEBHOOK_LEASE).
func lease(d api.Deps) time.Duration {
	return cmp.Or(d.WebhookLease, notify.DefaultLease)
}

// enqueue hands a committed delivery's first attempt to the workers at once, rather than after
// the outbox's next sweep. The delivery is claimed for the lease: should this enqueue fail,
// the sweep hands it over when the lease ends, so the request does not fail for it.
func enqueue(ctx context.Context, d api.Deps, del horizon.Delivery) {
	if err := d.Queue.Enqueue(ctx, queue.NewWebhookDeliver(d.Queues, del.ID, del.Attempts+1)); err != nil {
		d.Log.WarnContext(ctx, "enqueue a webhook delivery; the outbox's sweep sends it when its lease ends",
			"delivery_id", del.ID, "error", err)
	}
}
