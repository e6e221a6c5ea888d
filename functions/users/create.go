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
	return func(c *fiber.Ctx) error {
		if err := api.RequireAdmin(c); err != nil {
			return err
		}
		req, err := api.Decode[CreateRequest](c)
		if err != nil {
			return err
		}
		who := api.Principal(c)
		u, err := store.WithTxV(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.User, error) {
			var p horizon.Problems
			horizon.CheckName(&p, "name", req.Name, horizon.MaxNameLength)
			horizon.CheckEmail(&p, "email", req.Email)
			checkRole(&p, req.Role)
			if req.Teams == nil {
				req.Teams = []uuid.UUID{}
			}
			if err := checkTeams(ctx, tx, &p, req.Teams); err != nil {
				return horizon.User{}, err
			}
			if err := p.Err(); err != nil {
				return horizon.User{}, err
			}
			u, err := store.UserCreate(ctx, tx, store.NewUser{Name: req.Name, Email: req.Email, Role: auth.Role(req.Role), Teams: req.Teams})
			if err != nil {
				return u, err
			}
			return u, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "user.create",
				ObjectType: "user", ObjectID: &u.ID, Details: map[string]any{"email": u.Email, "role": u.Role}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(u.Version))
		c.Set(fiber.HeaderLocation, "/v1/users/"+u.ID.String())
		return c.Status(fiber.StatusCreated).JSON(ToUser(u))
	}
}
