// Package worker assembles Horizon's workers: the Asynq server with every task handler, and the
// scheduler of the periodic passes (reconcile, Nagios discovery, drift; workers/periodic runs
// each once per period across all replicas). workers/main.go runs it; tests
// run the very same thing in process.
package worker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"horizon/shared/events"
	"horizon/shared/gate"
	"horizon/shared/gitsource"
	"horizon/shared/logstream"
	"horizon/shared/metrics"
	"horizon/shared/nagios"
	"horizon/shared/notify"
	"horizon/shared/queue"
	"horizon/shared/secrets"
	"horizon/shared/terraform"
	"horizon/shared/tfstate"
	"horizon/workers/attempt"
	"horizon/workers/drift"
	"horizon/workers/isos"
	notifyw "horizon/workers/notify"
	"horizon/workers/periodic"
	"horizon/workers/reconcile"
	"horizon/workers/runs"
	"horizon/workers/steps"
	"horizon/workers/tags"
)

// Config is what the workers need.
type Config struct {
	DB *pgxpool.Pool
	// Redis is the process's one client (a failover client with Sentinel); Asynq uses it too.
	Redis       redis.UniversalClient
	Box         *secrets.Box
	Log         *slog.Logger
	Namespace   string
	Concurrency int
	// ReconcileInterval is the period of the reconcile pass; 0 disables the scheduler (tests
	// call the pass themselves).
	ReconcileInterval time.Duration
	// DriftInterval is the period of the drift pass (default queue.DriftInterval); it is
	// scheduled with reconcile, so 0 ReconcileInterval disables it too.
	DriftInterval time.Duration
	// DriftSweepIntervals: every config is read once every this many drift intervals (default 1).
	DriftSweepIntervals int
	// DriftSpread is how long a periodic drift check spreads its config reads over (default:
	// half the drift interval, at most half a check's timeout, so that a pass does not ask a
	// node for every config at once); negative: no spreading, every read at once (tests).
	DriftSpread time.Duration
	// Terraform configures the runner; when its States is nil, New serves the state from DB
	// (tfstate) on loopback for as long as the workers run.
	Terraform terraform.Config
	Git       *gitsource.Cache
	// LogClient writes the deploy logs (Redis streams and log_lines).
	LogClient *logstream.Client
	// EventsMaxLen trims the events stream (events.Config.MaxLen; 0: its default).
	EventsMaxLen int64
	// Heartbeat of running steps; the reconciler presumes a step dead after six of them.
	Heartbeat time.Duration
	// ScriptSSHTimeout bounds the wait for a new machine's SSH (default 5 min).
	ScriptSSHTimeout time.Duration
	// VMSSHPort is a machine's SSH port when its module does not say (default 22).
	VMSSHPort int
	// ShutdownTimeout is how long in-flight tasks get on Shutdown (default 90 s: above
	// Terraform's interrupt-to-kill grace, so an interrupted apply saves its state).
	ShutdownTimeout time.Duration
	// ISODownloadAttempts (default 3) and ISORetryBackoff (default 10 s, doubling) bound the
	// retries of an ISO build's image download and of Proxmox calls that fail transiently.
	ISODownloadAttempts int
	ISORetryBackoff     time.Duration
	// ProxmoxTaskPoll is how often a running Proxmox task is polled (default 500 ms).
	ProxmoxTaskPoll time.Duration
	// Webhooks is how notifications are sent; WebhookConcurrency (default 20) how many at once,
	// in a pool of their own; WebhookLease how long a claimed delivery waits before a sweep
	// enqueues it again (default notify.DefaultLease).
	Webhooks           notify.Config
	WebhookConcurrency int
	WebhookLease       time.Duration
	// WebhookRetention and WebhookKeep bound the outbox's history (workers/notify.Prune).
	WebhookRetention time.Duration
	WebhookKeep      int
}

// Asynq's polling intervals in the workers (asynq.Config's TaskCheckInterval and
// DelayedTaskCheckInterval, defaults 1 s and 5 s): an idle server
// picks a new task up after about half of TaskCheckInterval, and delayed tasks (retries, node
// gate waits) move to pending every DelayedTaskCheckInterval. The engine benchmarks give their
// bare Asynq control the same values.
const (
	TaskCheckInterval        = 50 * time.Millisecond
	DelayedTaskCheckInterval = 250 * time.Millisecond
)

