package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/horizon"
	"horizon/shared/notify"
)

// outboxInsert writes an event of type typ for team (nil: no team, e.g. an ISO) whose data the
// SELECT dataSQL builds from args ($3 onwards), and one pending delivery for every enabled
// subscription that wants it — in q's transaction, so the event leaves if and only if the change
// it reports commits. Nothing is written when no subscription wants the event.
//
// dataSQL lists the payload's columns explicitly: payloads are thin by construction (never an
// output, a parameter, a secret or a log line).
func outboxInsert(ctx context.Context, q Querier, typ notify.EventType, team *uuid.UUID, dataSQL string, args ...any) error {
	_, err := q.Exec(ctx, `WITH subs AS (
			SELECT id FROM webhooks WHERE enabled AND (team_id IS NULL OR team_id = $2) AND $1 = ANY(events)),
		e AS (
			INSERT INTO webhook_events (team_id, type, data)
			SELECT $2, $1, jsonb_strip_nulls(d.data) FROM (`+dataSQL+`) d WHERE EXISTS (SELECT 1 FROM subs)
			RETURNING id, type)
		INSERT INTO webhook_deliveries (webhook_id, event_id, event_type) SELECT subs.id, e.id, e.type FROM subs, e`,
		append([]any{string(typ), team}, args...)...)
	return translate(err)
}

// firstLine is the SQL of the first line of an error text, bounded.
const firstLine = `left(split_part(%s, E'\n', 1), 500)`

// notifyRunFinished emits run.finished (action.finished for an action run) for a stack's run.
func notifyRunFinished(ctx context.Context, q Querier, r horizon.Run) error {
	if r.StackID == nil {
		return nil // an ISO run: its ISO's state change reports it
	}
	typ := notify.RunFinished
	if r.Kind == horizon.RunAction {
		typ = notify.ActionFinished
	}
	var team uuid.UUID
	if err := q.QueryRow(ctx, `SELECT team_id FROM stacks WHERE id = $1`, *r.StackID).Scan(&team); err != nil {
		return translate(err)
	}
	return outboxInsert(ctx, q, typ, &team, `SELECT jsonb_build_object('run_id', r.id, 'run_kind', r.kind, 'result', r.state,
		'stack_id', s.id, 'stack_name', s.name, 'team_id', t.id, 'team_name', t.name, 'actor_id', r.actor_id, 'actor_name', u.name,
		'started_at', r.started_at, 'finished_at', r.finished_at, 'error', `+fmt.Sprintf(firstLine, "r.error")+`) AS data
		FROM runs r JOIN stacks s ON s.id = r.stack_id JOIN teams t ON t.id = s.team_id LEFT JOIN users u ON u.id = r.actor_id
		WHERE r.id = $3`, r.ID)
}

// notifyStackState emits stack.state_changed for a transition (a stack's creation, with no
// state before, is not one).
func notifyStackState(ctx context.Context, q Querier, c horizon.StateChange) error {
	if c.From == nil {
		return nil
	}
	var team uuid.UUID
	if err := q.QueryRow(ctx, `SELECT team_id FROM stacks WHERE id = $1`, c.StackID).Scan(&team); err != nil {
		return translate(err)
	}
	return outboxInsert(ctx, q, notify.StackStateChanged, &team, `SELECT jsonb_build_object('stack_id', s.id, 'stack_name', s.name,
		'team_id', t.id, 'team_name', t.name, 'from_state', $4::text, 'to_state', $5::text, 'run_id', $6::uuid,
		'actor_id', u.id, 'actor_name', u.name, 'at', now(), 'error', `+fmt.Sprintf(firstLine, "$8::text")+`) AS data
		FROM stacks s JOIN teams t ON t.id = s.team_id LEFT JOIN users u ON u.id = $7::uuid WHERE s.id = $3`,
		c.StackID, c.From, c.To, c.RunID, c.ActorID, c.Error)
}

// notifyISOState emits iso.built or iso.failed when an ISO reaches either.
func notifyISOState(ctx context.Context, q Querier, c horizon.ISOStateChange) error {
	typ := notify.ISOBuilt
	switch c.To {
	case horizon.ISOBuilt:
	case horizon.ISOFailed:
		typ = notify.ISOFailed
	default:
		return nil
	}
	return outboxInsert(ctx, q, typ, nil, `SELECT jsonb_build_object('iso_id', i.id, 'iso_name', i.name, 'state', i.state,
		'run_id', $4::uuid, 'actor_id', u.id, 'actor_name', u.name, 'at', now(), 'error', `+fmt.Sprintf(firstLine, "$6::text")+`) AS data
		FROM isos i LEFT JOIN users u ON u.id = $5::uuid WHERE i.id = $3`, c.ISOID, c.RunID, c.ActorID, c.Error)
}

