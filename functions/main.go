// Command functions serves Horizon's HTTP API. Every endpoint is a small stateless function:
// authenticate, validate, read and write Postgres in one transaction, enqueue work for the
// workers, answer. It never runs Terraform, SSH or anything slow itself.
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
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"horizon/functions/api"
	"horizon/functions/app"
	"horizon/functions/authcache"
	"horizon/functions/setup"
	"horizon/functions/stream"
	"horizon/shared/auth"
	"horizon/shared/config"
	"horizon/shared/events"
	"horizon/shared/gate"
	"horizon/shared/gitsource"
	"horizon/shared/logstream"
	"horizon/shared/metrics"
	"horizon/shared/queue"
	"horizon/shared/rstream"
	"horizon/shared/secrets"
	"horizon/shared/store"
)

func main() {
	cfg, err := config.Load(os.LookupEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	log := cfg.Logger(os.Stderr)
	if err := run(cfg, log); err != nil {
		log.Error("api stopped", "error", err)
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
	if tok := cfg.BootstrapAdminToken; tok != "" {
		restored, err := store.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (bool, error) {
			return store.EnsureBootstrapAdmin(ctx, tx, auth.HashToken(tok.Reveal()))
		})
		if err != nil {
			return fmt.Errorf("bootstrap admin: %w", err)
		}
		if restored {
			log.Warn("bootstrap admin token was revoked and has been restored, because HORIZON_BOOTSTRAP_ADMIN_TOKEN names it")
		}
	}

	// With no admin yet (and no bootstrap token), the way in is a one-time token in the log.
	if err := setup.Issue(ctx, pool, log); err != nil {
		return fmt.Errorf("issue a setup token: %w", err)
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
	git, err := gitsource.New(gitsource.Config{Dir: cfg.GitCacheDir, CAFile: cfg.GitCAFile})
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	cache := authcache.New(rdb, cfg.Namespace, cfg.AuthCacheTTL)
	go cache.Run(ctx, log)
	redisOpt, err := asynq.ParseRedisURI(cfg.RedisURL)
	if err != nil {
		return fmt.Errorf("parse redis url: %w", err)
	}
	client := asynq.NewClient(redisOpt)
	defer client.Close()
	inspector := asynq.NewInspector(redisOpt)
	defer inspector.Close()
	queues := queue.Names(cfg.Namespace)
	reg.MustRegister(metrics.NewCollector(rdb, cfg.Namespace, inspector, []string{queues.Control, queues.Build}, pool, log))
	g, err := gate.New(rdb, gate.Config{Prefix: cfg.Namespace})
	if err != nil {
		return err
	}
	// The stream readers hold a connection each in a blocking XREAD: one per run followed in
	// this process and one for the events. They get a client of their own so that they never
	// starve the handlers' pool.
	readerOpts := *ropts
	readerOpts.PoolSize = cfg.SSEReaders + 1
	readers := redis.NewClient(&readerOpts)
	defer readers.Close()
	logs := logstream.New(rdb, pool, logstream.Config{Prefix: cfg.Namespace, MaxLen: cfg.LogMaxLen, Retention: cfg.LogRetention})
	eventsCfg := events.Config{Prefix: cfg.Namespace, MaxLen: cfg.EventsMaxLen}
	hubCfg := rstream.Config{Buffer: cfg.SSEBuffer}
	logHub := logstream.NewHub(logs, readers, hubCfg)
	defer logHub.Close()
	eventHub := events.NewHub(readers, eventsCfg, hubCfg)
	defer eventHub.Close()
	signer, err := auth.NewStreamSigner(cfg.SecretKey)
	if err != nil {
		return err
	}
	streams := stream.NewServer(stream.Config{Heartbeat: cfg.SSEHeartbeat, WriteTimeout: cfg.SSEWriteTimeout, MaxStreams: cfg.SSEMaxStreams}, log, reg)

	deps := api.Deps{DB: pool, Redis: rdb, Box: box, Log: log, Auth: cache, Git: git, Gate: g,
		Events: events.NewPublisher(rdb, eventsCfg), Queue: queue.Enqueuer{Client: client},
		Queues: queues, Namespace: cfg.Namespace, Now: time.Now,
		Logs: logs, LogHub: logHub, EventHub: eventHub, StreamTokens: signer, StreamTokenTTL: cfg.StreamTokenTTL, Streams: streams}
	a := app.New(deps, app.Options{RequestTimeout: cfg.RequestTimeout, RateLimit: cfg.RateLimit,
		RateWindow: cfg.RateWindow, CORSOrigins: cfg.CORSOrigins, Registry: reg})

	errc := make(chan error, 1)
	go func() { errc <- a.Listen(cfg.Listen) }()
	log.Info("api listening", "url", "http://"+cfg.Listen)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("api shutting down")
	// Open streams end first: Fiber's shutdown waits for every response in progress.
	streams.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := a.ShutdownWithContext(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
