// Package attempt owns the life of one attempt of one step, for every kind of step a run has —
// a stack's build or destroy (workers/steps), an ISO's stage (workers/isos), and any kind added
// later. A kind writes only its work (Kind: load it, say whether it is needed, do it); this
// package does the rest, the same way for all:
//
//  1. decode the task and load the step; a delivery for an attempt that no longer owns the
//     step is ignored (ErrStale), an object deleted since the deploy fails it at once (Gone);
//     a step that already asked for its node and is still behind another waiter is handed
//     back at once, neither its step nor its work read again (its task names its node:
//     queue.StepRun.Gate, gate.Gate.Behind), and one superseded meanwhile leaves the line;
//  2. end a step whose run is being canceled, or that has nothing to do, without building —
//     and take it out of its node's line, so the steps behind it need not wait;
//  3. claim the step: take its node's build gate when it builds on a node (claim), then mark
//     the attempt started with the gate's fencing token; a busy gate is handed back to Asynq
//     without counting as a failure;
//  4. watch it: a cancel announced on Redis or seen at a heartbeat ends the work's context
//     (ErrCanceled), and the heartbeat proves the attempt alive (watch);
//  5. run the work with its log open, and sort how it ended: canceled, failed with the first
//     line of its error (masked), succeeded or skipped with what it produced — or handed back
//     to Asynq when the gate's lease was lost, the worker is stopping, or our own Postgres or
//     Redis failed; a panic in the work fails the step (with the panic in the worker's log)
//     instead of leaving it running while Asynq retries it. So does a panic anywhere else in
//     the attempt, and in the goroutines the lifecycle starts (Prepare beside the claim, the
//     cancel watch): an unrecovered panic in a goroutine ends the whole worker process and
//     every step it is running (PanicError);
//  6. close the log (every line stored) and finish: the step's end and what it produced are
//     written in one transaction fenced by the attempt, then announced; once the node's gate
//     is released the run is advanced in process (Lifecycle.Advance: run:advance's own code,
//     idempotent under the run's lock), or, when that fails, run:advance is enqueued.
//
// Delivery is at least once: the attempt number fences every write, so a superseded attempt's
// writes match no row.
package attempt
