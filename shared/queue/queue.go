// Package queue names Horizon's Asynq tasks and builds them: one constant per task type
// (<area>:<verb>), one small payload struct of ids per type, and one constructor per type that
// sets the queue, MaxRetry, Timeout and a deterministic TaskID explicitly — Asynq's defaults (25
// retries, 30 minutes) are never what we want by accident.
//
// Postgres is the truth and Redis only delivers: payloads carry ids, handlers re-read the rows,
// and a lost task is re-enqueued by the reconciler.
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"horizon/shared/horizon"
)

// Task types.
const (
	// TypeReconcile is the periodic repair pass: it re-drives runs that Redis lost and deletes
	// expired records.
	TypeReconcile = "reconcile:run"
	// TypeRunAdvance moves a run forward: queues the steps of its current phase, holds what an
	// earlier failure makes unreachable, finishes the run when nothing is left.
	TypeRunAdvance = "run:advance"
	// TypeStepRun executes one attempt of one step.
	TypeStepRun = "step:run"
	// TypeStackTags writes a stack's labels to its VMs as Proxmox tags (no Terraform run).
	TypeStackTags = "stack:tags"
	// TypeISOStage executes one attempt of one step of an ISO run: a build stage, a clone, or
	// the removal. Its payload is a StepRun.
	TypeISOStage = "iso:stage"
	// TypeActionRun executes one attempt of the step of an action run (a script action on one
	// machine of the stack).
	TypeActionRun = "action:run"
	// TypeNagiosPublish executes one attempt of a nagios_publish or nagios_unpublish step.
	TypeNagiosPublish = "nagios:publish"
	// TypeNagiosDiscover re-reads what every registered Nagios server offers (host groups,
	// commands); scheduled every NagiosDiscoverInterval.
	TypeNagiosDiscover = "nagios:discover"
	// TypeDriftSchedule is the periodic drift pass: it enqueues one drift:check per Proxmox
	// server that has machines to compare.
	TypeDriftSchedule = "drift:schedule"
	// TypeDriftCheck compares the machines of one Proxmox server with what Horizon set on them.
	TypeDriftCheck = "drift:check"
	// TypeWebhookDeliver sends one attempt of one webhook delivery.
	TypeWebhookDeliver = "webhook:deliver"
	// TypeWebhookDispatch enqueues the webhook deliveries that are due (the outbox's sweep);
	// scheduled every WebhookDispatchInterval and run by the reconcile pass too.
	TypeWebhookDispatch = "webhook:dispatch"
	// TypeWebhookPrune deletes the outbox's old finished deliveries and events; scheduled
	// every WebhookPruneInterval.
	TypeWebhookPrune = "webhook:prune"
)

// Queues are the Asynq queue names of one installation. Control tasks (advancing runs,
// reconciling) have their own queue, served with priority, so that long builds holding the
// worker slots never delay them.
type Queues struct {
	Control string
	Build   string
	// Notify carries webhook deliveries. A pool of workers of its own serves it (worker.New),
	// so that slow or dead destinations never take the slots deploys run in.
	Notify string
}

// Names returns the queues of namespace (HORIZON_NAMESPACE). Asynq has no key prefix, so the
// namespace is carried in the queue names.
func Names(namespace string) Queues {
	return Queues{Control: namespace + "-control", Build: namespace + "-build", Notify: namespace + "-notify"}
}

// Weights is the Asynq server's Queues setting: control first.
func (q Queues) Weights() map[string]int {
	return map[string]int{q.Control: 6, q.Build: 4}
}

// NagiosDiscoverInterval is how often the workers re-discover the Nagios servers.
const NagiosDiscoverInterval = 10 * time.Minute

// Periodic is the payload of a periodic task (reconcile:run, nagios:discover, …): the time slot
// it runs for, numbered from the Unix epoch in periods.
type Periodic struct {
	Slot   int64         `json:"slot"`
	Period time.Duration `json:"period"`
}

// Slot is the number of the time slot of length period that holds at: every replica computes
// the same number for the same wall-clock slot.
func Slot(at time.Time, period time.Duration) int64 {
	return at.UnixNano() / int64(period)
}

// PeriodicTaskID is the Asynq task id of the run of periodic task type typ for one slot.
func PeriodicTaskID(typ string, period time.Duration, slot int64) string {
	return fmt.Sprintf("periodic:%s:%s:%d", typ, period, slot)
}

