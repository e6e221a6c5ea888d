// Package authcache keeps recently authenticated tokens in memory so that a request costs one
// database round trip (its own), not two.
//
// An entry lives at most TTL (HORIZON_AUTH_CACHE_TTL, default 5 s). Anything that weakens a
// token — revoking it, changing its user's role or teams — calls Forget, which evicts locally at
// once and publishes the eviction on Redis so every other API replica evicts too. If that
// message is lost (Redis down at that instant), the TTL bounds how long another replica may
// still accept the token: that window is the price of the cache, and TTL 0 disables it.
//
// Event and log streams outlive any entry: they run under Bound, whose context the same
// evictions end, on every replica, as soon as they arrive — and which ends with every other
// stream when the eviction channel comes back after an outage, since evictions may have been
// lost meanwhile. A revoked token's streams end within the eviction's delivery time (well under
// a second); its clients reconnect and are refused.
package authcache

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"horizon/shared/auth"
)

// maxEntries bounds memory: past it the cache is emptied rather than grown (tokens in use come
// back on their next request).
const maxEntries = 10_000

// Cache is a TTL cache of principals by token hash. The zero value is not usable; call New.
type Cache struct {
	ttl     time.Duration
	rdb     redis.UniversalClient
	channel string
	now     func() time.Time

	// live is true while the eviction subscription is confirmed; the cache is bypassed
	// otherwise.
	live atomic.Bool

	mu      sync.Mutex
	entries map[string]entry
	// bound are the open streams' contexts, ended by a Forget of their token or user.
	bound map[*binding]struct{}
	// lost is set while evictions may be missed (the subscription is down).
	lost bool
}

// binding is one stream's tie to its principal.
type binding struct {
	token, user uuid.UUID
	end         context.CancelCauseFunc
}

// ErrRevoked ends the context of a stream whose token was revoked, or whose user's role or
// teams changed; the client reconnects and is authenticated again.
var ErrRevoked = errors.New("the token was revoked or its rights changed")

type entry struct {
	p       auth.Principal
	expires time.Time
}

// New returns a cache whose evictions travel on namespace's Redis channel.
func New(rdb redis.UniversalClient, namespace string, ttl time.Duration) *Cache {
	return &Cache{ttl: ttl, rdb: rdb, channel: namespace + ":auth:evict", now: time.Now, entries: map[string]entry{},
		bound: map[*binding]struct{}{}}
}

// Get returns the principal cached for a token hash.
func (c *Cache) Get(hash []byte) (auth.Principal, bool) {
	if c == nil || c.ttl <= 0 || !c.live.Load() {
		return auth.Principal{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[string(hash)]
	if !ok || c.now().After(e.expires) {
		return auth.Principal{}, false
	}
	return e.p, true
}

// Put caches the principal of a token hash.
func (c *Cache) Put(hash []byte, p auth.Principal) {
	if c == nil || c.ttl <= 0 || !c.live.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxEntries {
		c.entries = map[string]entry{}
	}
	c.entries[string(hash)] = entry{p: p, expires: c.now().Add(c.ttl)}
}

// Forget evicts every entry of a token or of a user, here and on every replica. Call it after
// the change that motivates it has committed.
func (c *Cache) Forget(ctx context.Context, log *slog.Logger, token, user *uuid.UUID) {
	if c == nil {
		return
	}
	var msg string
	switch {
	case token != nil:
		msg = "token:" + token.String()
	case user != nil:
		msg = "user:" + user.String()
	default:
		return
	}
	c.evict(msg)
	if err := c.rdb.Publish(ctx, c.channel, msg).Err(); err != nil {
		log.WarnContext(ctx, "publish auth cache eviction; other replicas keep it until it expires", "error", err, "ttl", c.ttl)
	}
}

func (c *Cache) evict(msg string) {
	kind, id, ok := strings.Cut(msg, ":")
	if !ok {
		return
	}
	matches := func(token, user uuid.UUID) bool {
		return (kind == "token" && token.String() == id) || (kind == "user" && user.String() == id)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if matches(e.p.TokenID, e.p.UserID) {
			delete(c.entries, k)
		}
	}
	for b := range c.bound {
		if matches(b.token, b.user) {
			b.end(ErrRevoked)
			delete(c.bound, b)
		}
	}
}

// Bound returns a context that also ends (cause ErrRevoked) when the principal's token is
// revoked or its user's role or teams change, on any replica — as soon as the eviction
// arrives — and when evictions may have been lost (the eviction channel was down: every bound
// context ends once it is back). Long-lived responses (event and log streams) run under it, so
// that a revoked token stops receiving at once, not at the client's next request. Call stop
// when the response ends.
func (c *Cache) Bound(ctx context.Context, p auth.Principal) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	b := &binding{token: p.TokenID, user: p.UserID, end: cancel}
	c.mu.Lock()
	c.bound[b] = struct{}{}
	c.mu.Unlock()
	return ctx, func() {
		c.mu.Lock()
		delete(c.bound, b)
		c.mu.Unlock()
		cancel(nil)
	}
}

// endBound ends every bound context: evictions may have been lost.
func (c *Cache) endBound() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for b := range c.bound {
		b.end(ErrRevoked)
	}
	c.bound = map[*binding]struct{}{}
}

// Run applies evictions published by other replicas until ctx ends. Only while it is
// subscribed is the cache used at all: after a connection error it is emptied and bypassed until
// the subscription is confirmed again, so an eviction lost in an outage cannot outlive it. Run it
// once per process.
func (c *Cache) Run(ctx context.Context, log *slog.Logger) {
	if c == nil {
		return
	}
	sub := c.rdb.Subscribe(ctx, c.channel)
	defer sub.Close()
	for ctx.Err() == nil {
		msg, err := sub.ReceiveTimeout(ctx, 30*time.Second)
		switch m := msg.(type) {
		case *redis.Subscription:
			// (Re)subscribed: entries cached before, and streams bound before, may have missed
			// evictions.
			c.flush()
			c.mu.Lock()
			lost := c.lost
			c.lost = false
			c.mu.Unlock()
			if lost {
				c.endBound()
			}
			c.live.Store(true)
			continue
		case *redis.Message:
			c.evict(m.Payload)
			continue
		case *redis.Pong:
			continue
		}
		var nerr interface{ Timeout() bool }
		if errors.As(err, &nerr) && nerr.Timeout() {
			// Quiet channel: ping so that a dead connection shows as an error next time.
			_ = sub.Ping(ctx) // its failure surfaces on the next receive
			continue
		}
		// A client closed by our own shutdown is not an outage worth a warning.
		closing := ctx.Err() != nil || errors.Is(err, redis.ErrClosed) || errors.Is(err, net.ErrClosed)
		if c.live.Swap(false) && !closing {
			log.Warn("auth cache lost its eviction subscription; bypassing it until resubscribed", "error", err)
		}
		c.mu.Lock()
		c.lost = true
		c.mu.Unlock()
		c.flush()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// Live reports whether the cache is in use: subscribed to evictions.
func (c *Cache) Live() bool { return c != nil && c.live.Load() }

func (c *Cache) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = map[string]entry{}
}
