package live

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/functions/stream"
	"horizon/shared/auth"
	"horizon/shared/events"
	"horizon/shared/problem"
	"horizon/shared/rstream"
	"horizon/shared/store"
)

// Events streams the changes the caller may see as Server-Sent Events, from now on or after
// Last-Event-ID, optionally of one stack (?stack=). See the package doc for the event names and
// the resume rules.
func Events(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		stack, err := api.QueryID(c, "stack")
		if err != nil {
			return err
		}
		after, err := rstream.ParseID(api.LastEventID(c))
		if err != nil {
			return problem.Malformed("The Last-Event-ID must be an id this stream sent (<ms>-<seq>).")
		}
		if stack != nil {
			if _, err := store.StackGet(ctx, d.DB, r.Who.Scope(), *stack); err != nil {
				return err
			}
		}
		keep := visible(r.Who, stack)
		hub := d.EventHub
		return d.Streams.SSE(c, "events", func(ctx context.Context, w *stream.Writer) error {
			ctx, stop := d.Auth.Bound(ctx, r.Who) // ends when the token is revoked
			defer stop()
			sub := hub.Subscribe(ctx, after, keep)
			defer sub.Close()
			for m := range sub.C {
				ev := stream.Event{ID: m.ID.String(), Name: m.Kind.String(), Data: m.Data}
				if m.Kind != events.KindEvent {
					ev.Data, _ = json.Marshal(map[string]string{"id": ev.ID}) // a map of strings always encodes
				}
				if err := w.Send(ev); err != nil {
					return err
				}
				// Flush once the burst is written, not after every event.
				if len(sub.C) == 0 || m.Kind == events.KindLagging {
					if err := w.Flush(); err != nil {
						return err
					}
				}
			}
			if err := sub.Err(); !errors.Is(err, rstream.ErrClosed) {
				return err
			}
			return nil // the hub closed: the server is shutting down
		})
	})
}

// visible returns the filter of the events who may see: their teams' (every team's for an
// admin), and ISOs, which belong to the catalogue; only stack's when stack is set.
func visible(who auth.Principal, stack *uuid.UUID) func(events.Event) bool {
	return func(e events.Event) bool {
		if stack != nil {
			return e.StackID == *stack && e.Type != events.ISO
		}
		if e.Type == events.ISO {
			return true
		}
		return e.TeamID != uuid.Nil && who.InTeam(e.TeamID)
	}
}
