package notify

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// DefaultLease is how long a delivery handed to the queue waits for its attempt before the
// outbox's sweep hands it over again (HORIZON_WEBHOOK_LEASE): above an attempt's timeout and a
// queue's usual wait.
const DefaultLease = 2 * time.Minute

// retrySchedule is the Standard Webhooks specification's example: the delay before each attempt
// after the first (which is immediate). Ten attempts over about three days.
func retrySchedule() []time.Duration {
	return []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour,
		10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour}
}

// MaxAttempts is how many attempts a delivery gets before it is failed.
func MaxAttempts() int { return len(retrySchedule()) + 1 }

// MaxRetryAfter caps how long a Retry-After answer may postpone the next attempt.
const MaxRetryAfter = 24 * time.Hour

// NextDelay returns how long to wait before attempt number next (2 for the first retry) after
// an answer with header h (nil when there was no answer), and false when no attempt is left.
// The schedule's delay gets ±10 % jitter, so that the retries of many deliveries that failed
// together (a receiver down) do not arrive together; a Retry-After asking for longer wins.
func NextDelay(next int, h http.Header, now time.Time) (time.Duration, bool) {
	s := retrySchedule()
	if next < 2 || next-2 >= len(s) {
		return 0, false
	}
	d := s[next-2]
	d += time.Duration((rand.Float64()*0.2 - 0.1) * float64(d))
	if ra := RetryAfter(h, now); ra > d {
		d = min(ra, MaxRetryAfter)
	}
	return d, true
}

// RetryAfter parses a Retry-After header (seconds or an HTTP date); 0 when absent or bad.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
