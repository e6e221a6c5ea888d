package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/auth"
	"horizon/shared/horizon"
)

const userSelect = `SELECT u.id, u.name, u.email, u.role, u.version, u.created_at, u.updated_at,
	ARRAY(SELECT m.team_id FROM memberships m WHERE m.user_id = u.id ORDER BY m.team_id)
	FROM users u`

// userVisible is the scope rule for users: admins see everyone, others see themselves and the
// members of their teams. Parameters: $a all, $b the caller's id, $c the caller's teams.
const userVisible = `($%d OR u.id = $%d OR EXISTS (SELECT 1 FROM memberships v WHERE v.user_id = u.id AND v.team_id = ANY($%d)))`

func scanUser(row pgx.Row) (horizon.User, error) {
	var u horizon.User
	err := row.Scan(&u.ID, &u.Name, &u.Email, &u.Role, &u.Version, &u.CreatedAt, &u.UpdatedAt, &u.Teams)
	return u, err
}

// NewUser is what UserCreate inserts.
type NewUser struct {
	Name, Email string
	Role        auth.Role
	Teams       []uuid.UUID
}

// UserCreate inserts a user and their memberships. The caller has checked that the teams exist.
func UserCreate(ctx context.Context, q Querier, n NewUser) (horizon.User, error) {
	var id uuid.UUID
	err := q.QueryRow(ctx, `INSERT INTO users (name, email, role) VALUES ($1, $2, $3) RETURNING id`,
		n.Name, n.Email, string(n.Role)).Scan(&id)
	if err != nil {
		return horizon.User{}, translate(err)
	}
	if err := setMemberships(ctx, q, id, n.Teams); err != nil {
		return horizon.User{}, err
	}
	return userByID(ctx, q, id)
}

func setMemberships(ctx context.Context, q Querier, user uuid.UUID, teams []uuid.UUID) error {
	if _, err := q.Exec(ctx, `DELETE FROM memberships WHERE user_id = $1 AND NOT team_id = ANY($2)`, user, teams); err != nil {
		return translate(err)
	}
	_, err := q.Exec(ctx, `INSERT INTO memberships (user_id, team_id) SELECT $1, unnest($2::uuid[]) ON CONFLICT DO NOTHING`, user, teams)
	return translate(err)
}

func userByID(ctx context.Context, q Querier, id uuid.UUID) (horizon.User, error) {
	u, err := scanUser(q.QueryRow(ctx, userSelect+` WHERE u.id = $1`, id))
	if err != nil {
		return u, fmt.Errorf("user %s: %w", id, translate(err))
	}
	return u, nil
}

// UserGet returns a user the principal may see.
func UserGet(ctx context.Context, q Querier, who auth.Principal, id uuid.UUID) (horizon.User, error) {
	s := who.Scope()
	u, err := scanUser(q.QueryRow(ctx, userSelect+` WHERE u.id = $1 AND `+fmt.Sprintf(userVisible, 2, 3, 4),
		id, s.All, who.UserID, s.TeamIDs()))
	if err != nil {
		return u, fmt.Errorf("user %s: %w", id, translate(err))
	}
	return u, nil
}

// UserNames returns the names of the users ids, by id; an id that names no user is left out.
// It is for naming who did what on an object the caller may already read (a stack's runs, as
// its state history names its actors), so it takes no principal.
func UserNames(ctx context.Context, q Querier, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	names := make(map[uuid.UUID]string, len(ids))
	if len(ids) == 0 {
		return names, nil
	}
	rows, err := q.Query(ctx, `SELECT id, name FROM users WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, translate(err)
		}
		names[id] = name
	}
	return names, translate(rows.Err())
}

// UserList returns one page of the users the principal may see.
func UserList(ctx context.Context, q Querier, who auth.Principal, p Page) ([]horizon.User, *uuid.UUID, error) {
	s := who.Scope()
	rows, err := q.Query(ctx, userSelect+` WHERE `+fmt.Sprintf(userVisible, 1, 2, 3)+`
		AND ($4::uuid IS NULL OR u.id > $4) ORDER BY u.id LIMIT $5`,
		s.All, who.UserID, s.TeamIDs(), p.After, p.limit())
	if err != nil {
		return nil, nil, translate(err)
	}
	users, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.User, error) { return scanUser(r) })
	if err != nil {
		return nil, nil, translate(err)
	}
	users, next := cut(users, p, func(u horizon.User) uuid.UUID { return u.ID })
	return users, next, nil
}

// UserPatch holds the fields a PATCH changes; nil leaves a field as it is.
type UserPatch struct {
	Name, Email *string
	Role        *auth.Role
	Teams       *[]uuid.UUID
}

// UserUpdate applies a patch if the user's version is still ifVersion (0 skips the check).
func UserUpdate(ctx context.Context, q Querier, id uuid.UUID, p UserPatch, ifVersion int64) (horizon.User, error) {
	var role *string
	if p.Role != nil {
		r := string(*p.Role)
		role = &r
	}
	var got uuid.UUID
	err := q.QueryRow(ctx, `UPDATE users SET name = COALESCE($2, name), email = COALESCE($3, email),
		role = COALESCE($4, role), version = version + 1, updated_at = now()
		WHERE id = $1 AND ($5 = 0 OR version = $5) RETURNING id`, id, p.Name, p.Email, role, ifVersion).Scan(&got)
	if err != nil {
		return horizon.User{}, staleOrMissing(ctx, q, err, "users", id)
	}
	if p.Teams != nil {
		if err := setMemberships(ctx, q, id, *p.Teams); err != nil {
			return horizon.User{}, err
		}
	}
	return userByID(ctx, q, id)
}
