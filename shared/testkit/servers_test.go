package testkit_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"horizon/shared/testkit"
)

// TestPrivatePostgresRestarts: a committed row survives an operator's restart and a crash of
// the test's own server, and a session open before a restart is broken by it.
func TestPrivatePostgresRestarts(t *testing.T) {
	t.Parallel()
	pg := testkit.StartPostgres(t, "kit")
	ctx := context.Background()
	c, err := pgx.Connect(ctx, pg.URL("kit"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `CREATE TABLE t (v int); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"fast", "immediate"} {
		if err := pg.Restart(mode); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, `SELECT 1`); err == nil {
			t.Fatalf("a session survived a %s restart", mode)
		}
		c.Close(ctx)
		if c, err = pgx.Connect(ctx, pg.URL("kit")); err != nil {
			t.Fatalf("after a %s restart: %v", mode, err)
		}
		var n int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("after a %s restart: %d rows, %v", mode, n, err)
		}
	}
}

// TestPrivateRedisRestarts: the test's own Redis keeps what it had after a shutdown (the
// append-only file is synced) and answers again after a SIGKILL and a start.
func TestPrivateRedisRestarts(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t)
	opts, err := redis.ParseURL(r.URL())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, "k").Err(); err == nil {
		t.Fatal("Redis answered while shut down")
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("after a restart: %q, %v", v, err)
	}
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("after a crash and a start: %v", err)
	}
}
