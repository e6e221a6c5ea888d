package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/auth"
	"horizon/shared/horizon"
)

const webhookColumns = `id, team_id, name, kind, url_sealed, url_shown, events, enabled, disabled_reason, secret_sealed,
	previous_secret_sealed, previous_secret_until, version, created_at, updated_at`

func scanWebhook(r pgx.Row) (horizon.Webhook, error) {
	var w horizon.Webhook
	err := r.Scan(&w.ID, &w.TeamID, &w.Name, &w.Kind, &w.URLSealed, &w.URLShown, &w.Events, &w.Enabled, &w.DisabledReason,
		&w.SecretSealed, &w.PreviousSecretSealed, &w.PreviousUntil, &w.Version, &w.CreatedAt, &w.UpdatedAt)
	return w, err
}

// webhookVisible is the condition under which scope ($2 all, $3 teams) sees a subscription:
// its team's, and the global ones (no team) only for admins.
const webhookVisible = `($2 OR team_id = ANY($3))`

// WebhookCreate inserts a subscription (with w.ID when set), refusing (horizon.Invalid on team_id) a team that has
// MaxWebhooksPerTeam already. The count is taken under a transaction-scoped lock on the team,
// so two creations at once cannot both take the last place.
func WebhookCreate(ctx context.Context, q Querier, w horizon.Webhook) (horizon.Webhook, error) {
	key := uuid.Nil
	if w.TeamID != nil {
		key = *w.TeamID
	}
	if _, err := q.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('webhooks:' || $1::text, 0))`, key); err != nil {
		return w, translate(err)
	}
	var n int
	if err := q.QueryRow(ctx, `SELECT count(*) FROM webhooks WHERE team_id IS NOT DISTINCT FROM $1`, w.TeamID).Scan(&n); err != nil {
		return w, translate(err)
	}
	if n >= horizon.MaxWebhooksPerTeam {
		return w, horizon.Invalid("team_id", "has %d subscriptions already, the most a team may have", n)
	}
	out, err := scanWebhook(q.QueryRow(ctx, `INSERT INTO webhooks (id, team_id, name, kind, url_sealed, url_shown, events, enabled, secret_sealed)
		VALUES (COALESCE($9, uuid_v7()), $1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+webhookColumns,
		w.TeamID, w.Name, w.Kind, w.URLSealed, w.URLShown, w.Events, w.Enabled, w.SecretSealed, nilIfZero(w.ID)))
	return out, translate(err)
}

// WebhookGet returns a subscription scope sees (horizon.ErrNotFound otherwise, also for another
// team's).
func WebhookGet(ctx context.Context, q Querier, scope auth.Scope, id uuid.UUID) (horizon.Webhook, error) {
	w, err := scanWebhook(q.QueryRow(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = $1 AND `+webhookVisible,
		id, scope.All, scope.TeamIDs()))
	if err != nil {
		return w, fmt.Errorf("webhook %s: %w", id, translate(err))
	}
	return w, withLastDelivery(ctx, q, []*horizon.Webhook{&w})
}

// withLastDelivery sets each subscription's LastDelivery, its newest delivery (nil when it has
// none), in one query: one index probe per subscription on (webhook_id, id).
func withLastDelivery(ctx context.Context, q Querier, ws []*horizon.Webhook) error {
	ids := make([]uuid.UUID, len(ws))
	for i, w := range ws {
		ids[i] = w.ID
	}
	rows, err := q.Query(ctx, `SELECT `+deliveryColumns+` FROM unnest($1::uuid[]) w(id)
		CROSS JOIN LATERAL (SELECT * FROM webhook_deliveries x WHERE x.webhook_id = w.id ORDER BY x.id DESC LIMIT 1) d`, ids)
	if err != nil {
		return translate(err)
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.Delivery, error) { return scanDelivery(r) })
	if err != nil {
		return translate(err)
	}
	last := make(map[uuid.UUID]*horizon.Delivery, len(ds))
	for i := range ds {
		last[ds[i].WebhookID] = &ds[i]
	}
	for _, w := range ws {
		w.LastDelivery = last[w.ID]
	}
	return nil
}

// WebhookList returns one page of the subscriptions scope sees, of team when given.
func WebhookList(ctx context.Context, q Querier, scope auth.Scope, team *uuid.UUID, p Page) ([]horizon.Webhook, *uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE ($1::uuid IS NULL OR id > $1) AND `+webhookVisible+`
		AND ($4::uuid IS NULL OR team_id = $4) ORDER BY id LIMIT $5`, p.After, scope.All, scope.TeamIDs(), team, p.limit())
	if err != nil {
		return nil, nil, translate(err)
	}
	ws, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.Webhook, error) { return scanWebhook(r) })
	if err != nil {
		return nil, nil, translate(err)
	}
	ws, next := cut(ws, p, func(w horizon.Webhook) uuid.UUID { return w.ID })
	ptrs := make([]*horizon.Webhook, len(ws))
	for i := range ws {
		ptrs[i] = &ws[i]
	}
	return ws, next, withLastDelivery(ctx, q, ptrs)
}

