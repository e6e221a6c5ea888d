package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/auth"
	"horizon/shared/horizon"
)

const teamColumns = `id, name, version, created_at, updated_at`

func scanTeam(row pgx.Row) (horizon.Team, error) {
	var t horizon.Team
	err := row.Scan(&t.ID, &t.Name, &t.Version, &t.CreatedAt, &t.UpdatedAt)
	return t, err
}

// TeamCreate inserts a team. A taken name is a *horizon.ConflictError.
func TeamCreate(ctx context.Context, q Querier, name string) (horizon.Team, error) {
	t, err := scanTeam(q.QueryRow(ctx, `INSERT INTO teams (name) VALUES ($1) RETURNING `+teamColumns, name))
	return t, translate(err)
}

// TeamGet returns a team the scope may see.
func TeamGet(ctx context.Context, q Querier, scope auth.Scope, id uuid.UUID) (horizon.Team, error) {
	t, err := scanTeam(q.QueryRow(ctx, `SELECT `+teamColumns+` FROM teams
		WHERE id = $1 AND ($2 OR id = ANY($3))`, id, scope.All, scope.TeamIDs()))
	if err != nil {
		return t, fmt.Errorf("team %s: %w", id, translate(err))
	}
	return t, nil
}

// TeamList returns one page of the teams the scope may see.
func TeamList(ctx context.Context, q Querier, scope auth.Scope, p Page) ([]horizon.Team, *uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT `+teamColumns+` FROM teams
		WHERE ($1 OR id = ANY($2)) AND ($3::uuid IS NULL OR id > $3)
		ORDER BY id LIMIT $4`, scope.All, scope.TeamIDs(), p.After, p.limit())
	if err != nil {
		return nil, nil, translate(err)
	}
	teams, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.Team, error) { return scanTeam(r) })
	if err != nil {
		return nil, nil, translate(err)
	}
	teams, next := cut(teams, p, func(t horizon.Team) uuid.UUID { return t.ID })
	return teams, next, nil
}

// TeamRename renames a team if its version is still ifVersion (0 skips the check). It returns
// horizon.ErrStale when the version moved and horizon.ErrNotFound when the team is gone.
func TeamRename(ctx context.Context, q Querier, id uuid.UUID, name string, ifVersion int64) (horizon.Team, error) {
	t, err := scanTeam(q.QueryRow(ctx, `UPDATE teams SET name = $2, version = version + 1, updated_at = now()
		WHERE id = $1 AND ($3 = 0 OR version = $3) RETURNING `+teamColumns, id, name, ifVersion))
	if err == nil {
		return t, nil
	}
	return t, staleOrMissing(ctx, q, err, "teams", id)
}

// TeamsMissing returns those of ids that name no team.
func TeamsMissing(ctx context.Context, q Querier, ids []uuid.UUID) ([]uuid.UUID, error) {
	return missingIDs(ctx, q, "teams", ids)
}
