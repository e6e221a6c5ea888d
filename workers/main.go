// Command workers runs Horizon's Asynq server and scheduler: it executes the tasks the API
// enqueues (Terraform, SSH, Proxmox calls) and the periodic reconcile pass. Any number of
// replicas may run; they share nothing but Postgres and Redis.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"horizon/shared/config"
	"horizon/shared/gitsource"
	"horizon/shared/logstream"
	"horizon/shared/queue"
	"horizon/shared/secrets"
	"horizon/shared/store"
	"horizon/shared/terraform"
	"horizon/workers/worker"
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
	ropts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return fmt.Errorf("parse redis url: %w", err)
	}
	rdb := redis.NewClient(ropts)
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
	bin, err := terraform.FindBinary(ctx, cfg.TerraformBin)
	if err != nil {
		return err
	}
	git, err := gitsource.New(gitsource.Config{Dir: cfg.GitCacheDir, CAFile: cfg.GitCAFile})
	if err != nil {
		return err
	}
	logs := logstream.New(rdb, pool, logstream.Config{Prefix: cfg.Namespace, MaxLen: cfg.LogMaxLen, Retention: cfg.LogRetention})
	w, err := worker.New(worker.Config{DB: pool, Redis: rdb, RedisOpt: redisOpt, Box: box, Log: log, Namespace: cfg.Namespace,
		Concurrency: cfg.WorkerConcurrency, ReconcileInterval: cfg.ReconcileInterval, Heartbeat: cfg.StepHeartbeat, Git: git,
		LogClient: logs, EventsMaxLen: cfg.EventsMaxLen,
		ISODownloadAttempts: cfg.ISODownloadAttempts, ISORetryBackoff: cfg.ISORetryBackoff, ProxmoxTaskPoll: cfg.ProxmoxTaskPoll,
		Terraform: terraform.Config{Binary: bin, ConnString: cfg.DatabaseURL, WorkRoot: cfg.WorkDir, PluginCacheDir: cfg.PluginCacheDir}})
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return err
	}
	log.Info("workers running", "queues", []string{w.Queues.Control, w.Queues.Build}, "concurrency", cfg.WorkerConcurrency,
		"terraform", bin.Path, "terraform_version", bin.Version)
	<-ctx.Done()
	log.Info("workers shutting down")
	w.Shutdown()
	return nil
}
