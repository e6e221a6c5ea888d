package store

import (
	"context"

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
