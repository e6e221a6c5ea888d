package attempt_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/shared/auth"
	"horizon/shared/events"
	"horizon/shared/gate"
	"horizon/shared/horizon"
	"horizon/shared/logstream"
	"horizon/shared/metrics"
	"horizon/shared/queue"
	"horizon/shared/store"
	"horizon/shared/testkit"
	"horizon/workers/attempt"
	"horizon/workers/runs"
)

// toy is the smallest kind of step: what a new kind writes. Each test sets what it does.
type toy struct {
	load     func(ctx context.Context, a attempt.Loaded) (*toyWork, error)
	unneeded func(*toyWork) string
	do       func(ctx context.Context, w *toyWork, log *attempt.Log) (attempt.Result, error)
	ran      atomic.Int32
}

type toyWork struct{ attempt.Loaded }

func (k *toy) Load(ctx context.Context, a attempt.Loaded) (*toyWork, error) {
	w := &toyWork{Loaded: a}
	w.StackID, w.TeamID = *a.Run.StackID, uuid.New()
	w.Label = "toy of " + a.Step.Job
	if k.load != nil {
		return k.load(ctx, w.Loaded)
	}
	return w, nil
}

func (k *toy) Unneeded(w *toyWork) string {
	if k.unneeded != nil {
		return k.unneeded(w)
	}
	return ""
}

func (k *toy) Do(ctx context.Context, w *toyWork, log *attempt.Log, _ *gate.Lease) (attempt.Result, error) {
	k.ran.Add(1)
	return k.do(ctx, w, log)
}

type env struct {
	db        *pgxpool.Pool
	lifecycle *attempt.Lifecycle
	advancer  runs.Advancer
	inspector *asynq.Inspector
	run       horizon.Run
	step      horizon.Step
}

// newEnv makes a stack with a run of one step (no node: it takes no gate) and the lifecycle
// on the test's Postgres and Redis.
func newEnv(t *testing.T) *env { return newEnvOf(t, horizon.Step{}) }

