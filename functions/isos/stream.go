package isos

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/functions/stream"
	"horizon/shared/horizon"
	"horizon/shared/logstream"
	"horizon/shared/problem"
	"horizon/shared/rstream"
	"horizon/shared/store"
)

// GetLogStream follows an ISO run's log as Server-Sent Events — the latest run, or ?run= —
// filtered by ?stage= or ?clone=: the lines written so far, then live ones, then an "end" event
// with the run's final state. Events: "line" (data: the line's JSON, as logstream.Line encodes
// it), "end" (data: {"run", "status", "unstreamed"}, see functions/logs) and "lagging" (data:
// {"id"}: the reader fell too far behind; it reconnects from that id). Every event's id resumes after it with Last-Event-ID
// (or ?last_event_id=). It is served like the stacks' log streams (functions/stream:
// heartbeats, write deadlines, the per-process limit), and a browser opens it with an
// iso_logs stream token.
func GetLogStream(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		iso, err := store.ISOGet(ctx, d.DB, r.ID)
		if err != nil {
			return err
		}
		run, filter, err := logQuery(c, d, iso)
		if err != nil {
			return err
		}
		after, err := rstream.ParseID(api.LastEventID(c))
		if err != nil {
			return problem.Malformed("Last-Event-ID must be an event r.ID this stream sent.")
		}
		if run == uuid.Nil {
			last, err := store.RunLatest(ctx, d.DB, store.OfISO(iso.ID))
			if errors.Is(err, horizon.ErrNotFound) {
				return problem.NotFound("run")
			}
			if err != nil {
				return err
			}
			run = last.ID
		}
		hub := d.LogHub
		return d.Streams.SSE(c, "iso_logs", func(ctx context.Context, w *stream.Writer) error {
			ctx, stop := d.Auth.Bound(ctx, r.Who) // ends when the token is revoked
			defer stop()
			err := follow(ctx, w, hub, run, after, filter)
			if errors.Is(err, rstream.ErrClosed) {
				return nil // the hub closed: the server is shutting down
			}
			return err
		})
	})
}

// follow sends run's log after the id after until its end, or until the client is dropped as
// lagging.
func follow(ctx context.Context, w *stream.Writer, hub *logstream.Hub, run uuid.UUID, after rstream.ID, filter logstream.Filter) error {
	sub := hub.Subscribe(ctx, run, after, filter)
	defer sub.Close()
	var buf []byte // reused: Send copies the data
	for m := range sub.C {
		ev := stream.Event{ID: m.ID.String(), Name: m.Kind.String()}
		var err error
		switch m.Kind {
		case logstream.KindLine:
			buf = m.Line.AppendJSON(buf[:0])
			ev.Data = buf
		case logstream.KindEnd:
			ev.Data, err = json.Marshal(map[string]any{"run": run.String(), "status": m.Status, "unstreamed": m.Unstreamed})
		default: // lagging: resume from its id
			ev.Data, err = json.Marshal(map[string]string{"id": m.ID.String()})
		}
		if err != nil {
			return err
		}
		if err := w.Send(ev); err != nil {
			return err
		}
		if m.Kind != logstream.KindLine {
			return w.Flush()
		}
		if len(sub.C) == 0 { // flush once a burst is written, not after every line
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
	return sub.Err()
}
