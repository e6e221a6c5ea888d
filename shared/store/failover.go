package store

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Pool settings for a primary that goes away. pgxpool pings a connection it hands out only when
// it sat idle for more than a second, and its background check (default every minute) only
// retires old connections; with these, a dead or demoted primary is noticed within seconds.
const (
	// healthCheckPeriod is how often the pool retires connections past their idle time.
	healthCheckPeriod = 5 * time.Second
	// maxConnIdleTime bounds how long an idle connection to a host that has since failed over
	// stays in the pool.
	maxConnIdleTime = 30 * time.Second
	// connectTimeout bounds a dial to one host of the URL when the URL does not say
	// (connect_timeout): a host that does not answer is skipped for the next one.
	connectTimeout = 5 * time.Second
)

// ErrReadOnlyCode is SQLSTATE 25006, read_only_sql_transaction: the server this connection
// reached no longer takes writes (the primary was demoted, or a failover manager made it read
// only before switching).
const ErrReadOnlyCode = "25006"

// IsReadOnly says whether err is Postgres refusing a write because its server is read only.
func IsReadOnly(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == ErrReadOnlyCode
}

// readOnlyTracer watches every statement of the pool's connections and resets the pool when one
// fails with SQLSTATE 25006 or finds its connection gone: every pooled connection then went to
// the server that is no longer the primary, and target_session_attrs=read-write sends the new
// ones to the one that is. A pool left alone would hand out the read-only or dead connections
// (a connection used within the last second is not pinged) until each had failed once.
type readOnlyTracer struct {
	mu        sync.Mutex
	pool      *pgxpool.Pool
	lastReset time.Time
}

func (t *readOnlyTracer) saw(err error) {
	if !IsReadOnly(err) && !connectionLost(err) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// Many statements fail at once in a switch; one reset a second is enough.
	if t.pool == nil || time.Since(t.lastReset) < time.Second {
		return
	}
	t.lastReset = time.Now()
	// Reset closes the idle connections and marks those in use, this one included, to be
	// closed on release; it does not wait for them.
	t.pool.Reset()
}

func (t *readOnlyTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (t *readOnlyTracer) TraceQueryEnd(_ context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	t.saw(data.Err)
}

func (t *readOnlyTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (t *readOnlyTracer) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	t.saw(data.Err)
}

func (t *readOnlyTracer) TraceBatchEnd(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	t.saw(data.Err)
}

func (t *readOnlyTracer) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	return ctx
}

func (t *readOnlyTracer) TraceCopyFromEnd(_ context.Context, _ *pgx.Conn, data pgx.TraceCopyFromEndData) {
	t.saw(data.Err)
}

var (
	_ pgx.QueryTracer    = (*readOnlyTracer)(nil)
	_ pgx.BatchTracer    = (*readOnlyTracer)(nil)
	_ pgx.CopyFromTracer = (*readOnlyTracer)(nil)
)

// connectionLost says whether err means the connection's server went away (not a timeout or
// a cancellation of our own).
func connectionLost(err error) bool {
	if err == nil || pgconn.Timeout(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// 57P01-03: the server is shutting down (a stopping primary ends its sessions this way).
		return strings.HasPrefix(pe.Code, "57P")
	}
	var ne net.Error
	return errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.As(err, &ne) || pgconn.SafeToRetry(err)
}

// commitError marks a failed COMMIT: whether the transaction was committed is unknown, so it
// is never run again.
type commitError struct{ err error }

func (e commitError) Error() string { return "commit: " + e.err.Error() }
func (e commitError) Unwrap() error { return e.err }

// retryableAfterSwitch says whether a transaction that failed with err may be run again at
// once: it did not reach its COMMIT, and the server was read only or the connection was lost
// (the pool has been reset by then), so nothing of it was committed.
func retryableAfterSwitch(err error) bool {
	var ce commitError
	if errors.As(err, &ce) {
		return false
	}
	return IsReadOnly(err) || connectionLost(err)
}

// rolledBackByConflict says whether Postgres rolled the whole transaction back to resolve a
// conflict with another one: a deadlock (40P01: e.g. a cancel that locks a stack then its run,
// beside an advance that locks the run then the stack) or a serialization failure (40001).
// Nothing of it was committed, even when it was the COMMIT that failed, and running it again
// is what Postgres's documentation asks of the client.
func rolledBackByConflict(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}
