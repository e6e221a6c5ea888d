package rstream

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults for the zero values of Config.
const (
	DefaultBlock  = 2 * time.Second
	DefaultCount  = 512
	DefaultBuffer = 1 << 20
)

const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
)

var (
	// ErrLagging is returned by Member.Next once the member has been dropped because it fell
	// more than Config.Buffer behind, or because entries it had not read yet were trimmed
	// from the stream. It must resume by id (a new Join after a fresh backfill).
	ErrLagging = errors.New("subscriber lagging")
	// ErrClosed is returned by Join after Hub.Close, and by Member.Next after Close or Leave.
	ErrClosed = errors.New("stream hub closed")
)

// Config tunes a Hub.
type Config struct {
	// Block is how long one XREAD waits for new entries; default 2 s. A reader whose last
	// member left, or whose hub closed, stops within Block (go-redis cannot interrupt a
	// blocking read); an idle stream costs one XREAD per Block.
	Block time.Duration
	// Count is the most entries one XREAD or gap read returns; default 512.
	Count int64
	// Buffer bounds, in bytes as the Decoder sizes entries, what a member may have waiting
	// that it has not taken with Next; a member that would exceed it is dropped with
	// ErrLagging and its entries are released at once. A member with nothing waiting takes
	// any one batch, so the bound is Buffer plus one batch (Count entries). Default 1 MiB.
	Buffer int
}

func (c Config) withDefaults() Config {
	if c.Block <= 0 {
		c.Block = DefaultBlock
	}
	if c.Count <= 0 {
		c.Count = DefaultCount
	}
	if c.Buffer <= 0 {
		c.Buffer = DefaultBuffer
	}
	return c
}

// Entry is one decoded stream entry.
type Entry[T any] struct {
	ID    ID
	Value T
	// Size is what the entry counts against a member's Buffer.
	Size int
}

// Decoder turns a raw entry into a T and its approximate size in bytes. It runs once per entry
// per process, however many members receive it, and must not fail: a malformed entry decodes
// to whatever can be recovered from it.
type Decoder[T any] func(redis.XMessage) (T, int)

// Hub fans Redis streams out to in-process members: one reader goroutine, and so one blocked
// XREAD, per stream that has members, however many members it has. It is safe for concurrent
// use. Entries are decoded once and shared, read-only, by every member.
type Hub[T any] struct {
	rdb    redis.UniversalClient
	cfg    Config
	decode Decoder[T]

	mu      sync.Mutex // guards everything below and every member's queue
	streams map[string]*stream[T]
	closed  bool
	dropped int64

	done chan struct{}
	wg   sync.WaitGroup
}

// stream is the state of one key's reader; guarded by Hub.mu.
type stream[T any] struct {
	key     string
	last    ID // the last id fanned out, or where the first member joined
	members map[*Member[T]]struct{}
}

// NewHub returns a Hub reading through rdb. Every stream with members holds one of rdb's pool
// connections in a blocking XREAD, so give the Hub a client of its own whose PoolSize exceeds
// the number of streams expected to be followed at once.
func NewHub[T any](rdb redis.UniversalClient, cfg Config, decode Decoder[T]) *Hub[T] {
	return &Hub[T]{
		rdb:     rdb,
		cfg:     cfg.withDefaults(),
		decode:  decode,
		streams: map[string]*stream[T]{},
		done:    make(chan struct{}),
	}
}

// Stats is a snapshot of a Hub, for metrics and tests.
type Stats struct {
	Streams  int   // streams with a reader goroutine
	Members  int   // members joined and not dropped
	Buffered int   // bytes waiting in members' queues, counting shared entries once per member
	Dropped  int64 // members dropped as lagging since the Hub was created
}

// Stats returns a snapshot of the hub.
func (h *Hub[T]) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := Stats{Streams: len(h.streams), Dropped: h.dropped}
	for _, s := range h.streams {
		st.Members += len(s.members)
		for m := range s.members {
			st.Buffered += m.bytes
		}
	}
	return st
}

