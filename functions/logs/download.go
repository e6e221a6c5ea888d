package logs

import (
	"bufio"
	"context"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/logstream"
	"horizon/shared/problem"
	"horizon/shared/rstream"
	"horizon/shared/store"
)

// The media types of a download.
const (
	mimeText   = "text/plain"
	mimeNDJSON = "application/x-ndjson"
)

// Download streams the stack's stored log lines — every run's, or ?run='s — narrowed by ?job=
// and ?execution=, as text (the default) or NDJSON (Accept: application/x-ndjson), from
// Postgres in constant memory. A run's download can stop before a line (?before=<id>) and keep
// only its last lines (?tail=N): the console reads a long log's end first, then the rest.
func Download(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		f, err := filter(c)
		if err != nil {
			return err
		}
		run, err := api.QueryID(c, "run")
		if err != nil {
			return err
		}
		before, tail, err := window(c, run != nil)
		if err != nil {
			return err
		}
		format, ctype := logstream.Text, mimeText+"; charset=utf-8"
		switch c.Accepts(mimeText, mimeNDJSON) {
		case mimeNDJSON:
			format, ctype = logstream.NDJSON, mimeNDJSON
		case "":
			return problem.New(problem.TypeNotAcceptable, 406, "The log downloads as text/plain or application/x-ndjson.")
		}
		if _, err := store.StackGet(ctx, d.DB, r.Who.Scope(), r.ID); err != nil {
			return err
		}
		q := logstream.Query{Stack: r.ID, Filter: f}
		name := "stack-" + r.ID.String()
		if run != nil {
			if _, err := runOf(ctx, d.DB, r.ID, *run); err != nil {
				return err
			}
			q = logstream.Query{Run: *run, Filter: f, Before: before, Tail: tail}
			name = "run-" + run.String()
		}
		ext := ".log"
		if format == logstream.NDJSON {
			ext = ".ndjson"
		}
		c.Set(fiber.HeaderContentType, ctype)
		c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+name+ext+`"`)
		c.Set(fiber.HeaderCacheControl, "no-store")
		logs := d.Logs
		return d.Streams.Body(c, "download", func(ctx context.Context, w *bufio.Writer) error {
			_, err := logs.Download(ctx, w, q, format)
			return err
		})
	})
}

// maxTail bounds ?tail=: the tail is held in memory to be written in order.
const maxTail = 10000

// window reads ?before= (a line id of the run) and ?tail= (1–maxTail), which need ?run=.
func window(c *fiber.Ctx, ofRun bool) (rstream.ID, int, error) {
	var before rstream.ID
	var tail int
	if v := c.Query("before"); v != "" {
		id, err := rstream.ParseID(v)
		if err != nil || id.IsZero() {
			return before, 0, problem.Malformed("The query parameter before must be a line id of the run (<ms>-<seq>).")
		}
		before = id
	}
	if v := c.Query("tail"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxTail {
			return before, 0, problem.Malformed("The query parameter tail must be an integer from 1 to %d.", maxTail)
		}
		tail = n
	}
	if (tail > 0 || !before.IsZero()) && !ofRun {
		return before, 0, problem.Malformed("The query parameters before and tail need run: they address one run's lines.")
	}
	return before, tail, nil
}
