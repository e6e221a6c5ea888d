package store

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/auth"
)

// Activity is one audit record: who did what to which object. Details must never hold a secret.
type Activity struct {
	ActorID    *uuid.UUID
	Action     string // e.g. "network.create", "token.revoke"
	ObjectType string // e.g. "network"
	ObjectID   *uuid.UUID
	TeamID     *uuid.UUID
	Details    map[string]any
}

// ActivityRecord appends an audit record. Call it in the transaction of the write it records,
// so that the two commit or fail together.
func ActivityRecord(ctx context.Context, q Querier, a Activity) error {
	details := a.Details
	if details == nil {
		details = map[string]any{}
	}
	_, err := q.Exec(ctx, `INSERT INTO activity (actor_id, action, object_type, object_id, team_id, details)
		VALUES ($1, $2, $3, $4, $5, $6)`, a.ActorID, a.Action, a.ObjectType, a.ObjectID, a.TeamID, details)
	return translate(err)
}

// ActivityLatest returns the details of the latest record of action on an object.
func ActivityLatest(ctx context.Context, q Querier, objectType string, objectID uuid.UUID, action string) (map[string]any, time.Time, error) {
	var details map[string]any
	var at time.Time
	err := q.QueryRow(ctx, `SELECT details, at FROM activity WHERE object_type = $1 AND object_id = $2 AND action = $3
		ORDER BY id DESC LIMIT 1`, objectType, objectID, action).Scan(&details, &at)
	return details, at, translate(err)
}

// ActivityRecordRow is a stored audit record.
type ActivityRecordRow struct {
	ID uuid.UUID
	At time.Time
	Activity
}

// ActivityFilter narrows ActivityList; zero fields do not filter.
type ActivityFilter struct {
	ObjectID     *uuid.UUID // e.g. a stack
	ActorID      *uuid.UUID
	Action       string // exact ("stack.deploy"), or a prefix ending in "." ("stack.")
	Since, Until *time.Time
}

// ActivityList returns one page of the audit trail the scope may read, newest first: records
// of its teams (admins: every record, including those of no team).
func ActivityList(ctx context.Context, q Querier, scope auth.Scope, f ActivityFilter, p Page) ([]ActivityRecordRow, *uuid.UUID, error) {
	action, prefix := f.Action, ""
	if strings.HasSuffix(action, ".") {
		action, prefix = "", f.Action
	}
	rows, err := q.Query(ctx, `SELECT id, at, actor_id, action, object_type, object_id, team_id, details FROM activity
		WHERE ($1 OR team_id = ANY($2))
		  AND ($3::uuid IS NULL OR object_id = $3) AND ($4::uuid IS NULL OR actor_id = $4)
		  AND ($5 = '' OR action = $5) AND ($6 = '' OR starts_with(action, $6))
		  AND ($7::timestamptz IS NULL OR at >= $7) AND ($8::timestamptz IS NULL OR at < $8)
		  AND ($9::uuid IS NULL OR id < $9)
		ORDER BY id DESC LIMIT $10`,
		scope.All, scope.TeamIDs(), f.ObjectID, f.ActorID, action, prefix, f.Since, f.Until, p.After, p.limit())
	if err != nil {
		return nil, nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ActivityRecordRow, error) {
		var a ActivityRecordRow
		err := r.Scan(&a.ID, &a.At, &a.ActorID, &a.Action, &a.ObjectType, &a.ObjectID, &a.TeamID, &a.Details)
		return a, err
	})
	if err != nil {
		return nil, nil, translate(err)
	}
	out, next := cut(out, p, func(a ActivityRecordRow) uuid.UUID { return a.ID })
	return out, next, nil
}
