package gate

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/hibiken/asynq"
)

// BusyRetryDelay returns how long a task that found its gate busy should wait before it asks
// again: 3 to 5 s, jittered so that waiters do not ask in step. It is the backstop only; the
// Waker normally brings a waiter forward as soon as it is first in line. Use it in
// asynq.Config.RetryDelayFunc for errors IsBusy reports.
func BusyRetryDelay() time.Duration {
	return 3*time.Second + rand.N(MaxBusyRetryDelay-3*time.Second)
}

// MaxBusyRetryDelay is the longest BusyRetryDelay.
const MaxBusyRetryDelay = 5 * time.Second

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
