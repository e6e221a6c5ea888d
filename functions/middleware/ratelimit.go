package middleware

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"horizon/functions/api"
	"horizon/shared/problem"
)

// reserveScript reserves up to ARGV[2] requests of a token's budget for the current window and
// returns how many were granted and the window's remaining milliseconds.
var reserveScript = redis.NewScript(`
local n = redis.call('INCRBY', KEYS[1], ARGV[2])
if n == tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local limit = tonumber(ARGV[3])
local before = n - tonumber(ARGV[2])
local granted = math.max(0, math.min(tonumber(ARGV[2]), limit - before))
return {granted, redis.call('PTTL', KEYS[1])}`)

// RateLimit allows each token limit requests per fixed window, across every API replica: the
// budget lives in Redis (Fiber's limiter counts per process and per IP).
//
// To keep Redis off the path of every request, a replica reserves the budget in small chunks
// (a fiftieth of the limit, at most 32, at least 1) and spends them locally. Reservations are
// counted in Redis, so all replicas together never admit more than limit requests per window;
// the price is that a chunk reserved by one replica and left unused cannot serve another.
//
// It fails open: when Redis does not answer, requests are served and the failure is logged,
// because refusing every request would turn a Redis outage into a full API outage.
func RateLimit(d api.Deps, limit int, window time.Duration) fiber.Handler {
	l := &limiter{d: d, limit: limit, window: window, chunk: max(1, min(32, limit/50)), buckets: map[uuid.UUID]*bucket{}}
	return func(c *fiber.Ctx) error {
		ok, retry, err := l.take(c.UserContext(), api.Principal(c).TokenID)
		if err != nil {
			d.Log.WarnContext(c.UserContext(), "rate limit unavailable", "error", err)
			return c.Next()
		}
		if !ok {
			after := strconv.FormatInt(int64((retry+time.Second-1)/time.Second), 10)
			pr := problem.New(problem.TypeRateLimited, 429, "This token made more than %d requests in %s; retry after %s s.", limit, window, after)
			pr.Headers = map[string]string{"Retry-After": after, "RateLimit-Limit": strconv.Itoa(limit)}
			return pr
		}
		c.Set("RateLimit-Limit", strconv.Itoa(limit))
		return c.Next()
	}
}

type limiter struct {
	d      api.Deps
	limit  int
	window time.Duration
	chunk  int

	mu      sync.Mutex
	buckets map[uuid.UUID]*bucket
}

// bucket is one token's locally held budget for one window.
type bucket struct {
	mu        sync.Mutex
	slot      int64
	left      int       // reserved and not yet spent
	exhausted time.Time // when Redis said the window's budget is gone: refuse until the window ends
	windowEnd time.Time
}

// take spends one request of the token's budget. It reports whether the request may go on and,
// if not, how long until the window resets.
func (l *limiter) take(ctx context.Context, token uuid.UUID) (bool, time.Duration, error) {
	now := l.d.Now()
	slot := now.UnixMilli() / l.window.Milliseconds()
	b := l.bucket(token, slot)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.slot != slot {
		// A new window: nothing reserved yet. (Fields one by one: b.mu is held.)
		b.slot, b.left, b.exhausted, b.windowEnd = slot, 0, time.Time{}, time.Time{}
	}
	if b.left > 0 {
		b.left--
		return true, 0, nil
	}
	if !b.exhausted.IsZero() {
		return false, b.windowEnd.Sub(now), nil
	}
	key := l.d.Namespace + ":ratelimit:" + token.String() + ":" + strconv.FormatInt(slot, 10)
	res, err := reserveScript.Run(ctx, l.d.Redis, []string{key}, l.window.Milliseconds(), l.chunk, l.limit).Int64Slice()
	if err != nil || len(res) != 2 {
		return true, 0, err
	}
	ttl := time.Duration(res[1]) * time.Millisecond
	if ttl < 0 {
		ttl = l.window
	}
	b.windowEnd = now.Add(ttl)
	if res[0] == 0 {
		b.exhausted = now
		return false, ttl, nil
	}
	b.left = int(res[0]) - 1
	return true, 0, nil
}

// bucket returns the token's bucket, dropping buckets of past windows once the map grows.
func (l *limiter) bucket(token uuid.UUID, slot int64) *bucket {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[token]
	if !ok {
		if len(l.buckets) >= 10_000 {
			for k, old := range l.buckets {
				old.mu.Lock()
				stale := old.slot != slot
				old.mu.Unlock()
				if stale {
					delete(l.buckets, k)
				}
			}
		}
		b = &bucket{slot: slot}
		l.buckets[token] = b
	}
	return b
}
