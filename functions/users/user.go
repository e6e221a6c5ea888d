// Package users serves /v1/users: admins create users and change their role and teams; everyone
// reads themselves and the members of their teams.
package users

import (
	"context"
	"time"

	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// User is a user as the API shows it.
type User struct {
	ID        uuid.UUID   `json:"id"`
	Name      string      `json:"name"`
	Email     string      `json:"email"`
	Role      string      `json:"role"`
	Teams     []uuid.UUID `json:"teams"`
	Version   int64       `json:"version"`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
}

// ToUser converts a stored user (also used by /v1/me).
func ToUser(u horizon.User) User {
	teams := u.Teams
	if teams == nil {
		teams = []uuid.UUID{}
	}
	return User{ID: u.ID, Name: u.Name, Email: u.Email, Role: u.Role, Teams: teams, Version: u.Version,
		CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

func checkRole(p *horizon.Problems, role string) {
	if !auth.Role(role).Valid() {
		p.Add("role", "must be admin, member or viewer")
	}
}

// checkTeams records a problem for each team id that does not exist or repeats.
func checkTeams(ctx context.Context, q store.Querier, p *horizon.Problems, teams []uuid.UUID) error {
	missing, err := store.TeamsMissing(ctx, q, teams)
	if err != nil {
		return err
	}
	api.CheckRefs(p, "teams", teams, missing, "a team")
	return nil
}
