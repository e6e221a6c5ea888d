// Package gate is the per-Proxmox-node build gate: one build at a time per node, in FIFO order
// per node, different nodes in parallel, across any number of worker processes. The state lives
// in Redis; the benchmark in bench_test.go measures what it promises (makespan, hand-off gap,
// FIFO order).
//
// # The primitive
//
// A gate is a lease with an owner token (the Asynq task ID of the build step's attempt), granted
// only to the first live waiter of the node's line, renewed every TTL/3 while held, released
// only by its owner (compare-and-delete), and free again at most TTL after its holder died. Each
// grant gets a fencing token from INCR; record it on the step, so that two holders (after a
// partition or a Redis failover, which this design cannot exclude) show up in the data.
//
// The line is a sorted set scored by when the step became ready: run:advance calls Enqueue, so
// the order does not depend on which worker happens to pick a task first; a TryAcquire without a
// prior Enqueue queues at its own first contact. A waiter that has not asked for StaleAfter is
// skipped so that a dead waiter cannot block the line, but keeps its place should it come back;
// after 10 × StaleAfter it is removed. All times are the Redis server's (TIME), never a worker's.
//
// Every operation is one Lua script over the node's keys, which share a {node} hash tag so they
// live in one Redis Cluster slot:
//
//	<prefix>:gate:{<node>}:lock          HASH owner, since (µs), fence; PEXPIRE = TTL
//	<prefix>:gate:{<node>}:waiters       ZSET owner → ready at (µs); expires after 10 × StaleAfter idle
//	<prefix>:gate:{<node>}:seen          HASH owner → last asked (µs); same expiry
//	<prefix>:gate:{<node>}:fence         STRING counter, INCR per grant; never expires (monotonic)
//	<prefix>:gate:{<node>}:wake:<owner>  LIST, pushed on release to unblock owner's Acquire
//	<prefix>:gate:{<node>}:left:<owner>  STRING, set by Leave: owner is never queued again
//
// Losing the lease (renewal finds another owner, or Redis is unreachable for two thirds of the
// TTL) cancels Lease.Context with a cause wrapping ErrLost: the holder stops its work (Terraform
// gets an interrupt) and starts no new side effect. It still calls Release, which then reports
// ErrNotHolder and leaves the new holder alone.
//
// # Waiting without holding a worker slot
//
// A busy gate is not a failure, and waiting must not hold an Asynq worker slot for long. The
// build handler takes the gate inside the handler with Acquire: the waiter first in line waits
// there for at most `wait` (woken by the release itself through a Redis list, so a hand-off
// costs a round trip or two); everyone else returns the *BusyError at once. The handler returns
// that error to Asynq, whose IsFailure does not count it and whose RetryDelayFunc answers
// BusyRetryDelay (3–5 s for the first in line, 3 s more per place behind it, at most 10 s).
// Whenever a waiter becomes first in line — at a grant (the one behind the new holder) and at a
// release — the gate's Waker (AsynqWaker) moves its task from the retry set to pending with
// Inspector.RunTask, so it is already waiting in Acquire when the holder releases. The
// jittered retry delay is only the backstop for a lost wake-up.
//
//	g, _ := gate.New(rdb, gate.Config{Wake: gate.AsynqWaker(inspector, queue.Steps)})
//	srv := asynq.NewServer(redisOpt, asynq.Config{
//		Queues:                   map[string]int{queue.Steps: 1},
//		IsFailure:                func(err error) bool { return !gate.IsBusy(err) },
//		RetryDelayFunc: func(n int, err error, t *asynq.Task) time.Duration {
//			if gate.IsBusy(err) {
//				return gate.BusyRetryDelay(err)
//			}
//			return asynq.DefaultRetryDelayFunc(n, err, t)
//		},
//		TaskCheckInterval:        50 * time.Millisecond,  // idle pickup ≈ 0.54 × this
//		DelayedTaskCheckInterval: 250 * time.Millisecond, // retry/scheduled granularity
//		ShutdownTimeout:          90 * time.Second,       // above terraform-exec's 60 s stop
//	})
//
//	// run:advance, for each machine step it enqueues (TaskID = step id + attempt):
//	g.Enqueue(ctx, node, taskID, step.ReadyAt, true) // true: nothing to read before its turn
//	client.Enqueue(task, asynq.TaskID(taskID), asynq.Queue(queue.Steps),
//		asynq.MaxRetry(3), asynq.Timeout(2*time.Hour))
//
//	// step:run handler:
//	lease, err := g.Acquire(ctx, node, asynq.GetTaskID(ctx), 2*time.Second)
//	if err != nil {
//		return err // busy: not a failure, retried soon; otherwise a real (transient) error
//	}
//	defer lease.Release(ctx) // after Terraform has exited; wakes the next waiter
//	... upload cloud-init, apply, under lease.Context() ...
//
// Asynq requires MaxRetry ≥ 1 for this to work at all: its processor archives a task whose
// retry count is used up before it looks at IsFailure (asynq's processor.go, retryOrArchive). Give the task an explicit
// Timeout (the default is 30 min). All gated tasks of one Gate must live in the queue its
// AsynqWaker names, with the owner token as TaskID. A cancelled step calls Leave, which takes
// it out of line at once and for good: its task may still be waiting in Acquire, or be delivered
// again, and its next ask would otherwise queue it again at the back, where it would stay live
// — ahead of every build that comes later — for StaleAfter after its last ask. Its Acquire gets
// ErrLeft instead.
//
// # Known limits
//
//   - Redis is not a consensus system: a holder that stalls past its TTL (GC pause, partition)
//     or a Sentinel failover that loses the lock can let a second holder start. Renewal at
//     TTL/3, cancellation on loss and the fencing token narrow and expose the window; they do not
//     close it.
//   - FIFO holds among live waiters. A waiter skipped as stale (its task waited in Asynq longer
//     than StaleAfter) is passed by those behind it until it asks again.
//   - A waiter that never acquires and never leaves (its step was abandoned without Leave)
//     delays the line by StaleAfter when it reaches the head.
package gate
