package middleware

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"horizon/functions/api"
	"horizon/shared/problem"
)

// rateScript counts a request in the current fixed window and returns the count and the
// window's remaining milliseconds, in one round trip.
var rateScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {n, redis.call('PTTL', KEYS[1])}`)

// RateLimit allows each token limit requests per window, counted in Redis so every API replica
// shares one budget (Fiber's limiter counts per process and per IP). It fails open: when Redis
// does not answer, requests are served and the failure is logged, because refusing every
// request would turn a Redis outage into a full API outage.
func RateLimit(d api.Deps, limit int, window time.Duration) fiber.Handler {
	return func(c *fiber.Ctx) error {
		p := api.Principal(c)
		now := d.Now()
		slot := now.UnixMilli() / window.Milliseconds()
		key := d.Namespace + ":ratelimit:" + p.TokenID.String() + ":" + strconv.FormatInt(slot, 10)
		res, err := rateScript.Run(c.UserContext(), d.Redis, []string{key}, window.Milliseconds()).Int64Slice()
		if err != nil || len(res) != 2 {
			d.Log.WarnContext(c.UserContext(), "rate limit unavailable", "error", err)
			return c.Next()
		}
		count, ttl := res[0], res[1]
		if ttl < 0 {
			ttl = window.Milliseconds()
		}
		remaining := int64(limit) - count
		if remaining < 0 {
			remaining = 0
		}
		reset := strconv.FormatInt((ttl+999)/1000, 10)
		c.Set("RateLimit-Limit", strconv.Itoa(limit))
		c.Set("RateLimit-Remaining", strconv.FormatInt(remaining, 10))
		c.Set("RateLimit-Reset", reset)
		if count > int64(limit) {
			pr := problem.New(problem.TypeRateLimited, 429, "This token made more than %d requests in %s; retry after %s s.", limit, window, reset)
			pr.Headers = map[string]string{"Retry-After": reset}
			return pr
		}
		return c.Next()
	}
}
