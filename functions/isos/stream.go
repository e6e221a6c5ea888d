package isos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/logstream"
	"horizon/shared/problem"
	"horizon/shared/rstream"
	"horizon/shared/store"
)

// keepalive is how often an idle event stream sends a comment, so that proxies keep it open
// and a client that went away is noticed at the next write.
const keepalive = 15 * time.Second

// GetLogStream follows an ISO run's log as Server-Sent Events — the latest run, or ?run= —
// filtered by ?stage= or ?clone=: the lines written so far, then live ones, then an "end" event
// with the run's final state. Events: "line" (data: the line's JSON, as logstream.Line encodes
// it), "end" (data: {"status": …}) and "lagging" (data: {"resume": id}: the reader fell too far
// behind and should reconnect). Every event's id resumes after it with Last-Event-ID.
func GetLogStream(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		ctx := c.UserContext()
		iso, err := store.ISOGet(ctx, d.DB, id)
		if err != nil {
			return err
		}
		run, filter, err := logQuery(c, d, iso)
		if err != nil {
			return err
		}
		after, err := rstream.ParseID(c.Get("Last-Event-ID"))
		if err != nil {
			return problem.Malformed("Last-Event-ID must be an event id this stream sent.")
		}
		if run == uuid.Nil {
			last, err := store.RunLatestOfISO(ctx, d.DB, iso.ID)
			if errors.Is(err, horizon.ErrNotFound) {
				return problem.NotFound("run")
			}
			if err != nil {
				return err
			}
			run = last.ID
		}
		c.Set(fiber.HeaderContentType, "text/event-stream")
		c.Set(fiber.HeaderCacheControl, "no-cache")
		c.Set("X-Accel-Buffering", "no")
		hub, log := d.LogHub, d.Log.With("iso_id", iso.ID, "run_id", run)
		c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
			// The request's context ended with the handler; the stream ends with the log, the
			// hub, or the first write that fails (the client went away).
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sub := hub.Subscribe(ctx, run, after, filter)
			defer sub.Close()
			tick := time.NewTicker(keepalive)
			defer tick.Stop()
			if err := comment(w, "run "+run.String()); err != nil {
				return
			}
			for {
				select {
				case m, ok := <-sub.C:
					if !ok {
						if err := sub.Err(); err != nil && !errors.Is(err, context.Canceled) {
							log.WarnContext(ctx, "ISO log stream ended", "error", err)
						}
						return
					}
					if err := writeEvent(w, m); err != nil {
						return
					}
				case <-tick.C:
					if err := comment(w, "keepalive"); err != nil {
						return
					}
				}
			}
		})
		return nil
	}
}

// writeEvent writes one SSE event for m and flushes it.
func writeEvent(w *bufio.Writer, m logstream.Message) error {
	var data any
	switch m.Kind {
	case logstream.KindLine:
		data = m.Line
	case logstream.KindEnd:
		data = map[string]string{"status": m.Status}
	case logstream.KindLagging:
		data = map[string]string{"resume": m.ID.String()}
	}
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", m.ID, m.Kind, b); err != nil {
		return err
	}
	return w.Flush()
}

// comment writes an SSE comment and flushes it.
func comment(w *bufio.Writer, text string) error {
	if _, err := fmt.Fprintf(w, ": %s\n\n", text); err != nil {
		return err
	}
	return w.Flush()
}
