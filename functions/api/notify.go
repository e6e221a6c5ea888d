package api

import (
	"context"

	"horizon/shared/announce"
	"horizon/shared/events"
)

// Notify publishes events after the change they announce committed. A lost event costs
// followers a refresh, not correctness (they reload on reset), so failures are only logged.
func (d Deps) Notify(ctx context.Context, evs ...events.Event) { d.Announce().Publish(ctx, evs...) }

// Announce is the after-commit path of a run change made by a request (shared/announce).
func (d Deps) Announce() announce.Announcer {
	return announce.Announcer{Events: d.Events, Redis: d.Redis, Enqueue: d.Queue, Queues: d.Queues, Namespace: d.Namespace, Log: d.Log}
}
