package events

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"horizon/shared/rstream"
)

// Defaults for the zero values of Config.
const (
	DefaultPrefix = "horizon"
	DefaultMaxLen = 10_000
)

// Config names and bounds the events stream.
type Config struct {
	// Prefix starts the key: <Prefix>:events. Default "horizon".
	Prefix string
	// MaxLen is the approximate length (XADD MAXLEN ~) at which the stream is trimmed; it is
	// the retention within which a client resumes without a reset. Default 10 000.
	MaxLen int64
}

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.MaxLen <= 0 {
		c.MaxLen = DefaultMaxLen
	}
	return c
}

func (c Config) key() string { return c.Prefix + ":events" }

// field is the one field of an entry: the event's JSON.
const field = "event"

// Publisher appends events to the events stream. It is safe for concurrent use.
type Publisher struct {
	rdb redis.UniversalClient
	cfg Config
}

// NewPublisher returns a Publisher writing through rdb.
func NewPublisher(rdb redis.UniversalClient, cfg Config) *Publisher {
	return &Publisher{rdb: rdb, cfg: cfg.withDefaults()}
}

// Publish appends e (At set to now if zero) and returns its stream id. Call it after the
// Postgres transaction that made the change has committed, so that no client hears of a
// change that then rolls back. An invalid event (see Event) is refused before Redis is
// touched. A failed Publish loses the event — Postgres remains the truth and clients reload
// it on reconnect — so the caller logs the error and goes on.
func (p *Publisher) Publish(ctx context.Context, e Event) (rstream.ID, error) {
	if err := e.validate(); err != nil {
		return rstream.ID{}, fmt.Errorf("publish event: %w", err)
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	e.At = e.At.UTC()
	b, err := json.Marshal(e)
	if err != nil {
		return rstream.ID{}, fmt.Errorf("encode event: %w", err)
	}
	id, err := p.rdb.XAdd(ctx, &redis.XAddArgs{
		Stream: p.cfg.key(), MaxLen: p.cfg.MaxLen, Approx: true, Values: []string{field, string(b)},
	}).Result()
	if err != nil {
		return rstream.ID{}, fmt.Errorf("publish %s event %s: %w", e.Type, e.ID, err)
	}
	return rstream.ParseID(id)
}
