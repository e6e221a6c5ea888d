package logstream

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"horizon/shared/rstream"
	"horizon/shared/store"
)

// subscriptionBuffer is the capacity of a subscription's channel: enough to carry what arrives between
// two flushes of an SSE writer, small next to rstream.Config.Buffer, which is where a slow
// reader is measured. Every open subscription pays for it (a Message is about 170 bytes).
const subscriptionBuffer = 16

// Hub follows runs' logs for the API: one reader goroutine per run being followed in this
// process, fanned out to every follower (rstream.Hub). It is safe for concurrent use.
type Hub struct {
	c   *Client
	hub *rstream.Hub[Message]
}

// NewHub returns a Hub that backfills through c and reads live entries through rdb, which
// should be a client of its own: every run followed holds one of its connections in XREAD, so
// its PoolSize bounds how many runs a process can follow at once, and each such connection
// costs go-redis's read and write buffers (32 KiB each by default; ReadBufferSize and
// WriteBufferSize).
func NewHub(c *Client, rdb redis.UniversalClient, cfg rstream.Config) *Hub {
	return &Hub{c: c, hub: rstream.NewHub(rdb, cfg, decode)}
}

// Stats returns the hub's counters.
func (h *Hub) Stats() rstream.Stats { return h.hub.Stats() }

// Close ends every follower and stops the readers; see rstream.Hub.Close.
func (h *Hub) Close() { h.hub.Close() }

// Follow passes to fn, in order, every message of run's log after the id after (zero: from
// the start) that matches f: the backfill (Client.Backfill), then live lines as they are
// written, until the end of the log, which it passes too. Resuming with the ID of the last
// message received gives exactly the rest, with no line lost or repeated, for as long as the
// lines are stored. The end message's Unstreamed counts the stored lines the follow could not
// pass because they were never in the live stream: a follower told a number above 0 reads the
// stored log for the complete one.
//
// A follower whose fn does not keep up is dropped once it is rstream.Config.Buffer behind: fn
// then gets a KindLagging message whose ID is where to resume. Follow returns nil after
// passing an end or lagging message, ctx's error when ctx ends, rstream.ErrClosed when the hub
// closes, and fn's error as is.
func (h *Hub) Follow(ctx context.Context, run uuid.UUID, after rstream.ID, f Filter, fn func(Message) error) error {
	fn = h.c.countUnstreamed(ctx, run, f, fn)
	cur, ended, err := h.c.Backfill(ctx, run, after, f, fn)
	if err != nil || ended {
		return err
	}
	m, err := h.hub.Join(ctx, h.c.Key(run), cur)
	if err != nil {
		return err
	}
	defer m.Leave()
	for {
		entries, err := m.Next(ctx)
		if errors.Is(err, rstream.ErrLagging) {
			return fn(Message{Kind: KindLagging, ID: cur})
		}
		if err != nil {
			return err
		}
		for _, e := range entries {
			msg := e.Value // a copy: entries are shared with other followers
			msg.ID, cur = e.ID, e.ID
			if msg.Kind == KindEnd {
				return fn(msg)
			}
			msg.Line.ID, msg.Line.Run = e.ID, run
			if !f.match(&msg.Line) {
				continue
			}
			if err := fn(msg); err != nil {
				return err
			}
		}
	}
}

// countUnstreamed wraps a follower's fn: it sets the end's Unstreamed, from the stored lines
// with fallback ids that match f, less those fn was passed (from Postgres, in a backfill).
func (c *Client) countUnstreamed(ctx context.Context, run uuid.UUID, f Filter, fn func(Message) error) func(Message) error {
	var passed int64
	return func(m Message) error {
		switch {
		case m.Kind == KindLine && m.ID.Seq&fallbackBit != 0:
			passed++
		case m.Kind == KindEnd:
			// Every writer of the run is closed once it has ended: the count is final.
			n, err := store.LogLinesCountFrom(ctx, c.db, run, f.store(), fallbackBit)
			if err != nil {
				return err
			}
			m.Unstreamed = max(n-passed, 0)
		}
		return fn(m)
	}
}

// Subscribe starts following run's log (see Follow) in a goroutine of its own, until ctx ends
// or the subscription is closed; its channel is closed after the end or lagging message. A
// reader that stops receiving is, in time, dropped with a lagging message; until then the
// subscription holds at most rstream.Config.Buffer of entries plus its channel's small buffer.
func (h *Hub) Subscribe(ctx context.Context, run uuid.UUID, after rstream.ID, f Filter) *rstream.Subscription[Message] {
	return rstream.Subscribe(ctx, subscriptionBuffer, func(ctx context.Context, fn func(Message) error) error {
		return h.Follow(ctx, run, after, f, fn)
	})
}
