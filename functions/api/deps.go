package api

import (
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"horizon/functions/authcache"
	"horizon/functions/stream"
	"horizon/shared/auth"
	"horizon/shared/events"
	"horizon/shared/gate"
	"horizon/shared/gitsource"
	"horizon/shared/logstream"
	"horizon/shared/notify"
	"horizon/shared/queue"
	"horizon/shared/secrets"
)

// Deps is what endpoint constructors close over. Every field is safe for concurrent use.
type Deps struct {
	DB    *pgxpool.Pool
	Redis redis.UniversalClient
	Box   *secrets.Box
	Log   *slog.Logger
	// Auth caches authenticated tokens; handlers that revoke or weaken one call Auth.Forget.
	Auth *authcache.Cache
	// Git is the local cache of git sources (HORIZON_GIT_CACHE_DIR) through which template
	// uploads resolve branches and inspect modules.
	Git *gitsource.Cache
	// Gate is the per-node build gate, read to show who a waiting step waits for.
	Gate *gate.Gate
	// Events announces state changes to /v1/events followers (after the change commits).
	Events *events.Publisher
	// Queue enqueues tasks for the workers, on Queues.
	Queue  queue.Enqueuer
	Queues queue.Queues
	// Namespace prefixes Redis keys (HORIZON_NAMESPACE).
	Namespace string
	// Logs reads deploy logs: backfills from Redis and Postgres, downloads from Postgres.
	Logs *logstream.Client
	// LogHub and EventHub follow the log and event streams for the live endpoints: one Redis
	// reader per stream per process, fanned out to every client with a bounded buffer each.
	LogHub   *logstream.Hub
	EventHub *events.Hub
	// StreamTokens signs and checks the ?stream_token= of browsers' event streams, which live
	// StreamTokenTTL (at most auth.MaxStreamTokenTTL).
	StreamTokens   *auth.StreamSigner
	StreamTokenTTL time.Duration
	// Streams serves streamed responses (event streams, log downloads) and counts them.
	Streams *stream.Server
	// Webhooks checks webhook destinations and sends the test messages that enabling a
	// subscription and POST /v1/webhooks/{id}/test send (the workers deliver everything else).
	Webhooks *notify.Sender
	// WebhookLease is how long a delivery the API hands to the queue (a test message, a
	// redelivery) stays claimed before the outbox's sweep hands it over again
	// (HORIZON_WEBHOOK_LEASE).
	WebhookLease time.Duration
	// Now is the clock for values computed in Go (most times come from Postgres' now()).
	Now func() time.Time
}
