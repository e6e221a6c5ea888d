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

// UpdateRequest is the body of PATCH /v1/users/{id}; absent fields are left as they are.
type UpdateRequest struct {
	Name  *string      `json:"name"`
	Email *string      `json:"email"`
	Role  *string      `json:"role"`
	Teams *[]uuid.UUID `json:"teams"`
}

// Update changes a user (admin), honouring If-Match. An admin cannot demote themselves, so an
// installation cannot lose its last admin by accident.
func Update(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		e, err := api.ReadAdminEdit[UpdateRequest](c)
		if err != nil {
			return err
		}
		id, ifVersion, req := e.ID, e.IfVersion, e.Body
		who := api.Principal(c)
		u, err := store.WithTxV(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.User, error) {
			var p horizon.Problems
			patch := store.UserPatch{Name: req.Name, Email: req.Email, Teams: req.Teams}
			if req.Name != nil {
				horizon.CheckName(&p, "name", *req.Name, horizon.MaxNameLength)
			}
			if req.Email != nil {
				horizon.CheckEmail(&p, "email", *req.Email)
			}
			if req.Role != nil {
				checkRole(&p, *req.Role)
				r := auth.Role(*req.Role)
				patch.Role = &r
				if id == who.UserID && r != auth.RoleAdmin {
					p.Add("role", "you cannot remove your own admin role")
				}
			}
			if req.Teams != nil {
				if err := checkTeams(ctx, tx, &p, *req.Teams); err != nil {
					return horizon.User{}, err
				}
			}
			if err := p.Err(); err != nil {
				return horizon.User{}, err
			}
			u, err := store.UserUpdate(ctx, tx, id, patch, ifVersion)
			if err != nil {
				return u, err
			}
			return u, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "user.update",
				ObjectType: "user", ObjectID: &u.ID, Details: map[string]any{"role": u.Role, "teams": u.Teams}})
		})
		if err != nil {
			return err
		}
		// Role and teams live in cached principals: drop them everywhere.
		d.Auth.Forget(c.UserContext(), d.Log, nil, &u.ID)
		c.Set(fiber.HeaderETag, api.ETag(u.Version))
		return c.JSON(ToUser(u))
	}
}
