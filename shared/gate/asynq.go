package gate

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/hibiken/asynq"
)

// BusyRetryDelay returns how long a task that found its gate busy (err, a *BusyError) should
// wait before it asks again. It is the backstop only: the Waker brings a waiter forward as soon
// as it is first in line. The first in line asks again in 3 to 5 s; one further back, whom
// only the builds ahead of it can bring forward, 3 s more per place, up to
// MaxBusyRetryDelay — each ask reloads the step, so a line of sixty need not ask sixty times
// as often as it moves. Jittered so that waiters do not ask in step; every delay stays well
// below StaleAfter, the silence after which a waiter loses its place.
// Use it in asynq.Config.RetryDelayFunc for errors IsBusy reports.
func BusyRetryDelay(err error) time.Duration {
	place := 1
	var busy *BusyError
	if errors.As(err, &busy) {
		place = max(busy.Position, 1)
	}
	base := min(time.Duration(place)*3*time.Second, MaxBusyRetryDelay-busyJitter)
	return base + rand.N(busyJitter)
}

// MaxBusyRetryDelay is the longest BusyRetryDelay.
const MaxBusyRetryDelay = 10 * time.Second

// busyJitter spreads the asks of waiters at one place.
const busyJitter = 2 * time.Second

// AsynqWaker returns a Waker for gated tasks in queue whose task IDs are the gate owner tokens.
// It moves the owner's task from the scheduled or retry set to pending with Inspector.RunTask.
// A task that is still active (it has just found the gate busy, or waits in Acquire) is tried
// again; a pending task needs nothing; a missing, archived or completed one is left alone, and
// errors are dropped: the waiter's own retry delay is the backstop.
func AsynqWaker(insp *asynq.Inspector, queue string) Waker {
	return func(ctx context.Context, node, owner string) bool {
		info, err := insp.GetTaskInfo(queue, owner)
		if err != nil {
			return true
		}
		switch info.State {
		case asynq.TaskStateActive:
			return false
		case asynq.TaskStateScheduled, asynq.TaskStateRetry:
			// Fails if the task changed state since GetTaskInfo; look again.
			return insp.RunTask(queue, owner) == nil
		default:
			return true
		}
	}
}
