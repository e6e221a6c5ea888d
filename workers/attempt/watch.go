package attempt

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"horizon/shared/horizon"
	"horizon/shared/queue"
	"horizon/shared/store"
)

// ErrCanceled is the cause (context.Cause) of a watched attempt's context when its run is being
// canceled.
var ErrCanceled = errors.New("the run is being canceled")

// watchOpts says which attempt of which step watch watches, and how.
type watchOpts struct {
	DB        *pgxpool.Pool
	Redis     redis.UniversalClient
	Namespace string
	Heartbeat time.Duration
	Run, Step uuid.UUID
	Attempt   int
	Log       *slog.Logger
}

// watch returns a context that ends when the run is canceled — announced on Redis
// (queue.CancelChannel), or seen in Postgres at a heartbeat; its cause is then ErrCanceled — or
// when this attempt stops owning the step; meanwhile it refreshes the step's heartbeat every
// o.Heartbeat. The returned function stops watching and must be called. Step handlers of every
// kind (step:run, iso:stage) share it, so that cancel and liveness work the same for all runs.
func watch(parent context.Context, o watchOpts) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sub := o.Redis.Subscribe(ctx, queue.CancelChannel(o.Namespace))
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A panic here would end the worker process; it ends the work instead, which then
		// fails the step with the *PanicError (run).
		defer recovered(ctx, o.Log, "cancel watch", func(perr error) { cancel(perr) })
		tick := time.NewTicker(o.Heartbeat)
		defer tick.Stop()
		msgs := sub.Channel()
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-msgs:
				if m != nil && m.Payload == o.Run.String() {
					cancel(ErrCanceled)
					return
				}
			case <-tick.C:
				owned, err := store.StepHeartbeat(ctx, o.DB, o.Step, o.Attempt)
				if err == nil && !owned {
					cancel(errors.New("the step was handed to another attempt"))
					return
				}
				if run, err := store.RunGet(ctx, o.DB, o.Run); err == nil && run.State == horizon.RunCanceling {
					cancel(ErrCanceled)
					return
				}
			}
		}
	}()
	return ctx, func() {
		cancel(nil)
		<-done
		_ = sub.Close() // a subscription we are done with
	}
}
