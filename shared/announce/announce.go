// Package announce is the one "after commit" path of a run change, for the API and the
// workers alike: publish the change's events, tell the workers of a cancel, and enqueue the
// run's next advance; and of a template version's publication, which the workers prepare for.
//
// It runs after the transaction that made the change has committed, so nothing here may fail
// the request or task: each failure is logged and made good elsewhere — a run whose advance was
// not enqueued is found by the reconciler, a cancel not announced is seen by the workers at
// their next heartbeat, and an event not published is a follower refreshing late.
package announce

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"horizon/shared/events"
	"horizon/shared/queue"
)

// Announcer announces committed run changes. The zero value is not usable.
type Announcer struct {
	Events    *events.Publisher
	Redis     redis.UniversalClient // the cancel channel
	Enqueue   queue.Enqueuer
	Queues    queue.Queues
	Namespace string
	Log       *slog.Logger
}

// AfterCommitTimeout bounds one announcement. Its context is detached from the caller's
// cancellation: the change has committed, and a request whose deadline passes meanwhile (a deploy
// that waited its turn under a burst of them) or a worker that is stopping must still announce
// it, or the run waits for the reconciler's next pass.
const AfterCommitTimeout = 5 * time.Second

// afterCommit is the context of an announcement made under ctx (see AfterCommitTimeout).
func afterCommit(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}

// Publish publishes events, logging the ones that fail.
func (a Announcer) Publish(ctx context.Context, evs ...events.Event) {
	ctx, cancel := afterCommit(ctx, AfterCommitTimeout)
	defer cancel()
	for _, e := range evs {
		if _, err := a.Events.Publish(ctx, e); err != nil {
			a.Log.WarnContext(ctx, "publish event", "type", e.Type, "id", e.ID, "error", err)
		}
	}
}

// Changed publishes a run's change and enqueues its next advance.
func (a Announcer) Changed(ctx context.Context, run uuid.UUID, evs ...events.Event) {
	ctx, cancel := afterCommit(ctx, AfterCommitTimeout)
	defer cancel()
	a.Publish(ctx, evs...)
	if err := a.Enqueue.Enqueue(ctx, queue.NewRunAdvance(a.Queues, run)); err != nil {
		a.Log.WarnContext(ctx, "enqueue run advance; the reconciler will do it", "run_id", run, "error", err)
	}
}

// Canceling publishes a run's cancel, tells the workers running its steps at once, and
// enqueues its next advance (which cancels the steps not started yet).
func (a Announcer) Canceling(ctx context.Context, run uuid.UUID, evs ...events.Event) {
	ctx, cancel := afterCommit(ctx, AfterCommitTimeout)
	defer cancel()
	a.Publish(ctx, evs...)
	if err := a.Redis.Publish(ctx, queue.CancelChannel(a.Namespace), run.String()).Err(); err != nil {
		a.Log.WarnContext(ctx, "announce cancel; workers will see it at their next heartbeat", "run_id", run, "error", err)
	}
	if err := a.Enqueue.Enqueue(ctx, queue.NewRunAdvance(a.Queues, run)); err != nil {
		a.Log.WarnContext(ctx, "enqueue run advance; the reconciler will do it", "run_id", run, "error", err)
	}
}

// Published tells every worker host of a template version just published, so that each checks
// its modules out and initialises them before its first deploy (queue.PublishedChannel). It
// waits at most a second for Redis: the request that published has committed and must not hang
// on an optimisation.
func (a Announcer) Published(ctx context.Context, template uuid.UUID, version int) {
	ctx, cancel := afterCommit(ctx, time.Second)
	defer cancel()
	payload, _ := json.Marshal(queue.Published{TemplateID: template, Version: version})
	if err := a.Redis.Publish(ctx, queue.PublishedChannel(a.Namespace), payload).Err(); err != nil {
		a.Log.WarnContext(ctx, "announce a published template version; its first steps prepare it instead",
			"template_id", template, "version", version, "error", err)
	}
}
