package teams

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// UpdateRequest is the body of PATCH /v1/teams/{id}.
type UpdateRequest struct {
	Name *string `json:"name"`
}

// Update renames a team (admin), honouring If-Match.
func Update(d api.Deps) fiber.Handler {
	return api.AdminEdit(d, func(ctx context.Context, tx pgx.Tx, e api.Edit[UpdateRequest]) (api.Edited, error) {
		var p horizon.Problems
		if e.Body.Name == nil {
			p.Add("name", "is required")
		} else {
			horizon.CheckName(&p, "name", *e.Body.Name, horizon.MaxNameLength)
		}
		if err := p.Err(); err != nil {
			return api.Edited{}, err
		}
		t, err := store.TeamRename(ctx, tx, e.ID, *e.Body.Name, e.IfVersion)
		if err != nil {
			return api.Edited{}, err
		}
		return api.Edited{View: toTeam(t), Version: t.Version}, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &e.Who.UserID,
			Action: "team.update", ObjectType: "team", ObjectID: &t.ID, TeamID: &t.ID, Details: map[string]any{"name": t.Name}})
	})
}
