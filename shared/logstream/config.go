package logstream

import (
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// Defaults for the zero values of Config.
const (
	DefaultPrefix        = "horizon"
	DefaultMaxLen        = 100_000
	DefaultRetention     = 7 * 24 * time.Hour
	DefaultMaxAge        = 30 * 24 * time.Hour
	DefaultFlushInterval = 5 * time.Millisecond
	DefaultFlushLines    = 256
	DefaultCopyInterval  = 250 * time.Millisecond
	DefaultCopyLines     = 4096
	DefaultBufferBytes   = 8 << 20
	DefaultRedisRetry    = time.Second
	DefaultPageSize      = 500
	DefaultStoreWait     = 5 * time.Second
)

// MaxLineBytes bounds one stored line. Line masks a longer text whole, then stores it as
// several lines of at most this many bytes, cut at UTF-8 boundaries.
const MaxLineBytes = 16 << 10

// Config tunes a Client. Every field has a default for its zero value.
type Config struct {
	// Prefix starts every key: <Prefix>:log:<run>. Default "horizon"; tests use their
	// testkit namespace.
	Prefix string
	// MaxLen is the approximate length (XADD MAXLEN ~) at which a run's stream is trimmed;
	// default 100 000. Backfills reach older lines through Postgres.
	MaxLen int64
	// Retention is how long a run's stream lives after End, when End is not given another;
	// default 7 days. Postgres keeps the lines until the stack is deleted.
	Retention time.Duration
	// MaxAge is the expiry set on a stream at its first write, so that the stream of a run
	// that never ends (End lost with its worker) still goes away; default 30 days.
	MaxAge time.Duration
	// FlushInterval and FlushLines batch a Writer's XADDs: a batch leaves FlushInterval after
	// its first line, or as soon as it has FlushLines lines. Defaults 5 ms and 256.
	FlushInterval time.Duration
	FlushLines    int
	// CopyInterval and CopyLines batch a Writer's COPY into log_lines the same way. Defaults
	// 250 ms and 4096.
	CopyInterval time.Duration
	CopyLines    int
	// BufferBytes bounds what one Writer holds of lines it accepted and has not yet stored in
	// Postgres; Line blocks while it is full. Default 8 MiB.
	BufferBytes int
	// RedisRetry is how long a Writer whose XADDs failed gives its lines fallback ids
	// without trying Redis, before trying again; default 1 s.
	RedisRetry time.Duration
	// PageSize is how many entries or rows a backfill reads per round trip; default 500.
	PageSize int
	// StoreWait bounds how long a backfill waits for lines trimmed from the stream to reach
	// Postgres before it reads the gap there; default 5 s. Lines are stored within
	// CopyInterval of being streamed unless Postgres is slow, so a backfill only waits when it
	// is about that close behind a trimmed stream.
	StoreWait time.Duration
}

func (c Config) withDefaults() Config {
	set := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	setD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.MaxLen <= 0 {
		c.MaxLen = DefaultMaxLen
	}
	setD(&c.Retention, DefaultRetention)
	setD(&c.MaxAge, DefaultMaxAge)
	setD(&c.FlushInterval, DefaultFlushInterval)
	setD(&c.CopyInterval, DefaultCopyInterval)
	setD(&c.RedisRetry, DefaultRedisRetry)
	setD(&c.StoreWait, DefaultStoreWait)
	set(&c.FlushLines, DefaultFlushLines)
	set(&c.CopyLines, DefaultCopyLines)
	set(&c.BufferBytes, DefaultBufferBytes)
	set(&c.PageSize, DefaultPageSize)
	return c
}

// Client is the door to deploy logs: it makes Writers (workers), ends runs' logs, backfills
// and downloads them. It is safe for concurrent use.
type Client struct {
	rdb redis.UniversalClient
	db  *pgxpool.Pool
	cfg Config
}

// New returns a Client on rdb and db.
func New(rdb redis.UniversalClient, db *pgxpool.Pool, cfg Config) *Client {
	return &Client{rdb: rdb, db: db, cfg: cfg.withDefaults()}
}

// Key returns the Redis key of run's stream.
func (c *Client) Key(run uuid.UUID) string { return c.cfg.Prefix + ":log:" + run.String() }