// Worker is a running Asynq server and scheduler.
type Worker struct {
	srv        *asynq.Server
	notifySrv  *asynq.Server
	sched      *periodic.Scheduler
	stopSched  context.CancelFunc
	schedDone  chan struct{}
	mux        *asynq.ServeMux
	cancelBase context.CancelFunc
	baseCtx    context.Context
	// warm prepares this host for each template version the API publishes (warmOnPublish).
	warm     func(context.Context, queue.Published) error
	rdb      redis.UniversalClient
	ns       string
	warmDone chan struct{}
	states   *tfstate.Server // nil when Config.Terraform.States was given
	Queues   queue.Queues
	// Reconcile is the reconcile pass, for tests and for the scheduler.
	Reconcile reconcile.Handler
	// Drift checks one Proxmox server for drift, for tests and the benchmark.
	Drift *drift.Checker
	// Notify delivers webhook messages (its DispatchDue is the outbox's sweep, for tests).
	Notify notifyw.Handler
	log    *slog.Logger

	// health is the outcome of the Asynq server's last check of its Redis connection.
	health atomic.Pointer[healthCheck]
}

type healthCheck struct {
	at  time.Time
	err error
}

// healthInterval is how often the Asynq server checks its Redis connection; Healthy wants a
// check younger than three of them.
const healthInterval = 5 * time.Second

// Healthy says whether the workers are alive: started, and their Asynq server's last check of
// Redis, within the last three intervals, succeeded. A worker whose server hangs or lost Redis
// for good answers an error, so that its supervisor restarts it (GET /healthz).
func (w *Worker) Healthy() error {
	h := w.health.Load()
	switch {
	case h == nil:
		return errors.New("the workers have not checked their Redis connection yet")
	case time.Since(h.at) > 3*healthInterval:
		return fmt.Errorf("the workers' last check of Redis was %s ago", time.Since(h.at).Round(time.Second))
	case h.err != nil:
		return fmt.Errorf("the workers cannot reach Redis: %w", h.err)
	}
	return nil
}

