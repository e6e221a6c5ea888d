package store

import (
	"context"
	"time"

	"github.com/google/uuid"
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