// notifyDrift emits stack.drift.found or stack.drift.cleared when a stack's announced drift
// changed from before to after (nothing when it did not).
func notifyDrift(ctx context.Context, q Querier, stack uuid.UUID, before, after bool) error {
	if before == after {
		return nil
	}
	typ := notify.DriftCleared
	if after {
		typ = notify.DriftFound
	}
	var team uuid.UUID
	if err := q.QueryRow(ctx, `SELECT team_id FROM stacks WHERE id = $1`, stack).Scan(&team); err != nil {
		return translate(err)
	}
	return outboxInsert(ctx, q, typ, &team, `SELECT jsonb_build_object('stack_id', s.id, 'stack_name', s.name,
		'team_id', t.id, 'team_name', t.name, 'state', s.state, 'checked_at', s.drift_checked_at, 'at', now(),
		'findings', (SELECT count(*) FROM drift_findings f WHERE f.stack_id = s.id AND f.accepted_at IS NULL)) AS data
		FROM stacks s JOIN teams t ON t.id = s.team_id WHERE s.id = $3`, stack)
}

// DeliveryWork is what one attempt of a delivery needs.
type DeliveryWork struct {
	Delivery horizon.Delivery
	Webhook  horizon.Webhook
	Event    notify.Event
}

const deliveryColumns = `d.id, d.webhook_id, d.event_id, d.event_type, d.state, d.attempts, d.next_at, d.last_status,
	d.last_latency_ms, d.last_response, d.last_error, d.last_at, d.created_at`

func scanDelivery(r pgx.Row) (horizon.Delivery, error) {
	var d horizon.Delivery
	err := r.Scan(&d.ID, &d.WebhookID, &d.EventID, &d.EventType, &d.State, &d.Attempts, &d.NextAt, &d.LastStatus,
		&d.LastLatency, &d.LastResponse, &d.LastError, &d.LastAt, &d.CreatedAt)
	return d, err
}

// DeliveryCreateTest adds a pending delivery of a test message to a subscription, claimed for
// lease: the caller enqueues its first attempt once this commits, and the outbox's sweep hands
// it over only if that attempt has not happened when the lease ends.
func DeliveryCreateTest(ctx context.Context, q Querier, webhook uuid.UUID, lease time.Duration) (horizon.Delivery, error) {
	d, err := scanDelivery(q.QueryRow(ctx, `INSERT INTO webhook_deliveries AS d (webhook_id, event_type, claimed_until)
		VALUES ($1, $2, now() + $3::interval) RETURNING `+deliveryColumns, webhook, string(notify.Test), lease))
	return d, translate(err)
}

// DeliveryWorkGet loads a delivery with its subscription and event.
func DeliveryWorkGet(ctx context.Context, q Querier, id uuid.UUID) (DeliveryWork, error) {
	d, err := scanDelivery(q.QueryRow(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries d WHERE d.id = $1`, id))
	if err != nil {
		return DeliveryWork{}, translate(err)
	}
	w, err := scanWebhook(q.QueryRow(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = $1`, d.WebhookID))
	if err != nil {
		return DeliveryWork{}, translate(err)
	}
	e := notify.Event{ID: d.ID.String(), Type: notify.EventType(d.EventType), At: d.CreatedAt, Data: map[string]any{}}
	if d.EventID != nil {
		var raw []byte
		if err := q.QueryRow(ctx, `SELECT data, created_at FROM webhook_events WHERE id = $1`, *d.EventID).Scan(&raw, &e.At); err != nil {
			return DeliveryWork{}, translate(err)
		}
		if err := json.Unmarshal(raw, &e.Data); err != nil {
			return DeliveryWork{}, err
		}
		// The event's id names the message on every attempt and redelivery, so that receivers
		// can deduplicate (webhook-id).
		e.ID = d.EventID.String()
	} else if w.TeamID != nil {
		e.Data["team_id"] = w.TeamID.String()
	}
	e.Data["webhook_id"] = w.ID.String()
	return DeliveryWork{Delivery: d, Webhook: w, Event: e}, nil
}

// DeliveryOutcome is what an attempt got.
type DeliveryOutcome struct {
	Status   *int
	Latency  time.Duration
	Response string
	Error    *string
	// Delivered ends the delivery successfully; otherwise NextAt schedules the next attempt, or
	// none is left (Failed).
	Delivered bool
	Failed    bool
	NextAt    time.Time
}

