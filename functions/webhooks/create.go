package webhooks

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/notify"
	"horizon/shared/store"
)

// CreateRequest is the body of POST /v1/webhooks. Kind defaults to standard when left out (null
// is refused); without TeamID the subscription is global (admins only).
type CreateRequest struct {
	TeamID  *uuid.UUID        `json:"team_id"`
	Name    string            `json:"name"`
	Kind    api.Field[string] `json:"kind"`
	URL     string            `json:"url"`
	Events  []string          `json:"events"`
	Enabled bool              `json:"enabled"`
}

// Created is the one answer that carries the signing secret.
type Created struct {
	Webhook
	Secret string `json:"secret"`
}

// Create makes a subscription, with a new signing secret shown once. Enabled, it first sends a
// test message (verify).
func Create(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[CreateRequest]) error {
		if err := canManage(r.Who, r.Body.TeamID); err != nil {
			return err
		}
		kind := string(notify.KindStandard)
		r.Body.Kind.Apply(&kind)
		var p horizon.Problems
		check(ctx, d, &p, r.Body.Name, kind, r.Body.URL, r.Body.Events)
		if err := p.Err(); err != nil {
			return err
		}
		secret := notify.NewSecret()
		id := uuid.Must(uuid.NewV7())
		if r.Body.Enabled {
			if err := verify(ctx, d, kind, r.Body.URL, secret, r.Body.TeamID, id); err != nil {
				return err
			}
		}
		w, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.Webhook, error) {
			if r.Body.TeamID != nil {
				if _, err := store.TeamGet(ctx, tx, r.Who.Scope(), *r.Body.TeamID); err != nil {
					return horizon.Webhook{}, horizon.Invalid("team_id", "is not a team")
				}
			}
			w, err := store.WebhookCreate(ctx, tx, horizon.Webhook{ID: id, TeamID: r.Body.TeamID, Name: r.Body.Name, Kind: kind,
				URLSealed: d.Box.SealString(notify.PurposeURL, r.Body.URL), URLShown: notify.Redact(r.Body.URL), Events: r.Body.Events,
				Enabled: r.Body.Enabled, SecretSealed: d.Box.SealString(notify.PurposeSecret, secret)})
			if err != nil {
				return w, err
			}
			return w, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "webhook.create", ObjectType: "webhook",
				ObjectID: &w.ID, TeamID: w.TeamID, Details: map[string]any{"name": w.Name, "kind": w.Kind, "events": w.Events, "enabled": w.Enabled}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderLocation, "/v1/webhooks/"+w.ID.String())
		c.Set(fiber.HeaderETag, api.ETag(w.Version))
		return c.Status(fiber.StatusCreated).JSON(Created{Webhook: toWebhook(w), Secret: secret})
	})
}
