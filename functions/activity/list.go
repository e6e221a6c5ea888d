// Package activity serves the audit trail: every write Horizon records in the activity table
// (deploys, edits, removals, reveals of secret outputs, tokens, catalogue changes), which is
// kept after the objects it describes are gone.
package activity

import (
	"context"

	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// Record is one audit record.
type Record struct {
	ID         uuid.UUID      `json:"id"`
	At         time.Time      `json:"at"`
	ActorID    *uuid.UUID     `json:"actor_id"`
	Action     string         `json:"action"`
	ObjectType string         `json:"object_type"`
	ObjectID   *uuid.UUID     `json:"object_id"`
	TeamID     *uuid.UUID     `json:"team_id"`
	Details    map[string]any `json:"details"`
}

// List returns the audit trail the caller may read, newest first: admins everything, members
// and viewers their teams' records. ?stack_id= (any object id), ?actor_id=, ?action= (exact,
// or a prefix ending in "." such as "stack."), ?since= and ?until= (RFC 3339) narrow it.
func List(d api.Deps) fiber.Handler {
	return api.ListPage(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None], page store.Page) ([]store.ActivityRecordRow, *uuid.UUID, error) {
		var f store.ActivityFilter
		var err error
		if f.ObjectID, err = api.QueryID(c, "stack_id"); err != nil {
			return nil, nil, err
		}
		if f.ActorID, err = api.QueryID(c, "actor_id"); err != nil {
			return nil, nil, err
		}
		f.Action = c.Query("action")
		if f.Since, err = queryTime(c, "since"); err != nil {
			return nil, nil, err
		}
		if f.Until, err = queryTime(c, "until"); err != nil {
			return nil, nil, err
		}
		return store.ActivityList(ctx, d.DB, r.Who.Scope(), f, page)
	}, func(a store.ActivityRecordRow) Record {
		return Record{ID: a.ID, At: a.At, ActorID: a.ActorID, Action: a.Action, ObjectType: a.ObjectType, ObjectID: a.ObjectID,
			TeamID: a.TeamID, Details: a.Details}
	})
}

func queryTime(c *fiber.Ctx, name string) (*time.Time, error) {
	v := c.Query(name)
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return nil, problem.Malformed("The query parameter %s must be an RFC 3339 time, e.g. 2026-01-31T12:00:00Z.", name)
	}
	return &t, nil
}
