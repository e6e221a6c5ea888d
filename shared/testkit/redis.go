package testkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"horizon/shared/redisconn"
)

// RedisURL is the Redis the tests use: HORIZON_TEST_REDIS_URL, or the local default.
func RedisURL() string {
	if u := os.Getenv("HORIZON_TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// Redis returns a client of the test Redis and a namespace unique to this test. Every key the
// test writes, and every Asynq queue it uses, must carry the namespace (Asynq has no key prefix,
// so queue names carry it); on cleanup every key of the namespace is deleted and the client is
// closed.
func Redis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	opts, _, err := redisconn.Parse(RedisURL())
	if err != nil {
		t.Fatalf("test redis url: %v", err)
	}
	c := opts.NewClient(0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("test redis at %s does not answer: %v", RedisURL(), err)
	}
	ns := "t" + randomHex(6)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// Our own keys start with the namespace; Asynq's embed the queue name in braces.
		for _, pattern := range []string{ns + "*", "asynq:{" + ns + "*"} {
			iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
			for iter.Next(ctx) {
				c.Del(ctx, iter.Val())
			}
		}
		_ = c.Close() // nothing left to flush on a client we are discarding
	})
	return c, ns
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}
