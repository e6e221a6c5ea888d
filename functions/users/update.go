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

// UpdateRequest is the body of PATCH /v1/users/{id}; absent fields are left as they are, and
// none may be null.
type UpdateRequest struct {
	Name  api.Field[string]      `json:"name"`
	Email api.Field[string]      `json:"email"`
	Role  api.Field[string]      `json:"role"`
	Teams api.Field[[]uuid.UUID] `json:"teams"`
}

// Update changes a user (admin), honouring If-Match. An admin cannot demote themselves, so an
// installation cannot lose its last admin by accident.
func Update(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[UpdateRequest]) error {
		u, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.User, error) {
			var p horizon.Problems
			b := r.Body
			patch := store.UserPatch{Name: b.Name.Ptr(), Email: b.Email.Ptr(), Teams: b.Teams.Ptr()}
			if b.Name.Given() {
				horizon.CheckName(&p, "name", b.Name.Value(), horizon.MaxNameLength)
			}
			if b.Email.Given() {
				horizon.CheckEmail(&p, "email", b.Email.Value())
			}
			if b.Role.Given() {
				checkRole(&p, b.Role.Value())
				role := auth.Role(b.Role.Value())
				patch.Role = &role
				if r.ID == r.Who.UserID && role != auth.RoleAdmin {
					p.Add("role", "you cannot remove your own admin role")
				}
			}
			if b.Teams.Given() {
				if err := checkTeams(ctx, tx, &p, b.Teams.Value()); err != nil {
					return horizon.User{}, err
				}
			}
			if err := p.Err(); err != nil {
				return horizon.User{}, err
			}
			u, err := store.UserUpdate(ctx, tx, r.ID, patch, r.IfVersion)
			if err != nil {
				return u, err
			}
			return u, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "user.update",
				ObjectType: "user", ObjectID: &u.ID, Details: map[string]any{"role": u.Role, "teams": u.Teams}})
		})
		if err != nil {
			return err
		}
		// Role and teams live in cached principals: drop them everywhere.
		d.Auth.Forget(ctx, d.Log, nil, &u.ID)
		c.Set(fiber.HeaderETag, api.ETag(u.Version))
		return c.JSON(ToUser(u))
	})
}
