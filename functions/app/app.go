// Package app builds Horizon's API: Open wires its dependencies from the configuration and
// New builds the Fiber application on them (the server's settings, the middleware chain, every
// route). functions/main.go, the API tests (functions/apitest) and the benchmarks (deploy/bench)
// all run Open, so that what is tested is the production wiring.
package app

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/prometheus/client_golang/prometheus"

	"horizon/functions/api"
	"horizon/functions/health"
	"horizon/functions/middleware"
	"horizon/functions/setup"
	"horizon/functions/signin"
	"horizon/shared/problem"
)

// BodyLimit is the largest request body accepted; larger ones are answered 413 before any
// handler runs.
const BodyLimit = 1 << 20

// Options are the settings of the app beyond its dependencies.
type Options struct {
	RequestTimeout time.Duration
	RateLimit      int
	RateWindow     time.Duration
	CORSOrigins    []string
	// Registry receives the API's metrics and is what /metrics serves.
	Registry *prometheus.Registry
}

// New returns the app with every route registered.
func New(d api.Deps, o Options) *fiber.App {
	app := fiber.New(fiber.Config{
		AppName:               "horizon",
		BodyLimit:             BodyLimit,
		ErrorHandler:          problem.Handler(d.Log),
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          0, // event streams stay open; a write timeout would cut them
		IdleTimeout:           2 * time.Minute,
		DisableStartupMessage: true,
		CaseSensitive:         true,
		StrictRouting:         true,
	})
	metrics := middleware.NewMetrics(o.Registry)
	app.Use(middleware.NoSniff())
	app.Use(middleware.RequestID())
	app.Use(middleware.Observe(d.Log, metrics))
	app.Use(recover.New())
	// Without configured origins no CORS headers are sent at all, so browsers refuse
	// cross-origin calls: the safe default.
	if len(o.CORSOrigins) > 0 {
		app.Use(cors.New(cors.Config{
			AllowOrigins:  strings.Join(o.CORSOrigins, ","),
			AllowMethods:  "GET,POST,PUT,PATCH,DELETE,OPTIONS",
			AllowHeaders:  "Authorization,Content-Type,If-Match,Idempotency-Key,Last-Event-ID,X-Request-Id",
			ExposeHeaders: "ETag,Location,Retry-After,X-Request-Id,Idempotent-Replayed,RateLimit-Limit,RateLimit-Remaining,RateLimit-Reset",
			MaxAge:        600,
		}))
	}

	app.Get("/healthz", health.Healthz())
	app.Get("/readyz", health.Readyz(d))
	app.Get("/metrics", health.Metrics(o.Registry))
	app.Get("/openapi.yaml", health.OpenAPI())

	deadline := middleware.Deadline(o.RequestTimeout)
	limit := middleware.RateLimit(d, o.RateLimit, o.RateWindow)
	// The event streams are registered before the /v1 group, whose authentication they replace
	// with one that also takes a stream token in the URL (EventSource cannot send headers).
	// Fiber runs handlers in the order they were registered and a stream handler does not call
	// Next, so the group's middleware never runs for them.
	for _, r := range streamRoutes(d) {
		app.Add(r.method, "/v1"+r.path, deadline, middleware.StreamAuth(d, r.purpose), middleware.Scope(r.scope), api.Require(r.role), limit, r.handler)
	}
	// Setup has no bearer token to check: its setup token is the proof (package setup).
	app.Post("/v1/setup", deadline, setup.Claim(d))
	// Nor has the exchange of a sign-in code: the code is the proof (package signin).
	app.Post("/v1/sign-in", deadline, signin.Exchange(d))
	// Minting a code skips idempotency, which would keep the answer — the code, in clear — for
	// 24 h to replay it: a retried mint makes another code, which is harmless. A code stands for
	// the very token that minted it, scope included, so a read token may mint one.
	mint := signInCodes(d)
	app.Add(mint.method, "/v1"+mint.path, deadline, middleware.Auth(d), limit, middleware.Scope(mint.scope), api.Require(mint.role), mint.handler)
	// The group authenticates every /v1 path (an unknown one too, so that it reveals nothing);
	// each route then checks the scope and the role its row declares before the idempotency key
	// is taken, so that a refused request leaves no recorded answer behind.
	v1 := app.Group("/v1", deadline, middleware.Auth(d), limit)
	idempotency := middleware.Idempotency(d)
	for _, r := range routes(d) {
		v1.Add(r.method, r.path, middleware.Scope(r.scope), api.Require(r.role), idempotency, r.handler)
	}
	return app
}
