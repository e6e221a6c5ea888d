// Package notify delivers webhook messages from the outbox (shared/notify explains the design).
// Dispatch, scheduled every few seconds on every replica (Asynq's unique window makes it one
// pass per period), claims the due deliveries in Postgres and enqueues one webhook:deliver task
// each on the notify queue; Deliver sends one attempt and records it in one statement, which
// schedules the next attempt or ends the delivery. A worker that dies mid-attempt loses only
// its claim: when the claim's lease ends, the next sweep enqueues the attempt again (at least
// once). The notify queue has a pool of workers of its own, and each attempt is bounded by its
// timeout, so a slow or dead destination delays neither deploys nor other destinations more
// than one attempt's timeout per slot.
package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"horizon/shared/horizon"
	"horizon/shared/notify"
	"horizon/shared/queue"
	"horizon/shared/secrets"
	"horizon/shared/store"
)

// DefaultLease is how long a claimed delivery waits for its attempt before a sweep enqueues it
// again: above an attempt's timeout and a queue's usual wait.
const DefaultLease = 2 * time.Minute

// dispatchBatch bounds the deliveries one sweep claims; the next sweep continues.
const dispatchBatch = 500

// Handler sends deliveries.
type Handler struct {
	DB      *pgxpool.Pool
	Redis   redis.UniversalClient
	Box     *secrets.Box
	Sender  *notify.Sender
	Queues  queue.Queues
	Enqueue queue.Enqueuer
	Log     *slog.Logger
	// Namespace prefixes the Redis keys of the Slack rate limit.
	Namespace string
	// Lease is DefaultLease unless set (tests shorten it).
	Lease time.Duration
}

func (h Handler) lease() time.Duration {
	if h.Lease > 0 {
		return h.Lease
	}
	return DefaultLease
}

// Dispatch is the webhook:dispatch task: it claims the due deliveries and enqueues them.
func (h Handler) Dispatch(ctx context.Context, _ *asynq.Task) error {
	_, err := h.DispatchDue(ctx)
	return err
}

// DispatchDue claims and enqueues the due deliveries, returning how many.
func (h Handler) DispatchDue(ctx context.Context) (int, error) {
	ds, err := store.DeliveriesClaimDue(ctx, h.DB, h.lease(), dispatchBatch)
	if err != nil {
		return 0, err
	}
	for _, d := range ds {
		if err := h.Enqueue.Enqueue(ctx, queue.NewWebhookDeliver(h.Queues, d.ID, d.Attempts+1)); err != nil {
			return 0, err // the claim expires and a later sweep tries again
		}
	}
	return len(ds), nil
}

// ProcessTask is the webhook:deliver task: one attempt of one delivery.
func (h Handler) ProcessTask(ctx context.Context, t *asynq.Task) error {
	var p queue.WebhookDeliver
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return fmt.Errorf("%w: %w", asynq.SkipRetry, err)
	}
	_, err := h.Attempt(ctx, p)
	return err
}

// Attempt sends attempt p.Attempt of a delivery, if it is still that delivery's next attempt,
// and records the outcome. It reports the outcome recorded (zero when there was nothing to do).
func (h Handler) Attempt(ctx context.Context, p queue.WebhookDeliver) (store.DeliveryOutcome, error) {
	w, err := store.DeliveryWorkGet(ctx, h.DB, p.DeliveryID)
	if errors.Is(err, horizon.ErrNotFound) {
		return store.DeliveryOutcome{}, nil // the subscription was deleted
	}
	if err != nil {
		return store.DeliveryOutcome{}, err
	}
	if w.Delivery.State != horizon.DeliveryPending || w.Delivery.Attempts != p.Attempt-1 {
		return store.DeliveryOutcome{}, nil // a duplicate of an attempt already made
	}
	log := h.Log.With("delivery_id", p.DeliveryID, "webhook_id", w.Webhook.ID, "attempt", p.Attempt)
	if !w.Webhook.Enabled && w.Delivery.EventType != string(notify.Test) {
		o := store.DeliveryOutcome{Failed: true, Error: ptr("the subscription is disabled")}
		_, err := store.DeliveryRecord(ctx, h.DB, p.DeliveryID, p.Attempt, o)
		return o, err
	}
	kind := notify.Kind(w.Webhook.Kind)
	if kind == notify.KindSlack {
		wait, err := h.slackSlot(ctx, w.Webhook.ID.String())
		if err != nil {
			return store.DeliveryOutcome{}, err
		}
		if wait > 0 {
			// Slack takes about one message per second per destination: this attempt goes
			// back to the queue, the claim still held, instead of occupying a slot.
			return store.DeliveryOutcome{}, h.Enqueue.Enqueue(ctx, queue.NewWebhookDeliver(h.Queues, p.DeliveryID, p.Attempt), asynq.ProcessIn(wait))
		}
	}
	url, sigs, err := notify.Unseal(h.Box, w.Webhook, time.Now())
	if err != nil {
		return store.DeliveryOutcome{}, fmt.Errorf("%w: %w", asynq.SkipRetry, err)
	}
	res := h.Sender.Send(ctx, kind, url, w.Event, sigs)
	o := Outcome(res, p.Attempt, time.Now())
	recorded, err := store.DeliveryRecord(ctx, h.DB, p.DeliveryID, p.Attempt, o)
	if err != nil {
		return o, err
	}
	if recorded && res.Status == http.StatusGone {
		// 410: the receiver asks never to be sent anything again.
		if err := store.WebhookDisable(ctx, h.DB, w.Webhook.ID, "the destination answered 410 Gone"); err != nil {
			return o, err
		}
		log.WarnContext(ctx, "webhook destination answered 410; subscription disabled")
	}
	return o, nil
}

// Outcome turns an attempt's result into what the delivery log records: delivered on 2xx;
// failed on 410 or when no attempt is left; otherwise the next attempt's time.
func Outcome(res notify.Result, attempt int, now time.Time) store.DeliveryOutcome {
	o := store.DeliveryOutcome{Latency: res.Latency, Response: res.Response}
	if res.Status != 0 {
		o.Status = &res.Status
	}
	switch {
	case res.OK():
		o.Delivered = true
		return o
	case res.Err != nil:
		o.Error = ptr(res.Err.Error())
	case res.Status == http.StatusGone:
		o.Error = ptr("410 Gone: the subscription is disabled")
		o.Failed = true
		return o
	default:
		o.Error = ptr(fmt.Sprintf("answered %d", res.Status))
	}
	delay, ok := notify.NextDelay(attempt+1, res.Header, now)
	if !ok {
		o.Failed = true
		return o
	}
	o.NextAt = now.Add(delay)
	return o
}

// slackSlot takes the destination's one-message-per-second slot, or says how long to wait.
func (h Handler) slackSlot(ctx context.Context, webhook string) (time.Duration, error) {
	key := h.Namespace + ":webhook:slack:" + webhook
	ok, err := h.Redis.SetNX(ctx, key, 1, time.Second).Result()
	if err != nil || ok {
		return 0, err
	}
	ttl, err := h.Redis.PTTL(ctx, key).Result()
	if err != nil {
		return 0, err
	}
	return max(ttl, 50*time.Millisecond), nil
}

func ptr[T any](v T) *T { return &v }
