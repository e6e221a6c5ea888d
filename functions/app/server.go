package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"horizon/functions/api"
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
	"horizon/shared/notify"
	"horizon/shared/queue"
	"horizon/shared/rstream"
	"horizon/shared/secrets"
	"horizon/shared/store"
)

// Server is the API as it runs: the app, its dependencies, and what Close releases. Open builds
// it; functions/main.go, the API tests (functions/apitest) and the benchmarks (deploy/bench) all
// run this one wiring.
type Server struct {
	App  *fiber.App
	Deps api.Deps
	// closers release the dependencies, in the reverse order of their opening.
	closers []func()
	stop    context.CancelFunc
}

// Open connects to Postgres (migrating it) and Redis (claiming the namespace for this
// installation), makes the bootstrap admin of cfg.BootstrapAdminToken or, with no admin yet,
// issues a setup token to the log, and builds the app on cfg's settings. On error, whatever
// was opened is closed.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger) (_ *Server, err error) {
	s := &Server{}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	background, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = stop

	pool, err := store.Open(ctx, store.Config{URL: cfg.DatabaseURL})
	if err != nil {
		return nil, err
	}
	s.closing(pool.Close)
	if err := store.Migrate(ctx, pool); err != nil {
		return nil, err
	}
	if err := admins(ctx, pool, cfg, log); err != nil {
		return nil, err
	}

	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	// The process's one Redis client (cfg.Redis was parsed once, by config.Load): Asynq, the
	// auth cache, the gate, the streams' writers and the namespace claim all use it, so that
	// all of them follow a Sentinel failover together.
	rdb := cfg.Redis.NewClient(0)
	s.closing(func() { _ = rdb.Close() }) // nothing to flush on a client we are done with
	installation, err := store.InstallationID(ctx, pool)
	if err != nil {
		return nil, err
	}
	if err := queue.ClaimNamespace(ctx, rdb, cfg.Namespace, installation); err != nil {
		return nil, err
	}

	box, err := secrets.NewBox(cfg.SecretKey)
	if err != nil {
		return nil, err
	}
	git, err := gitsource.New(gitsource.Config{Dir: cfg.GitCacheDir, CAFile: cfg.GitCAFile})
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	cache := authcache.New(rdb, cfg.Namespace, cfg.AuthCacheTTL)
	go cache.Run(background, log)
	// Clients made from rdb do not close it; rdb's own closer, registered first, runs last.
	client := asynq.NewClientFromRedisClient(rdb)
	inspector := asynq.NewInspectorFromRedisClient(rdb)
	queues := queue.Names(cfg.Namespace)
	reg.MustRegister(metrics.NewCollector(rdb, cfg.Namespace, inspector, []string{queues.Control, queues.Build}, pool, log))
	g, err := gate.New(rdb, gate.Config{Prefix: cfg.Namespace})
	if err != nil {
		return nil, err
	}
	// The stream readers hold a connection each in a blocking XREAD: one per run followed in
	// this process and one for the events. They get a client of their own so that they never
	// starve the handlers' pool.
	// Built from the same parsed URL: a failover client too.
	readers := cfg.Redis.NewClient(cfg.SSEReaders + 1)
	s.closing(func() { _ = readers.Close() })
	logs := logstream.New(rdb, pool, logstream.Config{Prefix: cfg.Namespace, MaxLen: cfg.LogMaxLen, Retention: cfg.LogRetention})
	eventsCfg := events.Config{Prefix: cfg.Namespace, MaxLen: cfg.EventsMaxLen}
	hubCfg := rstream.Config{Buffer: cfg.SSEBuffer}
	logHub := logstream.NewHub(logs, readers, hubCfg)
	s.closing(logHub.Close)
	eventHub := events.NewHub(readers, eventsCfg, hubCfg)
	s.closing(eventHub.Close)
	signer, err := auth.NewStreamSigner(cfg.SecretKey)
	if err != nil {
		return nil, err
	}
	streams := stream.NewServer(stream.Config{Heartbeat: cfg.SSEHeartbeat, WriteTimeout: cfg.SSEWriteTimeout, MaxStreams: cfg.SSEMaxStreams}, log, reg)

	s.Deps = api.Deps{DB: pool, Redis: rdb, Box: box, Log: log, Auth: cache, Git: git, Gate: g,
		Events: events.NewPublisher(rdb, eventsCfg), Queue: queue.Enqueuer{Client: client},
		Queues: queues, Namespace: cfg.Namespace, Now: time.Now,
		Logs: logs, LogHub: logHub, EventHub: eventHub, StreamTokens: signer, StreamTokenTTL: cfg.StreamTokenTTL, Streams: streams,
		Webhooks:     notify.NewSender(notify.Config{Guard: notify.Guard{Allow: cfg.WebhookAllowCIDRs, Resolve: cfg.WebhookResolve}, Timeout: cfg.WebhookTimeout, ConsoleURL: cfg.ConsoleURL}),
		WebhookLease: cfg.WebhookLease}
	s.App = New(s.Deps, Options{RequestTimeout: cfg.RequestTimeout, RateLimit: cfg.RateLimit,
		RateWindow: cfg.RateWindow, CORSOrigins: cfg.CORSOrigins, Registry: reg})
	return s, nil
}

// admins makes sure there is a way in: the bootstrap admin of cfg.BootstrapAdminToken (restored
// if it was revoked, since the configuration names it), and with no admin at all a one-time
// setup token in the log.
func admins(ctx context.Context, pool *pgxpool.Pool, cfg config.Config, log *slog.Logger) error {
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
	if err := setup.Issue(ctx, pool, log); err != nil {
		return fmt.Errorf("issue a setup token: %w", err)
	}
	return nil
}

// Serve answers on ln until ctx ends or ln fails. It then ends the open streams first —
// Fiber's shutdown waits for every response in progress — and gives the requests in progress
// up to 15 s.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- s.App.Listener(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.Deps.Streams.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := s.App.ShutdownWithContext(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// Close releases the dependencies, after Serve has returned.
func (s *Server) Close() {
	if s.stop != nil {
		s.stop()
	}
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

func (s *Server) closing(f func()) { s.closers = append(s.closers, f) }