// NewPeriodic returns the task of type typ for the slot of length period that holds at. Its
// TaskID is derived from the slot and the task is kept (Retention) for a period after it
// finished, so that however many replicas enqueue it for one slot, Asynq runs it once:
// asynq.Unique would not do, since its lock goes when the task finishes and a replica whose
// clock ticks a little later would enqueue the slot again.
func NewPeriodic(q Queues, typ string, period time.Duration, at time.Time) *asynq.Task {
	slot := Slot(at, period)
	payload, _ := json.Marshal(Periodic{Slot: slot, Period: period}) // two numbers always marshal
	return asynq.NewTask(typ, payload, asynq.Queue(q.Control), asynq.TaskID(PeriodicTaskID(typ, period, slot)),
		asynq.MaxRetry(0), asynq.Timeout(period), asynq.Retention(period))
}

// DriftInterval is the default period of the drift pass (HORIZON_DRIFT_INTERVAL).
const DriftInterval = 5 * time.Minute

// DriftCheck is the payload of drift:check. Stacks are stacks an operator asked to check
// (POST /v1/stacks/{id}/drift-check): checked even when their last run failed.
type DriftCheck struct {
	ServerID uuid.UUID   `json:"server_id"`
	Stacks   []uuid.UUID `json:"stacks,omitempty"`
}

// DriftCheckTimeout bounds one check of one server.
const DriftCheckTimeout = 5 * time.Minute

// NewDriftCheck returns a drift:check task of a server. A period, when not 0, makes its TaskID
// unique to the server and the current slot of that period (kept for a period once done), so
// that replicas or a redelivered schedule enqueue one check per server and period; on-demand
// checks pass 0.
// It is not retried: the next period checks again, and a check that finds another running
// on its server skips.
func NewDriftCheck(q Queues, p DriftCheck, period time.Duration, now time.Time) *asynq.Task {
	payload, _ := json.Marshal(p)
	opts := []asynq.Option{asynq.Queue(q.Control), asynq.MaxRetry(0), asynq.Timeout(DriftCheckTimeout)}
	if period > 0 {
		slot := now.UnixNano() / int64(period)
		opts = append(opts, asynq.TaskID(fmt.Sprintf("drift:%s:%d", p.ServerID, slot)), asynq.Retention(period))
	}
	return asynq.NewTask(TypeDriftCheck, payload, opts...)
}

// WebhookDispatchInterval is how often the workers look for due webhook deliveries: what bounds
// how long after its commit an event leaves.
const WebhookDispatchInterval = 2 * time.Second

// WebhookPruneInterval is how often the outbox is pruned: retention is counted in days, so an
// hour late is nothing, and each pass is short.
const WebhookPruneInterval = time.Hour

// WebhookDeliver is the payload of webhook:deliver: the attempt number (1 for the first).
type WebhookDeliver struct {
	DeliveryID uuid.UUID `json:"delivery_id"`
	Attempt    int       `json:"attempt"`
}

// NewWebhookDeliver returns the task of one attempt of a delivery. It carries no task id: the
// dispatch sweep claims a delivery in Postgres (a lease) before enqueuing it, which is what keeps
// one attempt from being queued twice, and a task lost with its worker is enqueued again when
// the lease ends. Asynq does not retry it (the delivery's own schedule does, from Postgres).
func NewWebhookDeliver(q Queues, delivery uuid.UUID, attempt int) *asynq.Task {
	payload, _ := json.Marshal(WebhookDeliver{DeliveryID: delivery, Attempt: attempt})
	return asynq.NewTask(TypeWebhookDeliver, payload, asynq.Queue(q.Notify), asynq.MaxRetry(0),
		asynq.Timeout(2*time.Minute), asynq.Retention(time.Hour))
}

// RunAdvance is the payload of run:advance.
type RunAdvance struct {
	RunID uuid.UUID `json:"run_id"`
}

// NewRunAdvance returns a run:advance task. It is idempotent, so duplicates are harmless; the
// task id is left to Asynq because the same run is advanced many times.
func NewRunAdvance(q Queues, run uuid.UUID) *asynq.Task {
	payload, _ := json.Marshal(RunAdvance{RunID: run}) // a struct of a uuid always marshals
	return asynq.NewTask(TypeRunAdvance, payload, asynq.Queue(q.Control), asynq.MaxRetry(10), asynq.Timeout(time.Minute))
}

// StepRun is the payload of step:run.
type StepRun struct {
	StepID  uuid.UUID `json:"step_id"`
	Attempt int       `json:"attempt"`
	// Gate is the node whose build gate the step takes (GateNode), "" for none: a step waiting
	// behind others for its node asks the gate before it reads anything from Postgres. Tasks
	// queued before it existed lack it, and read the step first.
	Gate string `json:"gate,omitempty"`
}

