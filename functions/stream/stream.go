// Package stream serves the API's long responses — Server-Sent Events and streamed log
// downloads — through fasthttp's body stream writer, with the rules they all need:
//
//   - The writer runs in a goroutine of its own, started as soon as the handler sets it (and
//     the fiber.Ctx goes back to its pool when the handler returns), so a handler copies
//     everything it needs out of the Ctx first and the writer never touches it.
//   - The writer gets a context of its own, not the request's (whose deadline would cut the
//     stream). It ends when Server.Close is called at shutdown (Fiber's shutdown waits for open
//     responses) or when the writer returns.
//   - fasthttp does not report a disconnect; a failed write does. SSE streams send a comment
//     every Heartbeat, and cancel their context when it cannot be written, so that an idle
//     stream notices a gone client within that time.
//   - The app has no WriteTimeout (it would cut every stream). Instead each write pushes the
//     connection's write deadline to WriteTimeout from now: a client that accepts no bytes for
//     that long — paused, or its network gone — is disconnected, and its goroutines go. The
//     deadline also covers what fasthttp still copies after the writer returned, and is never
//     cleared: the response closes its connection instead of keeping it alive for another
//     request (which an EventSource would not reuse anyway).
//   - What a response may hold for a slow client is bounded: fasthttp's pipe (four buffers of
//     at most a write each), the response's own buffer (4 KiB for SSE, 32 KiB for downloads),
//     and what the caller queues (the hubs' per-member buffers, rstream.Config.Buffer).
//     Nothing grows with a client's slowness.
//   - At most MaxStreams responses are open per process; more are answered 503 with
//     Retry-After, so the total stays bounded too.
//
// SSE framing is the standard one: "id:", "event:", "data:" lines and a blank line; data is
// JSON on one line. The stream opens with "retry:" so that browsers reconnect after 3 s.
package stream

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"horizon/shared/problem"
)

// Defaults for the zero values of Config.
const (
	DefaultHeartbeat    = 15 * time.Second
	DefaultWriteTimeout = time.Minute
	DefaultMaxStreams   = 2000
)

// retryMillis is the reconnection delay SSE clients are told to use.
const retryMillis = 3000

// Config tunes a Server.
type Config struct {
	// Heartbeat is how often an SSE stream sends a comment (HORIZON_SSE_HEARTBEAT).
	Heartbeat time.Duration
	// WriteTimeout cuts a response whose client accepts nothing for this long
	// (HORIZON_SSE_WRITE_TIMEOUT).
	WriteTimeout time.Duration
	// MaxStreams bounds the responses open at once (HORIZON_SSE_MAX_STREAMS).
	MaxStreams int
}

func (c Config) withDefaults() Config {
	if c.Heartbeat <= 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.MaxStreams <= 0 {
		c.MaxStreams = DefaultMaxStreams
	}
	return c
}

// Server opens streamed responses and keeps count of them. It is safe for concurrent use.
type Server struct {
	cfg  Config
	log  *slog.Logger
	open atomic.Int64
	// gauge counts open responses by kind: the SSE streams ("events", "logs") and downloads.
	gauge *prometheus.GaugeVec

	// ctx is the parent of every response's context; Close cancels it.
	ctx   context.Context
	close context.CancelFunc
}

// NewServer returns a Server whose open responses are counted on reg as
// horizon_sse_connections{stream} (and downloads as stream="download").
func NewServer(cfg Config, log *slog.Logger, reg prometheus.Registerer) *Server {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg.withDefaults(), log: log, ctx: ctx, close: cancel, gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "horizon_sse_connections",
		Help: "Streamed responses open in this process: SSE connections (stream events or logs) and log downloads (stream download).",
	}, []string{"stream"})}
	reg.MustRegister(s.gauge)
	return s
}

// Config returns the server's settings, defaults applied.
func (s *Server) Config() Config { return s.cfg }

// Open returns the number of responses open now.
func (s *Server) Open() int { return int(s.open.Load()) }