// DeliveryRecord records attempt number attempt of a delivery, if it is still pending with
// attempt-1 attempts made (at least once delivery means two workers may race on one attempt:
// the second record is ignored). It reports whether it recorded.
func DeliveryRecord(ctx context.Context, q Querier, id uuid.UUID, attempt int, o DeliveryOutcome) (bool, error) {
	state := horizon.DeliveryPending
	switch {
	case o.Delivered:
		state = horizon.DeliveryDelivered
	case o.Failed:
		state = horizon.DeliveryFailed
	}
	ms := int(o.Latency.Milliseconds())
	tag, err := q.Exec(ctx, `UPDATE webhook_deliveries SET state = $3, attempts = $2, next_at = COALESCE($4, next_at),
		last_status = $5, last_latency_ms = $6, last_response = $7, last_error = $8, last_at = now(), claimed_until = NULL
		WHERE id = $1 AND state = 'pending' AND attempts = $2 - 1`,
		id, attempt, state, nullTime(o.NextAt), o.Status, ms, o.Response, o.Error)
	if err != nil {
		return false, translate(err)
	}
	return tag.RowsAffected() == 1, nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// DeliveriesClaimDue claims up to limit pending deliveries whose next attempt is due and that
// no live claim holds, for lease, and returns them (with the attempts made so far). Replicas
// sweeping at once claim different rows (SKIP LOCKED).
func DeliveriesClaimDue(ctx context.Context, q Querier, lease time.Duration, limit int) ([]horizon.Delivery, error) {
	rows, err := q.Query(ctx, `UPDATE webhook_deliveries d SET claimed_until = now() + $1::interval
		WHERE d.id IN (SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_at <= now()
			AND (claimed_until IS NULL OR claimed_until < now()) ORDER BY next_at LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING `+deliveryColumns, lease, limit)
	if err != nil {
		return nil, translate(err)
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.Delivery, error) { return scanDelivery(r) })
	return ds, translate(err)
}

// DeliveryList returns one page of a subscription's deliveries, newest first.
func DeliveryList(ctx context.Context, q Querier, webhook uuid.UUID, p Page) ([]horizon.Delivery, *uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries d WHERE d.webhook_id = $1
		AND ($2::uuid IS NULL OR d.id < $2) ORDER BY d.id DESC LIMIT $3`, webhook, p.After, p.limit())
	if err != nil {
		return nil, nil, translate(err)
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.Delivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, nil, translate(err)
	}
	ds, next := cut(ds, p, func(d horizon.Delivery) uuid.UUID { return d.ID })
	return ds, next, nil
}

// DeliveryRedeliver sends a delivery of the subscription again: a new delivery of the same event
// (the same webhook-id, so that a receiver that has it already can tell), pending now and
// claimed for lease, as DeliveryCreateTest's.
func DeliveryRedeliver(ctx context.Context, q Querier, webhook, id uuid.UUID, lease time.Duration) (horizon.Delivery, error) {
	d, err := scanDelivery(q.QueryRow(ctx, `INSERT INTO webhook_deliveries AS d (webhook_id, event_id, event_type, claimed_until)
		SELECT webhook_id, event_id, event_type, now() + $3::interval FROM webhook_deliveries WHERE id = $1 AND webhook_id = $2
		RETURNING `+deliveryColumns, id, webhook, lease))
	if err != nil {
		return d, fmt.Errorf("delivery %s: %w", id, translate(err))
	}
	return d, nil
}

// pruneBatch bounds the rows one statement of OutboxPrune deletes, so that a first pass over a
// long history holds no lock for long; it loops until a batch comes back short.
const pruneBatch = 5000

// OutboxPrune deletes the finished (delivered or failed) deliveries created more than olderThan
// ago, except the newest keep deliveries of each subscription, so that a quiet subscription's
// delivery log still shows what it last got; then the events older than olderThan that no
// delivery refers to any more. A pending delivery is never deleted, whatever its age, nor its
// event. It returns how many deliveries and events it deleted.
func OutboxPrune(ctx context.Context, q Querier, olderThan time.Duration, keep int) (deliveries, events int64, err error) {
	for {
		// "keep newer deliveries exist" is an index range scan on (webhook_id, id) that stops
		// after keep rows, instead of ranking every delivery of the table.
		tag, err := q.Exec(ctx, `DELETE FROM webhook_deliveries WHERE id IN (
			SELECT d.id FROM webhook_deliveries d
			WHERE d.state IN ('delivered', 'failed') AND d.created_at < now() - make_interval(secs => $1)
			  AND EXISTS (SELECT 1 FROM webhook_deliveries n WHERE n.webhook_id = d.webhook_id AND n.id > d.id
			              ORDER BY n.id OFFSET $2 - 1 LIMIT 1)
			LIMIT $3)`, olderThan.Seconds(), max(keep, 1), pruneBatch)
		if err != nil {
			return deliveries, events, translate(err)
		}
		deliveries += tag.RowsAffected()
		if tag.RowsAffected() < pruneBatch {
			break
		}
	}
	for {
		tag, err := q.Exec(ctx, `DELETE FROM webhook_events WHERE id IN (
			SELECT e.id FROM webhook_events e
			WHERE e.created_at < now() - make_interval(secs => $1)
			  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)
			LIMIT $2)`, olderThan.Seconds(), pruneBatch)
		if err != nil {
			return deliveries, events, translate(err)
		}
		events += tag.RowsAffected()
		if tag.RowsAffected() < pruneBatch {
			break
		}
	}
	return deliveries, events, nil
}