// StepTaskID is the Asynq task id of a step's attempt. It is also the step's owner token at its
// node's gate, so that the releasing holder can wake it by id.
func StepTaskID(step uuid.UUID, attempt int) string {
	return fmt.Sprintf("step:%s:%d", step, attempt)
}

// ParseStepTaskID is the inverse of StepTaskID.
func ParseStepTaskID(id string) (uuid.UUID, int, bool) {
	rest, ok := strings.CutPrefix(id, "step:")
	if !ok {
		return uuid.Nil, 0, false
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return uuid.Nil, 0, false
	}
	step, err1 := uuid.Parse(rest[:i])
	attempt, err2 := strconv.Atoi(rest[i+1:])
	return step, attempt, err1 == nil && err2 == nil
}

// GateNode names a Proxmox node at the build gate: node names are unique only within their
// cluster, so the server's id is part of it.
func GateNode(server uuid.UUID, node string) string { return server.String() + "/" + node }

// StepTimeout bounds one attempt of a step (Terraform applies of large VMs take long; Asynq's
// default of 30 minutes would cut them).
const StepTimeout = 3 * time.Hour

// NewStep returns the task that runs step s's current attempt, by its kind: iso:stage for the
// steps of ISO runs, action:run for those of action runs, nagios:publish for Nagios steps,
// step:run for the others. Each task
// type is handled by one kind of attempt (workers/attempt.Kind), which knows its steps.
func NewStep(q Queues, s horizon.Step) *asynq.Task {
	typ := TypeStepRun
	switch {
	case s.Kind.ISO():
		typ = TypeISOStage
	case s.Kind.Action():
		typ = TypeActionRun
	case s.Kind.Nagios():
		typ = TypeNagiosPublish
	}
	p := StepRun{StepID: s.ID, Attempt: s.Attempt}
	if s.TakesGate() {
		p.Gate = GateNode(*s.ServerID, *s.Node)
	}
	payload, _ := json.Marshal(p)
	return asynq.NewTask(typ, payload, asynq.Queue(q.Build), asynq.TaskID(StepTaskID(s.ID, s.Attempt)),
		asynq.MaxRetry(5), asynq.Timeout(StepTimeout), asynq.Retention(time.Hour))
}

// CancelChannel is the Redis pub/sub channel on which the API announces that a run is being
// canceled (payload: the run id), so that the worker running one of its steps interrupts it at
// once. Workers also notice a canceling run at their next heartbeat: a lost message only delays
// the cancel.
func CancelChannel(namespace string) string { return namespace + ":cancel" }

// WaiterBeatKey is the Redis key whose presence says that the attempt owner (StepTaskID), waiting
// for its node, has written its heartbeat within the last interval; it lives one interval.
func WaiterBeatKey(namespace, owner string) string { return namespace + ":beat:" + owner }

// PublishedChannel is the Redis pub/sub channel on which the API announces a template version
// it has just published (payload: Published), so that every worker host checks out and
// initialises its modules before the version's first deploy needs them. A host that misses the
// message does that work at the version's first step instead.
func PublishedChannel(namespace string) string { return namespace + ":template-published" }

// Published is the payload of PublishedChannel.
type Published struct {
	TemplateID uuid.UUID `json:"template_id"`
	Version    int       `json:"version"`
}

// StackTags is the payload of stack:tags.
type StackTags struct {
	StackID uuid.UUID `json:"stack_id"`
}

// NewStackTags returns the stack:tags task of a stack. It reads the labels when it runs, so
// duplicates and reorderings converge on the latest labels.
func NewStackTags(q Queues, stack uuid.UUID) *asynq.Task {
	payload, _ := json.Marshal(StackTags{StackID: stack})
	return asynq.NewTask(TypeStackTags, payload, asynq.Queue(q.Control), asynq.MaxRetry(10), asynq.Timeout(2*time.Minute))
}

// Enqueuer enqueues tasks; a duplicate (same TaskID, or inside a Unique window) counts as
// success, because it means the work is already queued.
type Enqueuer struct {
	Client *asynq.Client
}

// Enqueue enqueues t.
func (e Enqueuer) Enqueue(ctx context.Context, t *asynq.Task, opts ...asynq.Option) error {
	_, err := e.Client.EnqueueContext(ctx, t, opts...)
	if err == nil || errors.Is(err, asynq.ErrTaskIDConflict) || errors.Is(err, asynq.ErrDuplicateTask) {
		return nil
	}
	return fmt.Errorf("enqueue %s: %w", t.Type(), err)
}
