package logs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/functions/stream"
	"horizon/shared/events"
	"horizon/shared/horizon"
	"horizon/shared/logstream"
	"horizon/shared/problem"
	"horizon/shared/rstream"
	"horizon/shared/store"
)

// Stream follows a run's log as Server-Sent Events: backfill, live lines, and an end event,
// and with ?follow=true the stack's later runs too. See the package doc.
func Stream(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		f, err := filter(c)
		if err != nil {
			return err
		}
		runParam, err := api.QueryID(c, "run")
		if err != nil {
			return err
		}
		followP, err := api.QueryBool(c, "follow")
		if err != nil {
			return err
		}
		follow := followP != nil && *followP
		var last *position
		if v := api.LastEventID(c); v != "" {
			p, err := parsePosition(v)
			if err != nil {
				return problem.Malformed("The Last-Event-ID must be an r.ID this stream sent (<run>/<ms>-<seq>).")
			}
			last = &p
		}

		st, err := store.StackGet(ctx, d.DB, r.Who.Scope(), r.ID)
		if err != nil {
			return err
		}
		// A removed stack gets no more runs: following it would wait forever.
		follow = follow && st.State != horizon.StackRemoved
		from := position{} // run uuid.Nil: wait for the stack's first run
		switch {
		case last != nil:
			if _, err := runOf(ctx, d.DB, r.ID, last.run); err != nil {
				if p := (*problem.Problem)(nil); errors.As(err, &p) {
					return problem.Malformed("The Last-Event-ID is not a position in this stack's log.")
				}
				return err
			}
			// Following, the client may have moved on to a later run than ?run=.
			if runParam != nil && last.run != *runParam && !(follow && bytes.Compare(runParam[:], last.run[:]) < 0) {
				return problem.Malformed("The Last-Event-ID is not a position in the log of run %s.", *runParam)
			}
			from = *last
			if !follow {
				end, err := store.LogEndGet(ctx, d.DB, last.run)
				if err == nil && !last.id.Less(endID(end)) {
					// The client has the whole log: 204 tells EventSource not to reconnect.
					return c.SendStatus(fiber.StatusNoContent)
				}
				if err != nil && !errors.Is(err, horizon.ErrNotFound) {
					return err
				}
			}
		case runParam != nil:
			if _, err := runOf(ctx, d.DB, r.ID, *runParam); err != nil {
				return err
			}
			from.run = *runParam
		default:
			r, err := store.RunLatest(ctx, d.DB, store.OfStack(r.ID))
			switch {
			case errors.Is(err, horizon.ErrNotFound) && !follow:
				return problem.New(problem.TypeNotFound, 404, "This stack has no run yet; add follow=true to wait for its first.")
			case err == nil:
				from.run = r.ID
			case !errors.Is(err, horizon.ErrNotFound):
				return err
			}
		}

		fw := &follower{d: d, stack: r.ID, filter: f, follow: follow}
		return d.Streams.SSE(c, "logs", func(ctx context.Context, w *stream.Writer) error {
			ctx, stop := d.Auth.Bound(ctx, r.Who) // ends when the token is revoked
			defer stop()
			err := fw.run(ctx, w, from)
			if errors.Is(err, rstream.ErrClosed) {
				return nil // a hub closed: the server is shutting down
			}
			return err
		})
	})
}

// follower is one client's log stream.
type follower struct {
	d      api.Deps
	stack  uuid.UUID
	filter logstream.Filter
	follow bool
}

func (fw *follower) run(ctx context.Context, w *stream.Writer, from position) error {
	run, after := from.run, from.id
	if run == uuid.Nil {
		next, err := fw.nextRun(ctx, uuid.Nil)
		if err != nil {
			return err
		}
		if err := fw.announce(w, next); err != nil {
			return err
		}
		run = next
	}
	for {
		// A follower that reconnects with the id of a run's end has all of that run: it goes
		// on to the next without being sent the end again.
		ended, err := fw.hasEnd(ctx, run, after)
		if err == nil && !ended {
			ended, err = fw.runLog(ctx, w, run, after)
		}
		if err != nil || !ended || !fw.follow {
			return err
		}
		next, err := fw.nextRun(ctx, run)
		if err != nil {
			return err
		}
		if err := fw.announce(w, next); err != nil {
			return err
		}
		run, after = next, rstream.ID{}
	}
}

