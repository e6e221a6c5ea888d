package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"horizon/shared/redisconn"
	"horizon/shared/store"
)

// benchEnv is a throwaway database and Redis namespace for one benchmark run.
type benchEnv struct {
	DB    *pgxpool.Pool
	Redis *redis.Client
	NS    string
	// DatabaseURL and RedisURL are where DB and Redis are, for the processes a benchmark starts.
	DatabaseURL, RedisURL string
	drop                  func()
}

func newBenchEnv(ctx context.Context) (*benchEnv, error) {
	admin := envOr("HORIZON_BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	defer c.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "horizon_bench_" + hex.EncodeToString(b)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, err
	}
	u, _ := url.Parse(admin)
	u.Path = "/" + name
	pool, err := store.Open(ctx, store.Config{URL: u.String(), MaxConns: 32})
	if err != nil {
		return nil, err
	}
	if err := store.Migrate(ctx, pool); err != nil {
		return nil, err
	}
	redisURL := envOr("HORIZON_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
	opts, _, err := redisconn.Parse(redisURL)
	if err != nil {
		return nil, err
	}
	rdb := opts.NewClient(0)
	ns := "bench" + hex.EncodeToString(b)
	return &benchEnv{DB: pool, Redis: rdb, NS: ns, DatabaseURL: u.String(), RedisURL: redisURL, drop: func() {
		pool.Close()
		iter := rdb.Scan(ctx, 0, ns+"*", 1000).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		_ = rdb.Close()
		if os.Getenv("HORIZON_BENCH_KEEP_DB") != "" {
			fmt.Printf("kept database %s (HORIZON_BENCH_KEEP_DB)\n", name)
			return
		}
		if c, err := pgx.Connect(ctx, admin); err == nil {
			_, _ = c.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)")
			_ = c.Close(ctx)
		}
	}}, nil
}

func (e *benchEnv) Close() { e.drop() }

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
