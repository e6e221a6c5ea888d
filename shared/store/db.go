package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Querier is what pgxpool.Pool and pgx.Tx have in common; every store operation takes one.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

var (
	_ Querier = (*pgxpool.Pool)(nil)
	_ Querier = (pgx.Tx)(nil)
)

// Config is what the store needs to connect.
type Config struct {
	// URL is a libpq connection string or postgres:// URL.
	URL string
	// MaxConns bounds the pool; 0 keeps pgx's default (max(4, GOMAXPROCS)).
	MaxConns int32
	// DefaultMaxConns bounds the pool when neither MaxConns nor the URL's pool_max_conns does.
	DefaultMaxConns int32
}

// Open connects a pool and checks that Postgres answers. The pool is set up for a failover: a
// URL of several hosts with target_session_attrs=read-write always connects to the current
// primary; a statement refused as read only (SQLSTATE 25006) resets the pool; idle connections
// are checked and retired within seconds (failover.go).
func Open(ctx context.Context, cfg Config) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	switch {
	case cfg.MaxConns > 0:
		pc.MaxConns = cfg.MaxConns
	case cfg.DefaultMaxConns > 0 && !strings.Contains(cfg.URL, "pool_max_conns"):
		pc.MaxConns = cfg.DefaultMaxConns
	}
	pc.HealthCheckPeriod = healthCheckPeriod
	pc.MaxConnIdleTime = min(pc.MaxConnIdleTime, maxConnIdleTime)
	if pc.ConnConfig.ConnectTimeout == 0 {
		pc.ConnConfig.ConnectTimeout = connectTimeout
	}
	tracer := &readOnlyTracer{}
	pc.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	tracer.mu.Lock()
	tracer.pool = pool
	tracer.mu.Unlock()
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping database: %w", err)
	}
	return pool, nil
}

// WithTx runs fn in a transaction and commits it when fn returns nil. When the transaction
// fails because the server turned out read only or the connection broke before the transaction
// began (a failover), or Postgres rolled it back to end a deadlock or a serialization failure,
// it runs fn again (at most twice more), in a new transaction: fn must not act outside the
// transaction before it returns.
func WithTx(ctx context.Context, pool *pgxpool.Pool, fn func(ctx context.Context, tx pgx.Tx) error) error {
	_, err := WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (struct{}, error) {
		return struct{}{}, fn(ctx, tx)
	})
	return err
}

// WithTxV is WithTx for a function that also returns a value.
func WithTxV[T any](ctx context.Context, pool *pgxpool.Pool, fn func(ctx context.Context, tx pgx.Tx) (T, error)) (T, error) {
	v, err := withTxOnce(ctx, pool, fn)
	for again := 0; again < 2 && err != nil && ctx.Err() == nil && (retryableAfterSwitch(err) || rolledBackByConflict(err)); again++ {
		v, err = withTxOnce(ctx, pool, fn)
	}
	return v, err
}

func withTxOnce[T any](ctx context.Context, pool *pgxpool.Pool, fn func(ctx context.Context, tx pgx.Tx) (T, error)) (T, error) {
	var zero T
	tx, err := pool.Begin(ctx)
	if err != nil {
		return zero, fmt.Errorf("begin: %w", err)
	}
	defer func() {
		// The rollback ignores the caller's cancellation so that a cancelled request still
		// releases its connection; after a commit it is a no-op.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tx.Rollback(rctx) // ErrTxClosed after commit; any other error closes the conn anyway
	}()
	v, err := fn(ctx, tx)
	if err != nil {
		return zero, err
	}
	if err := tx.Commit(ctx); err != nil {
		return zero, translate(commitError{err})
	}
	return v, nil
}