// New builds the workers; Start runs them.
func New(cfg Config) (*Worker, error) {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 10 * time.Second
	}
	if cfg.ScriptSSHTimeout <= 0 {
		cfg.ScriptSSHTimeout = 5 * time.Minute
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 90 * time.Second
	}
	if cfg.DriftInterval <= 0 {
		cfg.DriftInterval = queue.DriftInterval
	}
	switch {
	case cfg.DriftSpread == 0:
		cfg.DriftSpread = min(cfg.DriftInterval, queue.DriftCheckTimeout) / 2
	case cfg.DriftSpread < 0:
		cfg.DriftSpread = 0
	}
	queues := queue.Names(cfg.Namespace)
	client := asynq.NewClientFromRedisClient(cfg.Redis)
	inspector := asynq.NewInspectorFromRedisClient(cfg.Redis)
	g, err := gate.New(cfg.Redis, gate.Config{Prefix: cfg.Namespace, Wake: gate.AsynqWaker(inspector, queues.Build)})
	if err != nil {
		return nil, err
	}
	var states *tfstate.Server
	if cfg.Terraform.States == nil {
		if states, err = tfstate.Start(cfg.DB, cfg.Box, cfg.Log); err != nil {
			return nil, err
		}
		cfg.Terraform.States = states
	}
	tf, err := terraform.New(cfg.Terraform)
	if err != nil {
		if states != nil {
			_ = states.Close()
		}
		return nil, err
	}
	enqueue := queue.Enqueuer{Client: client}
	pub := events.NewPublisher(cfg.Redis, events.Config{Prefix: cfg.Namespace, MaxLen: cfg.EventsMaxLen})
	recorder := metrics.NewRecorder(cfg.Redis, cfg.Namespace)
	w := &Worker{Queues: queues, log: cfg.Log, states: states, rdb: cfg.Redis, ns: cfg.Namespace}
	w.Drift = &drift.Checker{DB: cfg.DB, Box: cfg.Box, Events: pub, Log: cfg.Log, Sweep: cfg.DriftSweepIntervals,
		Spread: cfg.DriftSpread}
	w.Reconcile = reconcile.Handler{DB: cfg.DB, Queues: queues, Enqueue: enqueue, StaleAfter: staleAfter(cfg.Heartbeat), Log: cfg.Log, Now: time.Now}
	advancer := runs.Advancer{DB: cfg.DB, Queues: queues, Enqueue: enqueue, Gate: g, Events: pub, Logs: cfg.LogClient, Log: cfg.Log}
	// Every kind of step runs its attempts through the one lifecycle.
	lifecycle := attempt.Lifecycle{DB: cfg.DB, Redis: cfg.Redis, Gate: g, Logs: cfg.LogClient, Events: pub, Enqueue: enqueue,
		Queues: queues, Log: cfg.Log, Namespace: cfg.Namespace, GateWait: gateWait, Heartbeat: cfg.Heartbeat, Metrics: recorder,
		Advance: advancer.Advance}
	stepHandler := &steps.Handler{Lifecycle: lifecycle, Box: cfg.Box, Git: cfg.Git, Terraform: tf,
		ScriptSSHTimeout: cfg.ScriptSSHTimeout, VMSSHPort: cfg.VMSSHPort}
	w.warm = stepHandler.Warm
	w.Notify = notifyw.Handler{DB: cfg.DB, Redis: cfg.Redis, Box: cfg.Box, Sender: notify.NewSender(cfg.Webhooks), Queues: queues,
		Enqueue: enqueue, Log: cfg.Log, Namespace: cfg.Namespace, Lease: cfg.WebhookLease,
		Retention: cfg.WebhookRetention, Keep: cfg.WebhookKeep}
	handlers := map[string]asynq.Handler{
		queue.TypeWebhookDeliver:  w.Notify,
		queue.TypeWebhookDispatch: periodic.Guard(cfg.DB, cfg.Log, asynq.HandlerFunc(w.Notify.Dispatch)),
		queue.TypeWebhookPrune:    periodic.Guard(cfg.DB, cfg.Log, asynq.HandlerFunc(w.Notify.Prune)),
		queue.TypeReconcile:       periodic.Guard(cfg.DB, cfg.Log, w.Reconcile),
		queue.TypeStackTags:       tags.Handler{DB: cfg.DB, Box: cfg.Box, Log: cfg.Log},
		queue.TypeRunAdvance:      advancer,
		queue.TypeStepRun:         stepHandler,
		queue.TypeActionRun:       &steps.Actions{Steps: stepHandler},
		queue.TypeNagiosPublish:   &steps.Nagios{Steps: stepHandler},
		// A server that cannot be read has its failure recorded; only our own Postgres fails it.
		queue.TypeNagiosDiscover: periodic.Guard(cfg.DB, cfg.Log, asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
			_, err := nagios.RediscoverAll(ctx, cfg.DB, cfg.Box)
			return err
		})),
		queue.TypeDriftCheck:    w.Drift,
		queue.TypeDriftSchedule: periodic.Guard(cfg.DB, cfg.Log, drift.Scheduler{DB: cfg.DB, Queues: queues, Enqueue: enqueue, Period: cfg.DriftInterval}),
		queue.TypeISOStage: &isos.Handler{Lifecycle: lifecycle, Box: cfg.Box, DownloadAttempts: cfg.ISODownloadAttempts,
			RetryBackoff: cfg.ISORetryBackoff, TaskPoll: cfg.ProxmoxTaskPoll},
	}
	w.mux = asynq.NewServeMux()
	for typ, h := range handlers {
		w.mux.Handle(typ, h)
	}

	// Handlers run under baseCtx; cancelling it on shutdown is what interrupts Terraform (Asynq's
	// own Shutdown does not cancel handler contexts).
	baseCtx, cancelBase := context.WithCancel(context.Background())
	w.baseCtx, w.cancelBase = baseCtx, cancelBase
	w.srv = asynq.NewServerFromRedisClient(cfg.Redis, asynq.Config{
		Concurrency:         cfg.Concurrency,
		Queues:              queues.Weights(),
		HealthCheckInterval: healthInterval,
		HealthCheckFunc:     func(err error) { w.health.Store(&healthCheck{at: time.Now(), err: err}) },
		BaseContext:         func() context.Context { return baseCtx },
		// Waiting for a node's build gate is not a failure: it does not use up retries, and it
		// is retried within seconds (the releasing holder usually wakes the task sooner).
		IsFailure: func(err error) bool { return !gate.IsBusy(err) && !errors.Is(err, context.Canceled) },
		RetryDelayFunc: func(n int, err error, t *asynq.Task) time.Duration {
			if gate.IsBusy(err) {
				return gate.BusyRetryDelay(err)
			}
			return min(time.Duration(n+1)*time.Duration(n+1)*time.Second, time.Minute)
		},
		TaskCheckInterval:        TaskCheckInterval,
		DelayedTaskCheckInterval: DelayedTaskCheckInterval,
		ShutdownTimeout:          cfg.ShutdownTimeout,
		Logger:                   asynqLogger{cfg.Log},
		ErrorHandler: asynq.ErrorHandlerFunc(func(ctx context.Context, t *asynq.Task, err error) {
			if !gate.IsBusy(err) {
				cfg.Log.WarnContext(ctx, "task failed", "task_type", t.Type(), "error", err)
			}
		}),
	})
	// Deliveries have a server of their own on the same handlers: its slots are the only ones a
	// slow destination can hold, so deploys and other work never wait behind one.
	w.notifySrv = asynq.NewServerFromRedisClient(cfg.Redis, asynq.Config{
		Concurrency:              cmp.Or(cfg.WebhookConcurrency, 20),
		Queues:                   map[string]int{queues.Notify: 1},
		BaseContext:              func() context.Context { return baseCtx },
		TaskCheckInterval:        TaskCheckInterval,
		DelayedTaskCheckInterval: DelayedTaskCheckInterval,
		ShutdownTimeout:          30 * time.Second,
		Logger:                   asynqLogger{cfg.Log},
	})
	if cfg.ReconcileInterval > 0 {
		// A periodic pass joins by a line here and its handler, wrapped in periodic.Guard, above.
		w.sched = &periodic.Scheduler{Enqueue: enqueue, Queues: queues, Log: cfg.Log, Jobs: []periodic.Job{
			{Type: queue.TypeReconcile, Period: cfg.ReconcileInterval},
			{Type: queue.TypeNagiosDiscover, Period: queue.NagiosDiscoverInterval},
			{Type: queue.TypeDriftSchedule, Period: cfg.DriftInterval},
			{Type: queue.TypeWebhookDispatch, Period: queue.WebhookDispatchInterval},
			{Type: queue.TypeWebhookPrune, Period: queue.WebhookPruneInterval},
		}}
	}
	return w, nil
}

