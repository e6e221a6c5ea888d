// Command workers runs Horizon's Asynq server and scheduler: it executes the tasks the API
// enqueues (Terraform, SSH, Proxmox calls) and the periodic reconcile pass. Any number of
// replicas may run; they share nothing but Postgres and Redis.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/shared/config"
	"horizon/shared/queue"
	"horizon/shared/store"
	"horizon/workers/reconcile"
)

func main() {
	cfg, err := config.Load(os.LookupEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	log := cfg.Logger(os.Stderr)
	if err := run(cfg, log); err != nil {
		log.Error("workers stopped", "error", err)
		os.Exit(1)
	}
}

// shutdownTimeout is how long in-flight tasks get to finish on SIGTERM before Asynq pushes them
// back to the queue. It exceeds Terraform's interrupt-to-kill grace so an interrupted apply can
// save its state first.
const shutdownTimeout = 90 * time.Second

func run(cfg config.Config, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	pool, err := store.Open(ctx, store.Config{URL: cfg.DatabaseURL})
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := store.Migrate(ctx, pool); err != nil {
		return err
	}
	redisOpt, err := asynq.ParseRedisURI(cfg.RedisURL)
	if err != nil {
		return fmt.Errorf("parse redis url: %w", err)
	}
	queues := queue.Names(cfg.Namespace)

	// Handlers run under baseCtx; cancelling it on shutdown is what interrupts Terraform (Asynq's
	// own Shutdown does not cancel handler contexts).
	baseCtx, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	srv := asynq.NewServer(redisOpt, asynq.Config{
		Concurrency:              cfg.WorkerConcurrency,
		Queues:                   queues.Weights(),
		BaseContext:              func() context.Context { return baseCtx },
		TaskCheckInterval:        50 * time.Millisecond,
		DelayedTaskCheckInterval: 250 * time.Millisecond,
		ShutdownTimeout:          shutdownTimeout,
		Logger:                   asynqLogger{log},
		ErrorHandler: asynq.ErrorHandlerFunc(func(ctx context.Context, t *asynq.Task, err error) {
			log.WarnContext(ctx, "task failed", "task_type", t.Type(), "error", err)
		}),
	})
	mux := asynq.NewServeMux()
	for typ, h := range handlers(pool, log) {
		mux.Handle(typ, h)
	}

	sched := asynq.NewScheduler(redisOpt, &asynq.SchedulerOpts{Location: time.UTC, Logger: asynqLogger{log}})
	if _, err := sched.Register(fmt.Sprintf("@every %s", cfg.ReconcileInterval), queue.NewReconcile(queues, cfg.ReconcileInterval)); err != nil {
		return fmt.Errorf("schedule reconcile: %w", err)
	}

	if err := srv.Start(mux); err != nil {
		return fmt.Errorf("start asynq server: %w", err)
	}
	if err := sched.Start(); err != nil {
		srv.Shutdown()
		return fmt.Errorf("start scheduler: %w", err)
	}
	log.Info("workers running", "queues", []string{queues.Control, queues.Build}, "concurrency", cfg.WorkerConcurrency)
	<-ctx.Done()
	log.Info("workers shutting down")
	sched.Shutdown()
	cancelBase()
	srv.Shutdown()
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// handlers maps every task type to its handler. A test checks that every task type constant
// of shared/queue appears here.
func handlers(pool *pgxpool.Pool, log *slog.Logger) map[string]asynq.Handler {
	return map[string]asynq.Handler{
		queue.TypeReconcile: reconcile.Handler{DB: pool, Log: log},
	}
}
