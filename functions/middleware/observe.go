package middleware

import (
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"horizon/functions/api"
	"horizon/shared/problem"
)

// Metrics are the API's request metrics.
type Metrics struct {
	duration *prometheus.HistogramVec
}

// NewMetrics registers the request metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "horizon_http_request_duration_seconds",
		Help:    "API request duration by route pattern, method and status.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"route", "method", "status"})}
	reg.MustRegister(m.duration)
	return m
}

// Observe logs each request once, after it is answered, and records its duration under its
// route pattern (never the raw path, which would give every id its own series). Errors are
// rendered here, by the app's error handler, so the status logged is the status sent.
func Observe(log *slog.Logger, m *Metrics) fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := time.Now()
		err := c.Next()
		if err != nil {
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				_ = c.SendStatus(fiber.StatusInternalServerError) // the error handler itself failed; nothing better to send
			}
		}
		elapsed := time.Since(start)
		status := c.Response().StatusCode()
		route := c.Route().Path
		if c.Route().Method == "USE" || route == "" || route == "/" && c.Path() != "/" {
			route = "unmatched"
		}
		// A copy: c.Method() aliases fasthttp's request buffer, which the next request on the
		// connection overwrites, and Prometheus keeps label values for good (a POST once
		// turned into "GETT").
		method := strings.Clone(c.Method())
		m.duration.WithLabelValues(route, method, strconv.Itoa(status)).Observe(elapsed.Seconds())
		if !log.Enabled(c.UserContext(), slog.LevelDebug) {
			return nil // errors were logged by the error handler; successes only at debug
		}
		attrs := []any{"method", method, "route", route, "status", status,
			"duration_ms", float64(elapsed.Microseconds()) / 1000, "request_id", c.Locals(problem.RequestIDLocal)}
		if p := api.Principal(c); p.UserID != [16]byte{} {
			attrs = append(attrs, "user_id", p.UserID.String())
		}
		log.DebugContext(c.UserContext(), "request", attrs...)
		return nil
	}
}
