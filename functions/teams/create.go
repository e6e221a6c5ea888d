package teams

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// CreateRequest is the body of POST /v1/teams.
type CreateRequest struct {
	Name string `json:"name"`
}

// Create adds a team (admin). A taken name is 409.
func Create(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[CreateRequest]) error {
		var p horizon.Problems
		horizon.CheckName(&p, "name", r.Body.Name, horizon.MaxNameLength)
		if err := p.Err(); err != nil {
			return err
		}
		t, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.Team, error) {
			t, err := store.TeamCreate(ctx, tx, r.Body.Name)
			if err != nil {
				return t, err
			}
			return t, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "team.create",
				ObjectType: "team", ObjectID: &t.ID, TeamID: &t.ID, Details: map[string]any{"name": t.Name}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(t.Version))
		c.Set(fiber.HeaderLocation, "/v1/teams/"+t.ID.String())
		return c.Status(fiber.StatusCreated).JSON(toTeam(t))
	})
}