// Close ends every open response (their contexts are cancelled) and refuses new ones. Call it
// before shutting the app down, which otherwise waits for them.
func (s *Server) Close() { s.close() }

func (s *Server) closed() bool { return s.ctx.Err() != nil }

// errTooMany is the problem answered when MaxStreams responses are open.
var errTooMany = problem.New(problem.TypeUnavailable, 503, "This server has too many open streams; retry shortly.")

func (s *Server) acquire(kind string) error {
	if s.closed() {
		p := *problem.New(problem.TypeUnavailable, 503, "The server is shutting down; reconnect to another replica.")
		p.Headers = map[string]string{fiber.HeaderRetryAfter: "1"}
		return &p
	}
	if s.open.Add(1) > int64(s.cfg.MaxStreams) {
		s.open.Add(-1)
		p := *errTooMany
		p.Headers = map[string]string{fiber.HeaderRetryAfter: "5"}
		return &p
	}
	s.gauge.WithLabelValues(kind).Inc()
	return nil
}

func (s *Server) release(kind string) {
	s.open.Add(-1)
	s.gauge.WithLabelValues(kind).Dec()
}

// Body streams a response body written by write, after the handler has set its status and
// headers. write gets a context that ends when the server closes, and a writer that pushes the
// write deadline on every write and fails (IsClientGone) once the client is gone. An error from write after bytes were
// sent cannot change the status any more: Body logs it and closes the connection without the
// final chunk, so that the client sees a truncated response rather than a complete one.
// Body returns the 503 problem when too many responses are open; the handler returns it.
func (s *Server) Body(c *fiber.Ctx, kind string, write func(ctx context.Context, w *bufio.Writer) error) error {
	return s.body(c, kind, downloadBuffer, write)
}

// The buffer between a response's writer and fasthttp's: large for downloads, which write
// without pause; small for event streams, which are mostly idle and flush after each burst.
const (
	downloadBuffer = 32 << 10
	sseBuffer      = 4 << 10
)

func (s *Server) body(c *fiber.Ctx, kind string, size int, write func(ctx context.Context, w *bufio.Writer) error) error {
	if err := s.acquire(kind); err != nil {
		return err
	}
	conn := c.Context().Conn()
	requestID, _ := c.Locals(problem.RequestIDLocal).(string)
	c.Context().SetConnectionClose()
	c.Context().SetBodyStreamWriter(func(bw *bufio.Writer) {
		defer s.release(kind)
		ctx, cancel := context.WithCancel(s.ctx)
		defer cancel()
		dw := &deadlineWriter{w: bw, conn: conn, timeout: s.cfg.WriteTimeout}
		out := bufio.NewWriterSize(dw, size)
		err := write(ctx, out)
		if err == nil {
			err = out.Flush()
		}
		if err != nil && !dw.failed() && ctx.Err() == nil {
			s.log.Error("streamed response failed", "stream", kind, "request_id", requestID, "error", err)
			_ = conn.Close() // the only way left to tell the client the body is incomplete
		}
	})
	return nil
}

// deadlineWriter writes to fasthttp's stream buffer, flushing it through to the connection and
// pushing the connection's write deadline on every write, and remembers the first failure.
type deadlineWriter struct {
	w       *bufio.Writer
	conn    net.Conn
	timeout time.Duration
	err     error
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	// The connection goroutine copies from fasthttp's pipe to conn; a deadline on conn is what
	// ends a write to a client that stopped reading. Errors setting it are those of a closed
	// connection, which the write reports next.
	_ = d.conn.SetWriteDeadline(time.Now().Add(d.timeout))
	n, err := d.w.Write(p)
	if err == nil {
		err = d.w.Flush()
	}
	if err != nil {
		d.err = errClientGone
	}
	return n, d.err
}

func (d *deadlineWriter) failed() bool { return d.err != nil }

// errClientGone is what a write returns once the client has disconnected or stopped reading
// for longer than the write timeout.
var errClientGone = errors.New("client gone")

// IsClientGone reports whether err is a write to a client that is gone.
func IsClientGone(err error) bool { return errors.Is(err, errClientGone) }
