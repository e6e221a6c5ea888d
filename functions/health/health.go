// Package health serves the unauthenticated operational endpoints: /healthz (the process is
// up), /readyz (its dependencies answer), /metrics (Prometheus) and /openapi.yaml.
package health

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"horizon/functions/api"
	"horizon/openapi"
	"horizon/shared/problem"
)

// Healthz answers 200 while the process serves requests; it checks nothing else, so an
// orchestrator restarts the process only when the process itself is stuck.
func Healthz() fiber.Handler {
	return func(c *fiber.Ctx) error {
		return c.JSON(fiber.Map{"status": "ok"})
	}
}

// readyTimeout bounds each dependency check.
const readyTimeout = 2 * time.Second

// Readyz answers 200 when Postgres and Redis answer, 503 otherwise (a load balancer then stops
// sending traffic until they recover).
func Readyz(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ctx, cancel := context.WithTimeout(c.UserContext(), readyTimeout)
		defer cancel()
		if err := d.DB.Ping(ctx); err != nil {
			return problem.Unavailable(err, "Postgres does not answer.")
		}
		if err := d.Redis.Ping(ctx).Err(); err != nil {
			return problem.Unavailable(err, "Redis does not answer.")
		}
		return c.JSON(fiber.Map{"status": "ready"})
	}
}

// Metrics serves the registry in the Prometheus text format.
func Metrics(g prometheus.Gatherer) fiber.Handler {
	return adaptor.HTTPHandler(promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
}

// OpenAPI serves the API's contract.
func OpenAPI() fiber.Handler {
	return func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, "application/yaml")
		return c.Send(openapi.Spec)
	}
}
