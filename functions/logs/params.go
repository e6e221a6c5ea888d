package logs

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/shared/horizon"
	"horizon/shared/logstream"
	"horizon/shared/problem"
	"horizon/shared/rstream"
	"horizon/shared/store"
)

// jobRE is what a job name (a template identifier) may look like.
var jobRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// filter reads ?job= and ?execution=.
func filter(c *fiber.Ctx) (logstream.Filter, error) {
	var f logstream.Filter
	if v := c.Query("job"); v != "" {
		if !jobRE.MatchString(v) {
			return f, problem.Malformed("The query parameter job must be a job name.")
		}
		f.Job = strings.Clone(v)
	}
	if v := c.Query("execution"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return f, problem.Malformed("The query parameter execution must be an execution index (an integer from 0).")
		}
		f.Execution = &n
	}
	return f, nil
}

// runOf returns run if it is one of stack's runs, else a 404.
func runOf(ctx context.Context, db store.Querier, stack, run uuid.UUID) (horizon.Run, error) {
	r, err := store.RunGet(ctx, db, run)
	if errors.Is(err, horizon.ErrNotFound) || err == nil && (r.StackID == nil || *r.StackID != stack) {
		return r, problem.NotFound("The run")
	}
	return r, err
}

// position is a place in a stack's log: a line (or end) of a run. Its text form is the SSE id.
type position struct {
	run uuid.UUID
	id  rstream.ID
}

func (p position) String() string { return p.run.String() + "/" + p.id.String() }

// parsePosition parses "<run>/<ms>-<seq>".
func parsePosition(s string) (position, error) {
	run, id, ok := strings.Cut(s, "/")
	if !ok {
		return position{}, fmt.Errorf("log position %q: want <run>/<ms>-<seq>", s)
	}
	r, err := uuid.Parse(run)
	if err != nil {
		return position{}, fmt.Errorf("log position %q: %w", s, err)
	}
	i, err := rstream.ParseID(id)
	if err != nil {
		return position{}, err
	}
	return position{run: r, id: i}, nil
}
