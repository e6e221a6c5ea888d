package users

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// CreateRequest is the body of POST /v1/users.
type CreateRequest struct {
	Name  string      `json:"name"`
	Email string      `json:"email"`
	Role  string      `json:"role"`
	Teams []uuid.UUID `json:"teams"`
}

// Create adds a user with a role and teams (admin). A taken e-mail is 409.
func Create(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[CreateRequest]) error {
		u, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.User, error) {
			var p horizon.Problems
			horizon.CheckName(&p, "name", r.Body.Name, horizon.MaxNameLength)
			horizon.CheckEmail(&p, "email", r.Body.Email)
			checkRole(&p, r.Body.Role)
			if r.Body.Teams == nil {
				r.Body.Teams = []uuid.UUID{}
			}
			if err := checkTeams(ctx, tx, &p, r.Body.Teams); err != nil {
				return horizon.User{}, err
			}
			if err := p.Err(); err != nil {
				return horizon.User{}, err
			}
			u, err := store.UserCreate(ctx, tx, store.NewUser{Name: r.Body.Name, Email: r.Body.Email, Role: auth.Role(r.Body.Role), Teams: r.Body.Teams})
			if err != nil {
				return u, err
			}
			return u, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "user.create",
				ObjectType: "user", ObjectID: &u.ID, Details: map[string]any{"email": u.Email, "role": u.Role}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(u.Version))
		c.Set(fiber.HeaderLocation, "/v1/users/"+u.ID.String())
		return c.Status(fiber.StatusCreated).JSON(ToUser(u))
	})
}
