// Package teams serves /v1/teams: admins create and rename teams and set their quotas;
// everyone lists and reads the teams they belong to (admins: all teams), their quotas and
// their usage (shared/quota counts it). Quotas have a version of their own (the ETag of
// …/quotas), apart from the team's: renaming a team does not make a quota edit stale.
package teams

import (
	"time"

	"github.com/google/uuid"

	"horizon/shared/horizon"
)

// Team is a team as the API shows it.
type Team struct {
	ID        uuid.UUID `json:"id"`
	Name      string    `json:"name"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func toTeam(t horizon.Team) Team {
	return Team{ID: t.ID, Name: t.Name, Version: t.Version, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}