// WebhookUpdate writes w's name, kind, URL, events and enabled flag if the row is still at
// ifVersion (0: any), clearing the reason of an earlier automatic disabling when it is enabled.
func WebhookUpdate(ctx context.Context, q Querier, w horizon.Webhook, ifVersion int64) (horizon.Webhook, error) {
	out, err := scanWebhook(q.QueryRow(ctx, `UPDATE webhooks SET name = $2, kind = $3, url_sealed = $4, url_shown = $5, events = $6,
		enabled = $7, disabled_reason = CASE WHEN $7 THEN NULL ELSE disabled_reason END, version = version + 1, updated_at = now()
		WHERE id = $1 AND ($8 = 0 OR version = $8) RETURNING `+webhookColumns,
		w.ID, w.Name, w.Kind, w.URLSealed, w.URLShown, w.Events, w.Enabled, ifVersion))
	if err != nil {
		return out, staleOrMissing(ctx, q, err, "webhooks", w.ID)
	}
	return out, withLastDelivery(ctx, q, []*horizon.Webhook{&out})
}

// WebhookRotateSecret makes secret the signing secret; the current one keeps signing until
// graceUntil.
func WebhookRotateSecret(ctx context.Context, q Querier, id uuid.UUID, secret []byte, graceUntil time.Time) (horizon.Webhook, error) {
	out, err := scanWebhook(q.QueryRow(ctx, `UPDATE webhooks SET previous_secret_sealed = secret_sealed, previous_secret_until = $3,
		secret_sealed = $2, version = version + 1, updated_at = now() WHERE id = $1 RETURNING `+webhookColumns, id, secret, graceUntil))
	if err != nil {
		return out, translate(err)
	}
	return out, withLastDelivery(ctx, q, []*horizon.Webhook{&out})
}

// WebhookDisable turns a subscription off for reason (a 410 from its destination); its pending
// deliveries are failed with the reason.
func WebhookDisable(ctx context.Context, q Querier, id uuid.UUID, reason string) error {
	if _, err := q.Exec(ctx, `UPDATE webhooks SET enabled = false, disabled_reason = $2, version = version + 1, updated_at = now()
		WHERE id = $1`, id, reason); err != nil {
		return translate(err)
	}
	_, err := q.Exec(ctx, `UPDATE webhook_deliveries SET state = 'failed', last_error = COALESCE(last_error, $2)
		WHERE webhook_id = $1 AND state = 'pending'`, id, reason)
	return translate(err)
}

// WebhookDelete deletes a subscription and its delivery log.
func WebhookDelete(ctx context.Context, q Querier, id uuid.UUID) error {
	return deleteByID(ctx, q, "webhooks", "webhook", id)
}

func nilIfZero(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}