// gateWait is how long the first waiter of a busy node waits inside its handler before it
// hands its slot back (attempt.Lifecycle.GateWait): a waiting step heartbeats after it.
const gateWait = 2 * time.Second

// staleAfter is how long a step may stay silent before the reconciler gives it a new attempt:
// six heartbeats of a running step, and longer than a step waiting for its node's gate goes
// between two of its asks (each refreshes its heartbeat): the longest busy retry delay, and 5 s
// for the task to be picked up again and wait gateWait in its handler (a test checks it).
func staleAfter(heartbeat time.Duration) time.Duration {
	return 6*heartbeat + gate.MaxBusyRetryDelay + 5*time.Second
}

// Handlers lists the task types the workers serve (a test checks it covers every type).
func (w *Worker) Handles(typ string) bool {
	_, pattern := w.mux.Handler(asynq.NewTask(typ, nil))
	return pattern == typ
}

// Work runs one delivery of task with the handler the server would give it, without a server:
// tests of one task kind (workertest.Kinds) call it with a task built by shared/queue's
// constructor, as River's rivertest.Worker calls a worker's Work.
func (w *Worker) Work(ctx context.Context, t *asynq.Task) error {
	return w.mux.ProcessTask(ctx, t)
}

// Start runs the server and the scheduler.
func (w *Worker) Start() error {
	if err := w.srv.Start(w.mux); err != nil {
		return fmt.Errorf("start asynq server: %w", err)
	}
	if err := w.notifySrv.Start(w.mux); err != nil {
		w.srv.Shutdown()
		return fmt.Errorf("start the notify server: %w", err)
	}
	w.warmDone = make(chan struct{})
	go w.warmOnPublish(w.baseCtx)
	if w.sched != nil {
		ctx, stop := context.WithCancel(context.Background())
		w.stopSched, w.schedDone = stop, make(chan struct{})
		go func() {
			defer close(w.schedDone)
			w.sched.Run(ctx)
		}()
	}
	return nil
}

// warmTimeout bounds the preparation of one published version (every job's checkout and init).
const warmTimeout = 10 * time.Minute

// warmOnPublish prepares this host for each template version the API announces
// (queue.PublishedChannel), one at a time, until ctx ends. Every worker process of every host
// hears each announcement; those of one host share the git cache and the seeds, whose locks
// make the second one wait and then find the work done. go-redis subscribes again after a lost
// connection; a version announced meanwhile is prepared by its first step instead.
func (w *Worker) warmOnPublish(ctx context.Context) {
	defer close(w.warmDone)
	sub := w.rdb.Subscribe(ctx, queue.PublishedChannel(w.ns))
	defer sub.Close()
	msgs := sub.Channel()
	for {
		var msg *redis.Message
		select {
		case <-ctx.Done():
			return
		case msg = <-msgs:
		}
		if msg == nil {
			return // the subscription was closed
		}
		var p queue.Published
		if err := json.Unmarshal([]byte(msg.Payload), &p); err != nil {
			w.log.WarnContext(ctx, "template publish announcement not understood", "error", err)
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, warmTimeout)
		err := w.warm(wctx, p)
		cancel()
		if err != nil && ctx.Err() == nil {
			w.log.WarnContext(ctx, "published template version not prepared on this host: its first steps will",
				"template_id", p.TemplateID, "version", p.Version, "error", err)
		}
	}
}

// Shutdown stops taking tasks, interrupts the running ones (Terraform saves its state) and waits
// for them up to the shutdown timeout.
func (w *Worker) Shutdown() {
	if w.stopSched != nil {
		w.stopSched()
		<-w.schedDone
	}
	w.cancelBase()
	w.srv.Shutdown()
	w.notifySrv.Shutdown()
	if w.warmDone != nil {
		<-w.warmDone
	}
	// After the handlers: a Terraform saving its state at SIGINT still reaches the backend.
	if w.states != nil {
		_ = w.states.Close()
	}
}