// newEnvOf is newEnv with the step's server and node from s: a step that builds on a node.
func newEnvOf(t *testing.T, s horizon.Step) *env {
	t.Helper()
	ctx := t.Context()
	db := testkit.DB(t)
	rdb, ns := testkit.Redis(t)
	team, err := store.TeamCreate(ctx, db, "team")
	if err != nil {
		t.Fatal(err)
	}
	environment, err := store.EnvironmentCreate(ctx, db, horizon.Environment{Name: "env"})
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _, err := store.TemplateCreate(ctx, db, horizon.Template{Name: "tmpl", Active: true}, horizon.TemplateVersion{
		Definition: []byte(`{"name":"t","phases":[]}`), DefinitionHash: "sha256:1",
		JobCommits: map[string]string{"web": strings.Repeat("0", 40)}, Modules: []byte(`{"jobs":{}}`)})
	if err != nil {
		t.Fatal(err)
	}
	stack, err := store.StackCreate(ctx, db, horizon.Stack{TeamID: team.ID, Name: "s", EnvironmentID: environment.ID, TemplateID: tmpl.ID, TemplateVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	run, steps, err := store.RunInsertWithSteps(ctx, db, horizon.Run{StackID: &stack.ID, Kind: horizon.RunDeploy},
		[]horizon.Step{{Phase: 0, PhaseName: "p", Job: "web", Kind: horizon.StepApply, State: horizon.StepQueued, ServerID: s.ServerID, Node: s.Node}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := gate.New(rdb, gate.Config{Prefix: ns})
	if err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClientFromRedisClient(rdb)
	queues := queue.Names(ns)
	logs, pub, enqueue := logstream.New(rdb, db, logstream.Config{Prefix: ns}), events.NewPublisher(rdb, events.Config{Prefix: ns}), queue.Enqueuer{Client: client}
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	advancer := runs.Advancer{DB: db, Queues: queues, Enqueue: enqueue, Gate: g, Events: pub, Logs: logs, Log: discard}
	return &env{db: db, run: run, step: steps[0], advancer: advancer, inspector: asynq.NewInspectorFromRedisClient(rdb),
		lifecycle: &attempt.Lifecycle{DB: db, Redis: rdb, Gate: g, Logs: logs, Events: pub, Enqueue: enqueue, Queues: queues, Log: discard,
			Namespace: ns, GateWait: time.Second, Heartbeat: 100 * time.Millisecond, Metrics: metrics.NewRecorder(rdb, ns),
			Advance: advancer.Advance}}
}

// process delivers the step's current attempt (or another) to the kind.
func (e *env) process(t *testing.T, k attempt.Kind[*toyWork], attemptNumber int) error {
	t.Helper()
	s := e.step
	s.Attempt = attemptNumber
	return attempt.Process(t.Context(), e.lifecycle, k, queue.NewStep(e.lifecycle.Queues, s))
}

func (e *env) stepNow(t *testing.T) horizon.Step {
	t.Helper()
	s, err := store.StepGet(t.Context(), e.db, e.step.ID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSucceededWorkIsRecordedWithTheStepsEnd(t *testing.T) {
	e := newEnv(t)
	k := &toy{do: func(ctx context.Context, w *toyWork, log *attempt.Log) (attempt.Result, error) {
		log.Say("working")
		return attempt.Result{Reason: "made it", Record: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE stacks SET description = 'recorded' WHERE id = $1`, w.StackID)
			return err
		}}, nil
	}}
	if err := e.process(t, k, e.step.Attempt); err != nil {
		t.Fatal(err)
	}
	s := e.stepNow(t)
	if s.State != horizon.StepSucceeded || s.Reason == nil || *s.Reason != "made it" {
		t.Fatalf("step %s (reason %v), want succeeded with the work's reason", s.State, s.Reason)
	}
	var description string
	if err := e.db.QueryRow(t.Context(), `SELECT description FROM stacks WHERE id = $1`, e.run.StackID).Scan(&description); err != nil || description != "recorded" {
		t.Fatalf("the result's record was not written (%q, %v)", description, err)
	}
}

// TestAFinishedStepMovesItsRunOnOnceItsNodeIsFree: the attempt that recorded a step's end
// advances the run itself — nothing takes run:advance from the queues here, yet the run of one
// step ends and its stack is deployed — and does so after it released the node's gate, so that
// the next build on the node never waits for another run's advance.
func TestAFinishedStepMovesItsRunOnOnceItsNodeIsFree(t *testing.T) {
	server, node := uuid.New(), "pve1"
	e := newEnvOf(t, horizon.Step{ServerID: &server, Node: &node})
	var holder atomic.Value
	e.lifecycle.Advance = func(ctx context.Context, run uuid.UUID) error {
		st, err := e.lifecycle.Gate.Status(ctx, queue.GateNode(server, node))
		if err != nil {
			return err
		}
		holder.Store(st.Holder)
		return e.advancer.Advance(ctx, run)
	}
	k := &toy{do: func(context.Context, *toyWork, *attempt.Log) (attempt.Result, error) { return attempt.Result{}, nil }}
	if err := e.process(t, k, e.step.Attempt); err != nil {
		t.Fatal(err)
	}
	if h, ok := holder.Load().(string); !ok || h != "" {
		t.Fatalf("the run was advanced with the node's gate held by %q (advanced: %v), want after its release", h, ok)
	}
	run, err := store.RunGet(t.Context(), e.db, e.run.ID)
	if err != nil {
		t.Fatal(err)
	}
	stack, err := store.StackGet(t.Context(), e.db, auth.Scope{All: true}, *e.run.StackID)
	if err != nil {
		t.Fatal(err)
	}
	if run.State != horizon.RunSucceeded || stack.State != horizon.StackDeployed {
		t.Fatalf("run %s, stack %s after its only step succeeded; want succeeded and deployed", run.State, stack.State)
	}
	if n := e.advancesQueued(t); n != 0 {
		t.Fatalf("%d run:advance tasks queued for a run advanced in process, want none", n)
	}
}

// TestARunThatCannotBeAdvancedInProcessIsHandedToRunAdvance: when the in-process advance fails
// (here its Postgres pool is closed), the step's end stays recorded and run:advance is queued,
// for any worker to take.
func TestARunThatCannotBeAdvancedInProcessIsHandedToRunAdvance(t *testing.T) {
	e := newEnv(t)
	closed, err := pgxpool.New(t.Context(), e.db.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	e.advancer.DB = closed
	e.lifecycle.Advance = e.advancer.Advance
	k := &toy{do: func(context.Context, *toyWork, *attempt.Log) (attempt.Result, error) { return attempt.Result{}, nil }}
	if err := e.process(t, k, e.step.Attempt); err != nil {
		t.Fatal(err)
	}
	if s := e.stepNow(t); s.State != horizon.StepSucceeded {
		t.Fatalf("step %s, want succeeded", s.State)
	}
	if n := e.advancesQueued(t); n != 1 {
		t.Fatalf("%d run:advance tasks queued after the advance failed, want 1", n)
	}
}

// advancesQueued counts the run:advance tasks of e's run waiting on the control queue.
func (e *env) advancesQueued(t *testing.T) int {
	t.Helper()
	tasks, err := e.inspector.ListPendingTasks(e.lifecycle.Queues.Control)
	if errors.Is(err, asynq.ErrQueueNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, task := range tasks {
		var p queue.RunAdvance
		if task.Type == queue.TypeRunAdvance && json.Unmarshal(task.Payload, &p) == nil && p.RunID == e.run.ID {
			n++
		}
	}
	return n
}

func TestAPanicInTheWorkFailsTheStep(t *testing.T) {
	e := newEnv(t)
	k := &toy{do: func(context.Context, *toyWork, *attempt.Log) (attempt.Result, error) {
		panic("unexpected state: a bug in the work")
	}}
	// Not handed back to Asynq, which would retry the same bug with the step left running.
	if err := e.process(t, k, e.step.Attempt); err != nil {
		t.Fatalf("a panic was handed back to Asynq: %v", err)
	}
	s := e.stepNow(t)
	if s.State != horizon.StepFailed || s.Error == nil || !strings.Contains(*s.Error, "internal error") {
		t.Fatalf("step %s (error %v), want failed with an internal error", s.State, s.Error)
	}
}

func TestAFailureEndsTheStepWithItsFirstLineMasked(t *testing.T) {
	e := newEnv(t)
	k := &toy{do: func(ctx context.Context, w *toyWork, log *attempt.Log) (attempt.Result, error) {
		w.Masker.Add("hunter2-secret")
		return attempt.Result{}, errors.New("login refused for hunter2-secret\nsecond line")
	}}
	if err := e.process(t, k, e.step.Attempt); err != nil {
		t.Fatal(err)
	}
	s := e.stepNow(t)
	if s.State != horizon.StepFailed || s.Error == nil || strings.Contains(*s.Error, "hunter2") || strings.Contains(*s.Error, "second") {
		t.Fatalf("step %s (error %v), want failed with the first line, masked", s.State, s.Error)
	}
}

func TestAStaleDeliveryChangesNothing(t *testing.T) {
	e := newEnv(t)
	k := &toy{do: func(context.Context, *toyWork, *attempt.Log) (attempt.Result, error) { return attempt.Result{}, nil }}
	if err := e.process(t, k, e.step.Attempt+1); err != nil {
		t.Fatal(err)
	}
	if k.ran.Load() != 0 || e.stepNow(t).State != horizon.StepQueued {
		t.Fatalf("a delivery for another attempt ran the work (%d) or changed the step (%s)", k.ran.Load(), e.stepNow(t).State)
	}
}

func TestAGoneObjectFailsTheStepWithoutRunningIt(t *testing.T) {
	e := newEnv(t)
	k := &toy{
		load: func(_ context.Context, a attempt.Loaded) (*toyWork, error) {
			return &toyWork{Loaded: a}, &attempt.Gone{Msg: "the SSH key k of web[0] was deleted"}
		},
		do: func(context.Context, *toyWork, *attempt.Log) (attempt.Result, error) { return attempt.Result{}, nil },
	}
	if err := e.process(t, k, e.step.Attempt); err != nil {
		t.Fatal(err)
	}
	s := e.stepNow(t)
	if k.ran.Load() != 0 || s.State != horizon.StepFailed || s.Error == nil || *s.Error != "the SSH key k of web[0] was deleted" {
		t.Fatalf("ran %d times; step %s (error %v), want failed at once with the message", k.ran.Load(), s.State, s.Error)
	}
}

func TestACancelInterruptsTheWork(t *testing.T) {
	e := newEnv(t)
	started := make(chan struct{})
	k := &toy{do: func(ctx context.Context, _ *toyWork, _ *attempt.Log) (attempt.Result, error) {
		close(started)
		<-ctx.Done()
		return attempt.Result{}, ctx.Err()
	}}
	done := make(chan error, 1)
	go func() { done <- e.process(t, k, e.step.Attempt) }()
	<-started
	if _, err := store.RunSetState(t.Context(), e.db, e.run.ID, horizon.RunCanceling, nil); err != nil {
		t.Fatal(err)
	}
	// Announced on Redis as the API does; the heartbeat would find it in Postgres too.
	if err := e.lifecycle.Redis.Publish(t.Context(), queue.CancelChannel(e.lifecycle.Namespace), e.run.ID.String()).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the work was not interrupted by the cancel")
	}
	if s := e.stepNow(t); s.State != horizon.StepCanceled {
		t.Fatalf("step %s, want canceled", s.State)
	}
}

func TestAStepOfACancelingRunEndsBeforeItsWork(t *testing.T) {
	e := newEnv(t)
	if _, err := store.RunSetState(t.Context(), e.db, e.run.ID, horizon.RunCanceling, nil); err != nil {
		t.Fatal(err)
	}
	k := &toy{do: func(context.Context, *toyWork, *attempt.Log) (attempt.Result, error) { return attempt.Result{}, nil }}
	if err := e.process(t, k, e.step.Attempt); err != nil {
		t.Fatal(err)
	}
	if s := e.stepNow(t); k.ran.Load() != 0 || s.State != horizon.StepCanceled {
		t.Fatalf("ran %d times; step %s, want canceled without running", k.ran.Load(), s.State)
	}
}

// preparing is a toy kind with a Prepare: it says when it prepares, and what it undoes.
type preparing struct {
	toy
	started  chan struct{}
	undone   atomic.Int32
	prepared atomic.Bool
	fail     error // what Prepare returns, when set
	panics   bool  // Prepare panics
}

func (k *preparing) Prepare(ctx context.Context, w *toyWork, log *attempt.Log) (func(), error) {
	close(k.started)
	if k.panics {
		var missing *toyWork
		_ = missing.Label // a nil dereference, as terraform-exec's canceled error had
	}
	if k.fail != nil {
		return nil, k.fail
	}
	log.Say("prepared the module")
	k.prepared.Store(true)
	return func() { k.undone.Add(1) }, nil
}

// gatedEnv is an env whose step builds on a node, and the node's gate held by another build.
func gatedEnv(t *testing.T) (*env, *gate.Lease) {
	server, node := uuid.New(), "pve1"
	e := newEnvOf(t, horizon.Step{ServerID: &server, Node: &node})
	other, err := e.lifecycle.Gate.Acquire(t.Context(), queue.GateNode(server, node), "another-build", 0)
	if err != nil {
		t.Fatal(err)
	}
	return e, other
}

func (e *env) logLines(t *testing.T) []string {
	t.Helper()
	rows, err := e.db.Query(t.Context(), `SELECT text FROM log_lines WHERE run_id = $1 ORDER BY stream_ms, stream_seq`, e.run.ID)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestPrepareRunsWhileTheStepWaitsForItsNode: a kind's Prepare runs while the node's gate is
// still held by the build before, so that the gate is then held only for the build; its log
// lines follow the attempt's first line.
func TestPrepareRunsWhileTheStepWaitsForItsNode(t *testing.T) {
	e, other := gatedEnv(t)
	k := &preparing{started: make(chan struct{})}
	k.do = func(ctx context.Context, w *toyWork, log *attempt.Log) (attempt.Result, error) {
		if !k.prepared.Load() {
			t.Error("Do ran before what was prepared")
		}
		return attempt.Result{}, nil
	}
	done := make(chan error, 1)
	go func() { done <- e.process(t, k, e.step.Attempt) }()
	select {
	case <-k.started: // while the other build holds the gate
	case err := <-done:
		t.Fatalf("the attempt ended (%v) before preparing", err)
	case <-time.After(5 * time.Second):
		t.Fatal("nothing was prepared while the step waited for its node")
	}
	if _, err := other.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the attempt after the gate was released: %v", err)
	}
	if s := e.stepNow(t); s.State != horizon.StepSucceeded || k.undone.Load() != 0 {
		t.Fatalf("step %s, undone %d times; want succeeded with what was prepared kept", s.State, k.undone.Load())
	}
	lines := e.logLines(t)
	if len(lines) < 2 || !strings.Contains(lines[0], "toy of web started") || lines[1] != "prepared the module" {
		t.Fatalf("log %q: want the attempt's first line, then what was prepared", lines)
	}
}

// TestAPreparationThatIsNotUsedIsUndone: when the node stays busy, the attempt is handed back
// to Asynq; what was prepared for it is undone, and its log lines are not kept.
func TestAPreparationThatIsNotUsedIsUndone(t *testing.T) {
	e, _ := gatedEnv(t)
	k := &preparing{started: make(chan struct{})}
	k.do = func(context.Context, *toyWork, *attempt.Log) (attempt.Result, error) { return attempt.Result{}, nil }
	err := e.process(t, k, e.step.Attempt)
	if !gate.IsBusy(err) {
		t.Fatalf("process with the node busy: %v, want the gate's busy error", err)
	}
	if k.ran.Load() != 0 || k.undone.Load() != 1 {
		t.Fatalf("ran %d times, undone %d times; want not run and undone once", k.ran.Load(), k.undone.Load())
	}
	if s := e.stepNow(t); s.State != horizon.StepQueued {
		t.Fatalf("step %s, want still queued", s.State)
	}
	time.Sleep(200 * time.Millisecond) // past a log batch's flush
	if lines := e.logLines(t); len(lines) != 0 {
		t.Fatalf("an attempt that did not run left log lines %q", lines)
	}
}

// TestAPreparationThatFailsFailsTheStep: a Prepare that fails (a module that does not init)
// fails the step with its first line, once the attempt owns it, and Do never runs.
func TestAPreparationThatFailsFailsTheStep(t *testing.T) {
	e, other := gatedEnv(t)
	k := &preparing{started: make(chan struct{}), fail: errors.New("terraform init: provider not found\ndetails")}
	k.do = func(context.Context, *toyWork, *attempt.Log) (attempt.Result, error) { return attempt.Result{}, nil }
	done := make(chan error, 1)
	go func() { done <- e.process(t, k, e.step.Attempt) }()
	<-k.started
	if _, err := other.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s := e.stepNow(t)
	if k.ran.Load() != 0 || s.State != horizon.StepFailed || s.Error == nil || *s.Error != "terraform init: provider not found" {
		t.Fatalf("ran %d times; step %s (error %v); want failed with the preparation's first line, Do not run", k.ran.Load(), s.State, s.Error)
	}
}

// TestAPanicInAPreparationFailsTheStep: a Prepare runs in a goroutine of its own beside the
// claim of the node's gate, outside Do's recovery; a panic there ended the worker process and
// every step it ran. It fails this step with an internal error, and the worker goes on.
func TestAPanicInAPreparationFailsTheStep(t *testing.T) {
	e, other := gatedEnv(t)
	k := &preparing{started: make(chan struct{}), panics: true}
	k.do = func(context.Context, *toyWork, *attempt.Log) (attempt.Result, error) { return attempt.Result{}, nil }
	done := make(chan error, 1)
	go func() { done <- e.process(t, k, e.step.Attempt) }()
	<-k.started // in the preparation's goroutine, while the other build holds the gate
	if _, err := other.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("a panic in the preparation was handed back to Asynq: %v", err)
	}
	s := e.stepNow(t)
	if k.ran.Load() != 0 || s.State != horizon.StepFailed || s.Error == nil || !strings.Contains(*s.Error, "internal error") {
		t.Fatalf("ran %d times; step %s (error %v); want failed with an internal error, Do not run", k.ran.Load(), s.State, s.Error)
	}
}

// TestAPanicOutsideTheWorkFailsTheStep: a panic in the attempt before its work (here the
// kind's Unneeded) fails the step too, instead of being retried by Asynq with the step queued.
func TestAPanicOutsideTheWorkFailsTheStep(t *testing.T) {
	e := newEnv(t)
	k := &toy{unneeded: func(*toyWork) string { panic("unexpected state: a bug before the work") }}
	if err := e.process(t, k, e.step.Attempt); err != nil {
		t.Fatalf("a panic was handed back to Asynq: %v", err)
	}
	s := e.stepNow(t)
	if k.ran.Load() != 0 || s.State != horizon.StepFailed || s.Error == nil || !strings.Contains(*s.Error, "internal error") {
		t.Fatalf("ran %d times; step %s (error %v); want failed with an internal error", k.ran.Load(), s.State, s.Error)
	}
}

// TestAStepCanceledWhileItWaitsForItsNodeStopsWaiting: a step waiting in the gate's Acquire
// when its run is canceled (run:advance cancels it and takes it out of the node's line) stops
// waiting at once, without building and without being handed back to Asynq; before, its next
// ask put it back in line, ahead of every build that came later.
func TestAStepCanceledWhileItWaitsForItsNodeStopsWaiting(t *testing.T) {
	e, _ := gatedEnv(t)
	e.lifecycle.GateWait = time.Minute
	k := &toy{do: func(context.Context, *toyWork, *attempt.Log) (attempt.Result, error) { return attempt.Result{}, nil }}
	node, owner := queue.GateNode(*e.step.ServerID, *e.step.Node), queue.StepTaskID(e.step.ID, e.step.Attempt)
	started := time.Now()
	done := make(chan error, 1)
	go func() { done <- e.process(t, k, e.step.Attempt) }()
	testkit.Eventually(t, 5*time.Second, "the step waits for its node", func() bool {
		st, err := e.lifecycle.Gate.Status(t.Context(), node)
		return err == nil && len(st.Waiters) == 1 && st.Waiters[0].Owner == owner && st.Waiters[0].Seen.After(started)
	})
	// What run:advance does for a canceled run's queued step.
	if err := store.StepSetState(t.Context(), e.db, e.step.ID, horizon.StepCanceled); err != nil {
		t.Fatal(err)
	}
	if err := e.lifecycle.Gate.Leave(t.Context(), node, owner); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the canceled step's attempt was handed back to Asynq: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the canceled step still waits for its node")
	}
	if st, err := e.lifecycle.Gate.Status(t.Context(), node); err != nil || len(st.Waiters) != 0 {
		t.Fatalf("line %+v (%v), want the canceled step out of it", st.Waiters, err)
	}
	if k.ran.Load() != 0 || e.stepNow(t).State != horizon.StepCanceled {
		t.Fatalf("ran %d times, step %s; want not run, canceled", k.ran.Load(), e.stepNow(t).State)
	}
}

// TestAStepBehindOthersAtItsNodeReadsItsWorkOnlyWhenNext: a step asks for its node every few
// seconds while it waits. Its first ask reads its work (to leave at once if it is no longer
// needed); later asks, while another waiter is ahead, read nothing and at most heartbeat it;
// once it is next it reads again and builds. At 600 builds on 10 nodes those repeated reads
// were most of the engine's queries.
func TestAStepBehindOthersAtItsNodeReadsItsWorkOnlyWhenNext(t *testing.T) {
	e, holder := gatedEnv(t)
	e.lifecycle.GateWait = 0
	node := queue.GateNode(*e.step.ServerID, *e.step.Node)
	if err := e.lifecycle.Gate.Enqueue(t.Context(), node, "ahead", time.Now().Add(-time.Hour), false); err != nil {
		t.Fatal(err)
	}
	var loads atomic.Int32
	k := &toy{do: func(context.Context, *toyWork, *attempt.Log) (attempt.Result, error) { return attempt.Result{}, nil }}
	k.load = func(_ context.Context, a attempt.Loaded) (*toyWork, error) {
		loads.Add(1)
		return &toyWork{Loaded: a}, nil
	}
	ask := func(wantLoads int32) {
		t.Helper()
		if err := e.process(t, k, e.step.Attempt); !gate.IsBusy(err) {
			t.Fatalf("ask while behind: %v, want busy", err)
		}
		if n := loads.Load(); n != wantLoads {
			t.Fatalf("the work was read %d times, want %d", n, wantLoads)
		}
	}
	ask(1) // the first ask reads
	ask(1) // behind "ahead": no read
	ask(1)
	if err := e.lifecycle.Gate.Leave(t.Context(), node, "ahead"); err != nil {
		t.Fatal(err)
	}
	ask(2) // next in line: reads, then finds the holder still building
	if _, err := holder.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := e.process(t, k, e.step.Attempt); err != nil {
		t.Fatalf("ask at a free gate: %v", err)
	}
	if s := e.stepNow(t); loads.Load() != 3 || k.ran.Load() != 1 || s.State != horizon.StepSucceeded {
		t.Fatalf("read %d times, ran %d times, step %s; want read 3 times, built once", loads.Load(), k.ran.Load(), s.State)
	}
}

// TestAWaitingStepHeartbeatsOncePerInterval: a step behind others proves itself alive at its
// first ask, so that it never looks hung, and not again within the heartbeat interval however
// often it asks: each heartbeat is a write, and waiters ask every few seconds.
func TestAWaitingStepHeartbeatsOncePerInterval(t *testing.T) {
	e, _ := gatedEnv(t)
	e.lifecycle.GateWait = 0
	e.lifecycle.Heartbeat = time.Hour
	node := queue.GateNode(*e.step.ServerID, *e.step.Node)
	if err := e.lifecycle.Gate.Enqueue(t.Context(), node, "ahead", time.Now().Add(-time.Hour), false); err != nil {
		t.Fatal(err)
	}
	k := &toy{do: func(context.Context, *toyWork, *attempt.Log) (attempt.Result, error) { return attempt.Result{}, nil }}
	before := e.stepNow(t).HeartbeatAt
	var first *time.Time
	for i := range 3 {
		if err := e.process(t, k, e.step.Attempt); !gate.IsBusy(err) {
			t.Fatalf("ask %d while behind: %v, want busy", i+1, err)
		}
		hb := e.stepNow(t).HeartbeatAt
		switch {
		case hb == nil || before != nil && !hb.After(*before):
			t.Fatalf("ask %d: heartbeat %v → %v: a waiting step must not look hung", i+1, before, hb)
		case i == 0:
			first = hb
		case !hb.Equal(*first):
			t.Fatalf("ask %d heartbeat again (%v → %v) within the interval", i+1, first, hb)
		}
	}
}

// TestAWaitingStepWhosePostgresIsDownKeepsItsPlace: a step behind others whose heartbeat
// cannot be written (Postgres down) is still waiting: its delivery is handed back busy (not a
// failure), it keeps its place in the node's line, and its next ask, with Postgres back,
// heartbeats it.
func TestAWaitingStepWhosePostgresIsDownKeepsItsPlace(t *testing.T) {
	e, _ := gatedEnv(t)
	e.lifecycle.GateWait = 0
	e.lifecycle.Heartbeat = time.Millisecond // every ask is due a heartbeat
	node := queue.GateNode(*e.step.ServerID, *e.step.Node)
	if err := e.lifecycle.Gate.Enqueue(t.Context(), node, "ahead", time.Now().Add(-time.Hour), false); err != nil {
		t.Fatal(err)
	}
	k := &toy{do: func(context.Context, *toyWork, *attempt.Log) (attempt.Result, error) { return attempt.Result{}, nil }}
	if err := e.process(t, k, e.step.Attempt); !gate.IsBusy(err) { // the first ask reads
		t.Fatalf("first ask: %v, want busy", err)
	}
	live := e.lifecycle.DB
	down, err := pgxpool.New(t.Context(), live.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	down.Close()
	e.lifecycle.DB = down
	before := e.stepNow(t).HeartbeatAt
	time.Sleep(2 * e.lifecycle.Heartbeat)
	if err := e.process(t, k, e.step.Attempt); !gate.IsBusy(err) {
		t.Fatalf("ask with Postgres down: %v, want busy", err)
	}
	st, err := e.lifecycle.Gate.Status(t.Context(), node)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(st.Waiters, func(w gate.Waiter) bool { return w.Owner == queue.StepTaskID(e.step.ID, e.step.Attempt) }) {
		t.Fatalf("the step left the line %+v", st.Waiters)
	}
	e.lifecycle.DB = live
	time.Sleep(2 * e.lifecycle.Heartbeat)
	if err := e.process(t, k, e.step.Attempt); !gate.IsBusy(err) {
		t.Fatalf("ask with Postgres back: %v, want busy", err)
	}
	if after := e.stepNow(t).HeartbeatAt; after == nil || before == nil || !after.After(*before) {
		t.Fatalf("heartbeat %v → %v once Postgres was back", before, after)
	}
	if s := e.stepNow(t); s.State != horizon.StepQueued || k.ran.Load() != 0 {
		t.Fatalf("step %s, ran %d times; want still queued", s.State, k.ran.Load())
	}
}

// TestASupersededAttemptBehindOthersLeavesItsNodesLine: an attempt waiting behind others whose
// step was given a new attempt meanwhile (the reconciler's requeue) finds it out at its next
// heartbeat without reading its step, leaves the line — where it would have stood ahead of the
// new attempt until it went stale — and its delivery ends.
func TestASupersededAttemptBehindOthersLeavesItsNodesLine(t *testing.T) {
	e, _ := gatedEnv(t)
	e.lifecycle.GateWait = 0
	node := queue.GateNode(*e.step.ServerID, *e.step.Node)
	if err := e.lifecycle.Gate.Enqueue(t.Context(), node, "ahead", time.Now().Add(-time.Hour), false); err != nil {
		t.Fatal(err)
	}
	k := &toy{do: func(context.Context, *toyWork, *attempt.Log) (attempt.Result, error) { return attempt.Result{}, nil }}
	for range 2 { // the first ask reads, the second is refused without reading
		if err := e.process(t, k, e.step.Attempt); !gate.IsBusy(err) {
			t.Fatalf("ask while behind: %v, want busy", err)
		}
	}
	again, err := store.StepRequeueStale(t.Context(), e.db, e.step.ID, e.step.Attempt, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(e.lifecycle.Heartbeat) // its next heartbeat is due
	if err := e.process(t, k, e.step.Attempt); err != nil {
		t.Fatalf("the superseded attempt's ask: %v, want its delivery ended", err)
	}
	st, err := e.lifecycle.Gate.Status(t.Context(), node)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range st.Waiters {
		if w.Owner == queue.StepTaskID(e.step.ID, e.step.Attempt) {
			t.Fatalf("the superseded attempt still stands in the line %+v", st.Waiters)
		}
	}
	if k.ran.Load() != 0 || again.Attempt != e.step.Attempt+1 {
		t.Fatalf("ran %d times; new attempt %d", k.ran.Load(), again.Attempt)
	}
}

// TestATaskQueuedWithoutItsNodeStillWaitsItsTurn: a step task queued before tasks named their
// node (no Gate in the payload) reads its step first and still takes its node's gate in turn.
func TestATaskQueuedWithoutItsNodeStillWaitsItsTurn(t *testing.T) {
	e, holder := gatedEnv(t)
	e.lifecycle.GateWait = 0
	payload, err := json.Marshal(queue.StepRun{StepID: e.step.ID, Attempt: e.step.Attempt})
	if err != nil {
		t.Fatal(err)
	}
	task := asynq.NewTask(queue.TypeStepRun, payload)
	k := &toy{do: func(context.Context, *toyWork, *attempt.Log) (attempt.Result, error) { return attempt.Result{}, nil }}
	if err := attempt.Process(t.Context(), e.lifecycle, k, task); !gate.IsBusy(err) {
		t.Fatalf("while another build holds the node: %v, want busy", err)
	}
	if _, err := holder.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := attempt.Process(t.Context(), e.lifecycle, k, task); err != nil {
		t.Fatal(err)
	}
	if s := e.stepNow(t); s.State != horizon.StepSucceeded || k.ran.Load() != 1 {
		t.Fatalf("step %s, ran %d times; want built once", s.State, k.ran.Load())
	}
}
