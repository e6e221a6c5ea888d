package isos

import (
	"bufio"
	"context"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/logstream"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// logQuery reads the ?run=, ?stage= and ?clone= of a log request for an ISO: a run must be
// one of the ISO's.
func logQuery(c *fiber.Ctx, d api.Deps, iso horizon.ISO) (uuid.UUID, logstream.Filter, error) {
	var f logstream.Filter
	run, err := api.QueryID(c, "run")
	if err != nil {
		return uuid.Nil, f, err
	}
	if run != nil {
		r, err := store.RunGet(c.UserContext(), d.DB, *run)
		if err != nil || r.ISOID == nil || *r.ISOID != iso.ID {
			return uuid.Nil, f, problem.NotFound("run")
		}
	}
	f.Job = c.Query("stage")
	if v := c.Query("clone"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return uuid.Nil, f, problem.Malformed("The query parameter clone must be a clone's index (0, 1, …).")
		}
		f.Job, f.Execution = "clones", &n
	}
	if run == nil {
		return uuid.Nil, f, nil
	}
	return *run, f, nil
}

// GetLogs downloads an ISO's stored build log — every run, oldest first, or ?run= — as text
// (default) or NDJSON (?format=ndjson), filtered by ?stage= or ?clone=. It streams in constant
// memory; lines are stored within a fraction of a second of being written.
func GetLogs(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		iso, err := store.ISOGet(ctx, d.DB, r.ID)
		if err != nil {
			return err
		}
		run, filter, err := logQuery(c, d, iso)
		if err != nil {
			return err
		}
		format := logstream.Format(c.Query("format", string(logstream.Text)))
		ext := ".log"
		switch format {
		case logstream.Text:
			c.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
		case logstream.NDJSON:
			c.Set(fiber.HeaderContentType, "application/x-ndjson")
			ext = ".ndjson"
		default:
			return problem.Malformed("The query parameter format must be text or ndjson.")
		}
		q := logstream.Query{Run: run, Filter: filter}
		name := "iso-" + iso.ID.String()
		if run == uuid.Nil {
			q.Stack = iso.ID // an ISO's runs keep its r.ID as the owner of their logs
		} else {
			name = "iso-run-" + run.String()
		}
		// Saved to disk, also through a link from another origin (the console's), like a stack's.
		c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+name+ext+`"`)
		c.Set(fiber.HeaderCacheControl, "no-store")
		logs := d.Logs
		return d.Streams.Body(c, "download", func(ctx context.Context, w *bufio.Writer) error {
			_, err := logs.Download(ctx, w, q, format)
			return err
		})
	})
}
