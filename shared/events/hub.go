package events

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/redis/go-redis/v9"

	"horizon/shared/rstream"
)

const (
	// pageSize is how many entries a backfill reads per round trip.
	pageSize = 500
	// subscriptionBuffer is the capacity of a subscription's channel.
	subscriptionBuffer = 64
)

// MessageKind says what a Message is; its String is the SSE event name.
type MessageKind int

// The kinds of Message.
const (
	// KindEvent carries an event.
	KindEvent MessageKind = iota + 1
	// KindReset says events after the resume id are gone (trimmed beyond MaxLen, or Redis
	// lost them): the client must reload what it shows. Live events follow it, from ID on.
	KindReset
	// KindLagging says the follower fell too far behind and was dropped; it is the last
	// message. Resume from ID.
	KindLagging
)

func (k MessageKind) String() string {
	switch k {
	case KindEvent:
		return "event"
	case KindReset:
		return "reset"
	case KindLagging:
		return "lagging"
	}
	return "unknown"
}

// Message is what a follower receives.
type Message struct {
	Kind MessageKind
	// ID is the stream id to send as the SSE id; for KindReset and KindLagging, where the
	// client's Last-Event-ID should now point.
	ID    rstream.ID
	Event Event // KindEvent
	// Data is Event's JSON as published, ready to be the SSE data. It is shared with other
	// followers and must not be modified.
	Data []byte
}

// Hub follows the events stream for the API: one reader goroutine in this process while
// anyone follows, fanned out to every follower, each with its own filter (rstream.Hub).
type Hub struct {
	rdb redis.UniversalClient
	key string
	hub *rstream.Hub[Message]
}

// NewHub returns a Hub reading the stream cfg names through rdb (a client of its own is
// best: its reader holds a connection in XREAD).
func NewHub(rdb redis.UniversalClient, cfg Config, hcfg rstream.Config) *Hub {
	return &Hub{rdb: rdb, key: cfg.withDefaults().key(), hub: rstream.NewHub(rdb, hcfg, decode)}
}

// decode reads an entry's event once for every follower. An entry that does not decode is
// passed with its zero Event, which no sensible filter keeps.
func decode(msg redis.XMessage) (Message, int) {
	s, _ := msg.Values[field].(string) // go-redis returns every field as a string
	m := Message{Kind: KindEvent, Data: []byte(s)}
	_ = json.Unmarshal(m.Data, &m.Event) // see above
	return m, len(s) + 256
}

// Tail returns the id of the last event published so far: following from it gives exactly the
// events published after this call.
func (h *Hub) Tail(ctx context.Context) (rstream.ID, error) { return rstream.Tail(ctx, h.rdb, h.key) }

// Stats returns the hub's counters.
func (h *Hub) Stats() rstream.Stats { return h.hub.Stats() }

// Close ends every follower and stops the reader; see rstream.Hub.Close.
func (h *Hub) Close() { h.hub.Close() }

// Follow passes to fn, in order, every event after the id after for which keep returns true,
// then every new one as it is published, until ctx ends. The zero id means from now on (a
// client with no Last-Event-ID). keep is where the API applies what the caller may see (their
// teams) and what it asked for (?stack=); it runs in Follow's goroutine and must be quick.
//
// Resuming with the ID of the last message received gives exactly the events after it while
// they are within the stream's MaxLen; when some are gone, fn gets a KindReset first. A
// follower that does not keep up gets KindLagging, and Follow returns nil. Follow returns ctx's
// error when ctx ends, rstream.ErrClosed when the hub closes, and fn's error as is.
func (h *Hub) Follow(ctx context.Context, after rstream.ID, keep func(Event) bool, fn func(Message) error) error {
	cur, err := h.backfill(ctx, after, keep, fn)
	if err != nil {
		return err
	}
	m, err := h.hub.Join(ctx, h.key, cur)
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
			cur = e.ID
			if !keep(e.Value.Event) {
				continue
			}
			msg := e.Value
			msg.ID = e.ID
			if err := fn(msg); err != nil {
				return err
			}
		}
	}
}

// backfill passes the stored events after after, or a reset, and returns where to go live.
func (h *Hub) backfill(ctx context.Context, after rstream.ID, keep func(Event) bool, fn func(Message) error) (rstream.ID, error) {
	if after.IsZero() {
		return rstream.Tail(ctx, h.rdb, h.key)
	}
	cur := after
	for {
		p, err := rstream.ReadPage(ctx, h.rdb, h.key, cur, pageSize)
		if err != nil {
			return cur, err
		}
		// Gone: trimmed past cur, or the stream is missing or younger than cur (Redis lost
		// it). Either way the client's picture is stale.
		if !p.Exists || p.Trimmed || p.Last.Less(cur) {
			return p.Last, fn(Message{Kind: KindReset, ID: p.Last})
		}
		for _, e := range p.Entries {
			msg, _ := decode(e)
			msg.ID, _ = rstream.ParseID(e.ID) // an id Redis returned
			cur = msg.ID
			if keep(msg.Event) {
				if err := fn(msg); err != nil {
					return cur, err
				}
			}
		}
		if len(p.Entries) < pageSize {
			return cur, nil
		}
	}
}

// Subscribe starts following (see Follow) in a goroutine of its own, until ctx ends or the
// subscription is closed; its channel is closed after a lagging message.
func (h *Hub) Subscribe(ctx context.Context, after rstream.ID, keep func(Event) bool) *rstream.Subscription[Message] {
	return rstream.Subscribe(ctx, subscriptionBuffer, func(ctx context.Context, fn func(Message) error) error {
		return h.Follow(ctx, after, keep, fn)
	})
}
