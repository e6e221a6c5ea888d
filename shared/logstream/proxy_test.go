package logstream_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"horizon/shared/testkit"
)

// redisVia returns a client that reaches Redis through p and does not retry.
func redisVia(t testing.TB, p *testkit.Proxy) *redis.Client {
	t.Helper()
	// The test Redis's own settings (database, credentials), only reached through the proxy.
	opts, err := redis.ParseURL(testkit.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	opts.Addr, opts.MaxRetries, opts.DialTimeout = p.Addr(), -1, time.Second
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() }) // nothing to flush
	return c
}
