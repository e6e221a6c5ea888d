package teams

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// UpdateRequest is the body of PATCH /v1/teams/{id}: the name, required and not null.
type UpdateRequest struct {
	Name api.Field[string] `json:"name"`
}

// Update renames a team (admin), honouring If-Match.
func Update(d api.Deps) fiber.Handler {
	return api.Edit(d, func(ctx context.Context, tx pgx.Tx, r api.Req[UpdateRequest]) (api.Object, error) {
		var p horizon.Problems
		if !r.Body.Name.Given() {
			p.Add("name", "is required")
		} else {
			horizon.CheckName(&p, "name", r.Body.Name.Value(), horizon.MaxNameLength)
		}
		if err := p.Err(); err != nil {
			return api.Object{}, err
		}
		t, err := store.TeamRename(ctx, tx, r.ID, r.Body.Name.Value(), r.IfVersion)
		if err != nil {
			return api.Object{}, err
		}
		return api.Object{View: toTeam(t), Version: t.Version}, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID,
			Action: "team.update", ObjectType: "team", ObjectID: &t.ID, TeamID: &t.ID, Details: map[string]any{"name": t.Name}})
	})
}
