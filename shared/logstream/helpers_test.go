package logstream_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"horizon/shared/logstream"
	"horizon/shared/rstream"
	"horizon/shared/secrets"
	"horizon/shared/testkit"
)

// env is one test's Redis namespace, database and Client.
type env struct {
	t   testing.TB
	rdb *redis.Client
	ns  string
	db  *pgxpool.Pool
	c   *logstream.Client
}

func newEnv(t testing.TB, cfg logstream.Config) *env {
	t.Helper()
	rdb, ns := testkit.Redis(t)
	db := testkit.DB(t)
	cfg.Prefix = ns
	return &env{t: t, rdb: rdb, ns: ns, db: db, c: logstream.New(rdb, db, cfg)}
}

// hub returns a Hub on a Redis client of its own, as the API would run it, with a short block
// so that readers stop quickly.
func (e *env) hub(cfg rstream.Config) *logstream.Hub {
	e.t.Helper()
	if cfg.Block == 0 {
		cfg.Block = 100 * time.Millisecond
	}
	rdb := redis.NewClient(e.rdb.Options())
	h := logstream.NewHub(e.c, rdb, cfg)
	e.t.Cleanup(func() {
		h.Close()
		_ = rdb.Close() // nothing to flush on a reader's client
	})
	return h
}

// source is who a test line is from.
type source struct {
	step uuid.UUID
	job  string
	exec int
}

// write writes n lines "<prefix> <i>" from src through a new Writer and closes it.
func (e *env) write(run, stack uuid.UUID, src source, prefix string, n int) {
	e.t.Helper()
	w := e.c.NewWriter(run, stack, &secrets.Masker{})
	for i := range n {
		if err := w.Line(src.step, src.job, src.exec, logstream.Stdout, fmt.Sprintf("%s %d", prefix, i)); err != nil {
			e.t.Fatalf("line %d: %v", i, err)
		}
	}
	if err := w.Close(context.Background()); err != nil {
		e.t.Fatalf("close writer: %v", err)
	}
}

func (e *env) end(run, stack uuid.UUID, status string) {
	e.t.Helper()
	if err := e.c.End(context.Background(), run, stack, status, 0); err != nil {
		e.t.Fatalf("end: %v", err)
	}
}

// backfill returns every message Backfill passes.
func (e *env) backfill(run uuid.UUID, after rstream.ID, f logstream.Filter) []logstream.Message {
	e.t.Helper()
	var out []logstream.Message
	_, _, err := e.c.Backfill(context.Background(), run, after, f, func(m logstream.Message) error {
		out = append(out, m)
		return nil
	})
	if err != nil {
		e.t.Fatalf("backfill: %v", err)
	}
	return out
}

// drain reads a subscription until C closes and returns its messages and Err.
func drain(t testing.TB, s *rstream.Subscription[logstream.Message]) ([]logstream.Message, error) {
	t.Helper()
	out, err := drainOrTimeout(s)
	if errors.Is(err, errStillOpen) {
		t.Fatalf("after %d messages: %v", len(out), err)
	}
	return out, err
}

var errStillOpen = errors.New("subscription still open after 30 s")

// drainOrTimeout is drain for goroutines other than the test's, which must not call Fatal.
func drainOrTimeout(s *rstream.Subscription[logstream.Message]) ([]logstream.Message, error) {
	deadline := time.After(30 * time.Second)
	var out []logstream.Message
	for {
		select {
		case m, ok := <-s.C:
			if !ok {
				return out, s.Err()
			}
			out = append(out, m)
		case <-deadline:
			return out, errStillOpen
		}
	}
}

func texts(ms []logstream.Message) []string {
	var out []string
	for _, m := range ms {
		switch m.Kind {
		case logstream.KindLine:
			out = append(out, m.Line.Text)
		default:
			out = append(out, "<"+m.Kind.String()+">")
		}
	}
	return out
}

func ids(ms []logstream.Message) []rstream.ID {
	out := make([]rstream.ID, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s %d", prefix, i)
	}
	return out
}
