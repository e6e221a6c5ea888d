// Command workers runs Horizon's Asynq server and scheduler: it executes the tasks the API
// enqueues (Terraform, SSH, Proxmox calls) and the periodic reconcile pass. Any number of
// replicas may run; they share nothing but Postgres and Redis.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"horizon/shared/config"
	"horizon/shared/gitsource"
	"horizon/shared/logstream"
	"horizon/shared/notify"
	"horizon/shared/queue"
	"horizon/shared/secrets"
	"horizon/shared/store"
	"horizon/shared/terraform"
	"horizon/shared/tfstate"
	"horizon/workers/worker"
)

func main() {
	cfg, err := config.Load(os.LookupEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	log := cfg.Logger(os.Stderr)
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	if len(os.Args) > 1 {
		if err := command(cfg, os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := run(cfg, log); err != nil {
		log.Error("workers stopped", "error", err)
		os.Exit(1)
	}
}

func run(cfg config.Config, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// The pool is sized for the process's work unless the URL says pool_max_conns. A periodic
	// pass holds a connection for its Guard's lock while its handler takes others: with pgx's
	// default (max(4, GOMAXPROCS), 4 on two cores) the five passes enqueued at start took every
	// connection, and their handlers and every step then waited for one until the passes timed
	// out (an hour for the outbox's pruning).
	pool, err := store.Open(ctx, store.Config{URL: cfg.DatabaseURL, DefaultMaxConns: int32(cfg.WorkerConcurrency + cfg.WebhookConcurrency/2 + 10)})
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := store.Migrate(ctx, pool); err != nil {
		return err
	}
	// The process's one Redis client: Asynq, the streams, the gate and the namespace claim all
	// use it, so that all of them follow a Sentinel failover together.
	rdb := cfg.Redis.NewClient(0)
	defer rdb.Close()
	installation, err := store.InstallationID(ctx, pool)
	if err != nil {
		return err
	}
	if err := queue.ClaimNamespace(ctx, rdb, cfg.Namespace, installation); err != nil {
		return err
	}
	box, err := secrets.NewBox(cfg.SecretKey)
	if err != nil {
		return err
	}
	if n, err := tfstate.MigratePG(ctx, pool, box, tfstate.PGSchema); err != nil {
		return fmt.Errorf("seal the states of the pg backend: %w", err)
	} else if n > 0 {
		log.Info("moved the pg backend's states into sealed storage and dropped its tables", "states", n)
	}
	bin, err := terraform.FindBinary(ctx, cfg.TerraformBin)
	if err != nil {
		return err
	}
	git, err := gitsource.New(gitsource.Config{Dir: cfg.GitCacheDir, CAFile: cfg.GitCAFile})
	if err != nil {
		return err
	}
	logs := logstream.New(rdb, pool, logstream.Config{Prefix: cfg.Namespace, MaxLen: cfg.LogMaxLen, Retention: cfg.LogRetention})
	w, err := worker.New(worker.Config{DB: pool, Redis: rdb, Box: box, Log: log, Namespace: cfg.Namespace,
		Concurrency: cfg.WorkerConcurrency, ReconcileInterval: cfg.ReconcileInterval, DriftInterval: cfg.DriftInterval, DriftSweepIntervals: cfg.DriftSweepIntervals, Heartbeat: cfg.StepHeartbeat, VMSSHPort: cfg.VMSSHPort, Git: git,
		LogClient: logs, EventsMaxLen: cfg.EventsMaxLen,
		ISODownloadAttempts: cfg.ISODownloadAttempts, ISORetryBackoff: cfg.ISORetryBackoff, ProxmoxTaskPoll: cfg.ProxmoxTaskPoll,
		Webhooks:           notify.Config{Guard: notify.Guard{Allow: cfg.WebhookAllowCIDRs}, Timeout: cfg.WebhookTimeout, ConsoleURL: cfg.ConsoleURL},
		WebhookConcurrency: cfg.WebhookConcurrency,
		WebhookRetention:   cfg.WebhookRetention,
		WebhookKeep:        cfg.WebhookKeep,
		WebhookLease:       cfg.WebhookLease,
		Terraform:          terraform.Config{Binary: bin, WorkRoot: cfg.WorkDir, PluginCacheDir: cfg.PluginCacheDir}})
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return err
	}
	health := &http.Server{Addr: cfg.WorkersListen, Handler: healthHandler(w, pool, rdb), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := health.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("workers health endpoint stopped", "addr", cfg.WorkersListen, "error", err)
		}
	}()
	defer health.Close()
	log.Info("workers running", "queues", []string{w.Queues.Control, w.Queues.Build, w.Queues.Notify}, "concurrency", cfg.WorkerConcurrency,
		"terraform", bin.Path, "terraform_version", bin.Version)
	<-ctx.Done()
	log.Info("workers shutting down")
	w.Shutdown()
	return nil
}

// command runs an operator's command instead of the workers, for an emergency:
// `state show <workspace>` prints a Terraform state, opened; `state push <workspace>` replaces it
// with the one read from standard input (refused while a run holds the workspace's lock).
// States hold secrets in clear: they are for the operator's terminal, not a log or a ticket.
func command(cfg config.Config, args []string) error {
	if len(args) != 3 || args[0] != "state" || (args[1] != "show" && args[1] != "push") {
		return errors.New("usage: workers state show|push <workspace>   (or no arguments, to run the workers)")
	}
	ctx := context.Background()
	pool, err := store.Open(ctx, store.Config{URL: cfg.DatabaseURL})
	if err != nil {
		return err
	}
	defer pool.Close()
	box, err := secrets.NewBox(cfg.SecretKey)
	if err != nil {
		return err
	}
	workspace := args[2]
	if args[1] == "push" {
		state, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		return tfstate.Write(ctx, pool, box, workspace, state)
	}
	state, err := tfstate.Read(ctx, pool, box, workspace)
	if err != nil {
		return err
	}
	if state == nil {
		return fmt.Errorf("workspace %s has no state", workspace)
	}
	_, err = os.Stdout.Write(state)
	return err
}

// healthHandler serves a worker process's supervisor: /healthz (alive: the Asynq server's checks
// of Redis succeed; a 503 asks for a restart) and /readyz (Postgres and Redis answer now).
func healthHandler(w *worker.Worker, db *pgxpool.Pool, rdb *redis.Client) http.Handler {
	mux := http.NewServeMux()
	answer := func(rw http.ResponseWriter, err error) {
		if err != nil {
			rw.Header().Set("Retry-After", "5")
			http.Error(rw, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = rw.Write([]byte("ok\n"))
	}
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, r *http.Request) { answer(rw, w.Healthy()) })
	mux.HandleFunc("GET /readyz", func(rw http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := db.Ping(ctx); err != nil {
			answer(rw, fmt.Errorf("postgres does not answer: %w", err))
			return
		}
		if err := rdb.Ping(ctx).Err(); err != nil {
			answer(rw, fmt.Errorf("redis does not answer: %w", err))
			return
		}
		answer(rw, nil)
	})
	return mux
}