// Join adds a member to key's stream that already has every entry up to and including after:
// Next then returns every later entry exactly once, in order, until the member is dropped or
// leaves. Call it after backfilling up to after; the entries that the stream's reader fanned
// out between that backfill and the Join are read here, so nothing falls between the two.
// Join returns ErrClosed after Close. The caller must call Leave when done.
func (h *Hub[T]) Join(ctx context.Context, key string, after ID) (*Member[T], error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	s := h.streams[key]
	if s == nil {
		s = &stream[T]{key: key, last: after, members: map[*Member[T]]struct{}{}}
		h.streams[key] = s
		h.wg.Add(1)
		go h.read(s)
	}
	m := &Member[T]{h: h, s: s, after: after, ready: make(chan struct{}, 1)}
	s.members[m] = struct{}{}
	upTo := s.last
	h.mu.Unlock()

	if after.Less(upTo) {
		if err := m.fillGap(ctx, upTo); err != nil {
			m.Leave()
			return nil, err
		}
	}
	return m, nil
}

// Close stops every reader and ends every member with ErrClosed. It waits for the readers,
// which takes up to Config.Block.
func (h *Hub[T]) Close() {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		close(h.done)
		for _, s := range h.streams {
			for m := range s.members {
				m.end(ErrClosed)
			}
		}
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// read is the reader goroutine of one stream. It exits when the stream has no members left
// (checked after every XREAD, so within Block of the last Leave) or the hub closes.
func (h *Hub[T]) read(s *stream[T]) {
	defer h.wg.Done()
	backoff := minBackoff
	for {
		h.mu.Lock()
		if len(s.members) == 0 || h.closed {
			// Under the lock, so that a Join either finds this stream with its reader still
			// running or finds no stream and starts a new reader.
			delete(h.streams, s.key)
			h.mu.Unlock()
			return
		}
		from := s.last
		h.mu.Unlock()

		// Background: the read is bounded by Block, and the loop checks for members and
		// Close after each one.
		ctx := context.Background()
		res, err := h.rdb.XRead(ctx, &redis.XReadArgs{
			Streams: []string{s.key, from.String()}, Count: h.cfg.Count, Block: h.cfg.Block,
		}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			// Redis is unreachable: members keep waiting and get everything from from on
			// once it answers again.
			select {
			case <-time.After(backoff):
			case <-h.done:
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
		var msgs []redis.XMessage
		if len(res) > 0 {
			msgs = res[0].Messages
		}
		if len(msgs) == 0 {
			continue
		}
		// A full batch means the reader was behind: entries after from may have been trimmed
		// before it read them, and then no member may go on as if nothing were missing.
		// A partial batch was read while caught up, so nothing after from can have gone.
		batch := h.decodeAll(msgs)
		lost := false
		if int64(len(msgs)) == h.cfg.Count {
			gone, err := lostBefore(ctx, h.rdb, s.key, from, batch.entries[0].ID)
			lost = gone || err != nil
		}

		h.mu.Lock()
		s.last = batch.entries[len(batch.entries)-1].ID
		for m := range s.members {
			if lost {
				m.drop()
				continue
			}
			m.push(batch)
		}
		h.mu.Unlock()
	}
}

func (h *Hub[T]) decodeAll(msgs []redis.XMessage) batch[T] {
	b := batch[T]{entries: make([]Entry[T], len(msgs))}
	for i, msg := range msgs {
		v, size := h.decode(msg)
		b.entries[i] = Entry[T]{ID: mustParse(msg.ID), Value: v, Size: size}
		b.bytes += size
	}
	return b
}

// batch is a run of entries in id order, and the sum of their sizes.
type batch[T any] struct {
	entries []Entry[T]
	bytes   int
}

// after returns the part of b after id, sharing b's entries.
func (b batch[T]) after(id ID) batch[T] {
	i := 0
	for i < len(b.entries) && !id.Less(b.entries[i].ID) {
		i++
	}
	if i == 0 {
		return b
	}
	out := batch[T]{entries: b.entries[i:]}
	for _, e := range out.entries {
		out.bytes += e.Size
	}
	return out
}