// runLog sends run's log after the id after, until its end (ended true) or until the client
// is dropped as lagging (ended false, the stream must end).
func (fw *follower) runLog(ctx context.Context, w *stream.Writer, run uuid.UUID, after rstream.ID) (bool, error) {
	sub := fw.d.LogHub.Subscribe(ctx, run, after, fw.filter)
	defer sub.Close()
	var buf []byte // reused: Send copies the data
	for m := range sub.C {
		pos := position{run: run, id: m.ID}.String()
		ev := stream.Event{ID: pos, Name: m.Kind.String()}
		var err error
		switch m.Kind {
		case logstream.KindLine:
			buf = m.Line.AppendJSON(buf[:0])
			ev.Data = buf
		case logstream.KindEnd:
			ev.Data, err = json.Marshal(map[string]any{"run": run.String(), "status": m.Status, "unstreamed": m.Unstreamed})
		default: // lagging: resume from pos
			ev.Data, err = json.Marshal(map[string]string{"id": pos})
		}
		if err != nil {
			return false, err
		}
		if err := w.Send(ev); err != nil {
			return false, err
		}
		if m.Kind != logstream.KindLine {
			return m.Kind == logstream.KindEnd, w.Flush()
		}
		// Flush once the burst is written, not after every line.
		if len(sub.C) == 0 {
			if err := w.Flush(); err != nil {
				return false, err
			}
		}
	}
	return false, sub.Err()
}

// hasEnd reports whether the id after is at or past the end of run's log.
func (fw *follower) hasEnd(ctx context.Context, run uuid.UUID, after rstream.ID) (bool, error) {
	if after.IsZero() {
		return false, nil
	}
	end, err := store.LogEndGet(ctx, fw.d.DB, run)
	if errors.Is(err, horizon.ErrNotFound) {
		return false, nil
	}
	return err == nil && !after.Less(endID(end)), err
}

func endID(e store.LogEnd) rstream.ID {
	return rstream.ID{MS: uint64(e.Pos.MS), Seq: uint64(e.Pos.Seq)}
}

// announce sends the "run" event that moves the client on to run.
func (fw *follower) announce(w *stream.Writer, run uuid.UUID) error {
	data, _ := json.Marshal(map[string]string{"run": run.String()}) // a map of strings always encodes
	if err := w.Send(stream.Event{ID: position{run: run}.String(), Name: "run", Data: data}); err != nil {
		return err
	}
	return w.Flush()
}

// nextRun waits for the stack's first run created after the run after (uuid.Nil: its first).
// It is woken by the run events of the stack, and also looks every heartbeat, since an event
// may be lost (events are notifications; Postgres is the truth). It follows the events from
// before its first look, so a run created between the two is not missed.
func (fw *follower) nextRun(ctx context.Context, after uuid.UUID) (uuid.UUID, error) {
	tail, err := fw.d.EventHub.Tail(ctx)
	if err != nil {
		return uuid.Nil, err
	}
	sub := fw.d.EventHub.Subscribe(ctx, tail, func(e events.Event) bool { return e.Type == events.Run && e.StackID == fw.stack })
	defer sub.Close()
	woken := sub.C
	tick := time.NewTicker(fw.d.Streams.Config().Heartbeat)
	defer tick.Stop()
	for {
		r, err := store.RunNext(ctx, fw.d.DB, store.OfStack(fw.stack), after)
		if err == nil {
			return r.ID, nil
		}
		if !errors.Is(err, horizon.ErrNotFound) {
			return uuid.Nil, err
		}
		select {
		case _, ok := <-woken:
			if !ok {
				woken = nil // lagging or closed: the ticker still looks
			}
		case <-tick.C:
		case <-ctx.Done():
			return uuid.Nil, ctx.Err()
		}
	}
}
