// Package reconcile is the workers' periodic repair pass. Postgres is the truth and Redis only
// delivers, so anything Redis loses is found again here: the pass is idempotent and cheap when
// there is nothing to do, and every replica's scheduler may trigger it.
package reconcile

import (
	"context"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/shared/store"
)

// IdempotencyRetention is how long Idempotency-Keys are kept.
const IdempotencyRetention = 24 * time.Hour

// Handler runs the reconcile pass.
type Handler struct {
	DB  *pgxpool.Pool
	Log *slog.Logger
}

// ProcessTask implements asynq.Handler.
func (h Handler) ProcessTask(ctx context.Context, _ *asynq.Task) error {
	expired, err := store.IdempotencyExpire(ctx, h.DB, IdempotencyRetention)
	if err != nil {
		return err
	}
	if expired > 0 {
		h.Log.InfoContext(ctx, "expired idempotency keys", "count", expired)
	}
	return nil
}
