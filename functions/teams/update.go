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
	return func(c *fiber.Ctx) error {
		if err := api.RequireAdmin(c); err != nil {
			return err
		}
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		ifVersion, err := api.IfMatch(c)
		if err != nil {
			return err
		}
		req, err := api.Decode[UpdateRequest](c)
		if err != nil {
			return err
		}
		var p horizon.Problems
		if req.Name == nil {
			p.Add("name", "is required")
		} else {
			horizon.CheckName(&p, "name", *req.Name, horizon.MaxNameLength)
		}
		if err := p.Err(); err != nil {
			return err
		}
		who := api.Principal(c)
		t, err := store.WithTxV(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.Team, error) {
			t, err := store.TeamRename(ctx, tx, id, *req.Name, ifVersion)
			if err != nil {
				return t, err
			}
			return t, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "team.update",
				ObjectType: "team", ObjectID: &t.ID, TeamID: &t.ID, Details: map[string]any{"name": t.Name}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(t.Version))
		return c.JSON(toTeam(t))
	}
}
