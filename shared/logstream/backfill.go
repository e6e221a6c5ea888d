package logstream

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"horizon/shared/horizon"
	"horizon/shared/rstream"
	"horizon/shared/store"
)

// Backfill passes to fn, in order, every message of run's log after the id after that is
// stored now: the lines that match f and, if the log has ended, the end, last. The zero id
// means from the start. It returns the id of the last entry it read, matched or not, from which
// a follower goes on live, and whether it reached the end.
//
// Lines come from the Redis stream, a page at a time; entries trimmed from the stream (MAXLEN)
// are read from log_lines instead, in the same order, and so is the whole log once the stream
// has expired. An error from fn stops the backfill and is returned as is.
func (c *Client) Backfill(ctx context.Context, run uuid.UUID, after rstream.ID, f Filter, fn func(Message) error) (rstream.ID, bool, error) {
	key := c.Key(run)
	cur := after
	endKnown := false
	for {
		p, err := rstream.ReadPage(ctx, c.rdb, key, cur, int64(c.cfg.PageSize))
		if err != nil {
			return cur, false, err
		}
		if !p.Exists {
			return c.backfillStored(ctx, run, cur, f, fn)
		}
		if p.Trimmed {
			if err := c.awaitStored(ctx, run, p); err != nil {
				return cur, false, err
			}
			if cur, err = c.backfillRows(ctx, run, cur, p.First, f, fn); err != nil {
				return cur, false, err
			}
		}
		for _, e := range p.Entries {
			m, _ := decode(e)
			m.ID, _ = rstream.ParseID(e.ID) // an id Redis returned
			cur = m.ID
			if m.Kind == KindEnd {
				return cur, true, fn(m)
			}
			m.Line.ID, m.Line.Run = m.ID, run
			if f.match(&m.Line) {
				if err := fn(m); err != nil {
					return cur, false, err
				}
			}
		}
		if len(p.Entries) == c.cfg.PageSize {
			continue
		}
		// Caught up. The stream has no eof after cur, but log_ends may have one: End could not
		// reach Redis, or the eof is being added right now. If that end is later than cur,
		// read the stream once more for the lines written before it, then stop.
		end, err := store.LogEndGet(ctx, c.db, run)
		switch {
		case errors.Is(err, horizon.ErrNotFound):
			return cur, false, nil
		case err != nil:
			return cur, false, err
		case endKnown || !cur.Less(fromPos(end.Pos)):
			return cur, true, fn(Message{Kind: KindEnd, ID: fromPos(end.Pos), Status: end.Status})
		}
		endKnown = true
	}
}

// storePoll is how often awaitStored looks at Postgres again.
const storePoll = 50 * time.Millisecond

// awaitStored waits until every entry the stream held before p.First — p.Added − p.Length of
// them, since Horizon never XDELs — is in log_lines, so that the gap read from Postgres misses
// none. Trimming does not wait for storage: with a short MaxLen, or a slow Postgres, a
// far-behind reader would otherwise skip lines streamed but not yet stored. It gives up after
// Config.StoreWait and lets the backfill read what is there, because some entries are never
// stored under their stream id: a line whose COPY was abandoned (ErrNotDurable), or whose XADD
// outcome was unknown (it is stored under a fallback id), or an eof trimmed behind later
// entries.
func (c *Client) awaitStored(ctx context.Context, run uuid.UUID, p rstream.Page) error {
	if p.Length == 0 {
		return nil
	}
	deadline := time.Now().Add(c.cfg.StoreWait)
	for {
		n, err := store.LogLinesCountBefore(ctx, c.db, run, toPos(p.First), fallbackBit)
		if err != nil || n >= p.Added-p.Length || time.Now().After(deadline) {
			return err
		}
		select {
		case <-time.After(storePoll):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// backfillStored serves a run whose stream does not exist — it expired, or was never
// written, or Redis lost it — from Postgres alone. The end is read first: once it is recorded
// every line is stored (End comes after every Writer's Close), so the lines read next are all
// of them.
func (c *Client) backfillStored(ctx context.Context, run uuid.UUID, cur rstream.ID, f Filter, fn func(Message) error) (rstream.ID, bool, error) {
	end, err := store.LogEndGet(ctx, c.db, run)
	ended := err == nil
	if err != nil && !errors.Is(err, horizon.ErrNotFound) {
		return cur, false, err
	}
	if cur, err = c.backfillRows(ctx, run, cur, rstream.ID{MS: uint64(store.LogPosMax.MS), Seq: uint64(store.LogPosMax.Seq)}, f, fn); err != nil || !ended {
		return cur, false, err
	}
	return cur, true, fn(Message{Kind: KindEnd, ID: fromPos(end.Pos), Status: end.Status})
}

// backfillRows passes the stored lines of run strictly between after and before that match f,
// and returns the id of the last one (after if none). It reads a page, closes the query and
// only then calls fn, so that a slow follower never holds a Postgres connection.
func (c *Client) backfillRows(ctx context.Context, run uuid.UUID, after, before rstream.ID, f Filter, fn func(Message) error) (rstream.ID, error) {
	cur := after
	page := make([]Line, 0, c.cfg.PageSize)
	for {
		page = page[:0]
		_, err := store.LogLinesOfRun(ctx, c.db, run, toPos(cur), toPos(before), f.store(), c.cfg.PageSize, func(r store.LogLine) error {
			page = append(page, fromRow(&r))
			return nil
		})
		if err != nil {
			return cur, err
		}
		for _, l := range page {
			cur = l.ID
			if err := fn(Message{Kind: KindLine, ID: l.ID, Line: l}); err != nil {
				return cur, err
			}
		}
		if len(page) < c.cfg.PageSize {
			return cur, nil
		}
	}
}
