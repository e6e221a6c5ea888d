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
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// handOverTimeout bounds one sweep: its claim and the enqueues of the deliveries it claimed.
const handOverTimeout = 30 * time.Second

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
	// Lease is notify.DefaultLease unless set (HORIZON_WEBHOOK_LEASE).
	Lease time.Duration
	// Retention and Keep are Prune's: finished deliveries older than Retention are deleted
	// except the newest Keep of each subscription (defaults DefaultRetention, DefaultKeep).
	Retention time.Duration
	Keep      int
}

// The outbox's retention unless configured: a month of history, and at least a page of the
// delivery log per subscription however old.
const (
	DefaultRetention = 30 * 24 * time.Hour
	DefaultKeep      = 100
)

// Prune is the webhook:prune task: it deletes the finished deliveries and the events older than
// the retention (store.OutboxPrune), so that the outbox does not grow with every event ever sent.
func (h Handler) Prune(ctx context.Context, _ *asynq.Task) error {
	d, e, err := store.OutboxPrune(ctx, h.DB, cmp.Or(h.Retention, DefaultRetention), cmp.Or(h.Keep, DefaultKeep))
	if err != nil {
		return err
	}
	if d+e > 0 {
		h.Log.InfoContext(ctx, "pruned the webhook outbox", "deliveries", d, "events", e)
	}
	return nil
}

func (h Handler) lease() time.Duration {
	if h.Lease > 0 {
		return h.Lease
	}
	return notify.DefaultLease
}

// Dispatch is the webhook:dispatch task: it claims the due deliveries and enqueues them.
func (h Handler) Dispatch(ctx context.Context, _ *asynq.Task) error {
	_, err := h.DispatchDue(ctx)
	return err
}

// DispatchDue claims and enqueues the due deliveries, returning how many.
func (h Handler) DispatchDue(ctx context.Context) (int, error) {
	// Neither the claim nor the hand-over ends with the pass's own deadline (one period, 2 s),
	// which a loaded machine reaches between them: a claim committed whose answer is cut off,
	// or a hand-over stopped half-way, leaves its deliveries waiting out their lease.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handOverTimeout)
	defer cancel()
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
	url, sigs, err := notify.Unseal(h.Box, w.Webhook, time.Now())
	if err != nil {
		return store.DeliveryOutcome{}, fmt.Errorf("%w: %w", asynq.SkipRetry, err)
	}
	if kind == notify.KindSlack {
		slot := h.slackKey(url)
		wait, err := h.slackSlot(ctx, slot)
		if err != nil {
			return store.DeliveryOutcome{}, err
		}
		if wait > 0 {
			// Slack takes about one message per second per destination: this attempt goes
			// back to the queue, the claim still held, instead of occupying a slot.
			return store.DeliveryOutcome{}, h.Enqueue.Enqueue(ctx, queue.NewWebhookDeliver(h.Queues, p.DeliveryID, p.Attempt), asynq.ProcessIn(wait))
		}
		defer h.slackRearm(ctx, slot)
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

// slackSpacing is the least time between two messages to one Slack destination, counted from
// the end of one request to the start of the next, so that it holds at Slack's end too.
const slackSpacing = time.Second

// slackKey is the Redis key of a Slack destination's slot: per URL, not per subscription, since
// Slack's limit is the destination's and two subscriptions may post to one channel. The URL is
// the destination's credential: the key holds only a hash of it.
func (h Handler) slackKey(url string) string {
	sum := sha256.Sum256([]byte(url))
	return h.Namespace + ":webhook:slack:" + hex.EncodeToString(sum[:16])
}

// slackSlot takes a Slack destination's slot, or says how long to wait. The slot is held for
// the whole attempt (bounded by the sender's timeout, so that a worker dying mid-send frees it)
// and slackRearm then keeps it slackSpacing longer.
func (h Handler) slackSlot(ctx context.Context, key string) (time.Duration, error) {
	ok, err := h.Redis.SetNX(ctx, key, 1, h.Sender.Timeout()+slackSpacing).Result()
	if err != nil || ok {
		return 0, err
	}
	ttl, err := h.Redis.PTTL(ctx, key).Result()
	if err != nil {
		return 0, err
	}
	return max(min(ttl, slackSpacing), 50*time.Millisecond), nil
}

// slackRearm keeps the slot taken until slackSpacing after the attempt ended.
func (h Handler) slackRearm(ctx context.Context, key string) {
	if err := h.Redis.Set(context.WithoutCancel(ctx), key, 1, slackSpacing).Err(); err != nil {
		// The slot then expires on its own, a timeout later: only the spacing is shorter.
		h.Log.WarnContext(ctx, "re-arm the Slack destination's slot", "error", err)
	}
}

func ptr[T any](v T) *T { return &v }
