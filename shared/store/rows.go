package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/horizon"
)

// staleOrMissing explains why a versioned UPDATE … RETURNING matched no row: the object is gone
// (horizon.ErrNotFound) or its version moved (horizon.ErrStale). Other errors pass through.
func staleOrMissing(ctx context.Context, q Querier, err error, table string, id uuid.UUID) error {
	if !errors.Is(err, pgx.ErrNoRows) {
		return translate(err)
	}
	var exists bool
	// table is always a constant of this package, never input.
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+table+` WHERE id = $1)`, id).Scan(&exists); err != nil {
		return translate(err)
	}
	if exists {
		return fmt.Errorf("%s %s: %w", table, id, horizon.ErrStale)
	}
	return fmt.Errorf("%s %s: %w", table, id, horizon.ErrNotFound)
}

// missingIDs returns those of ids that have no row in table (a constant of this package).
func missingIDs(ctx context.Context, q Querier, table string, ids []uuid.UUID) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT x FROM unnest($1::uuid[]) AS x WHERE NOT EXISTS (SELECT 1 FROM `+table+` WHERE id = x)`, ids)
	if err != nil {
		return nil, translate(err)
	}
	missing, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return missing, translate(err)
}

// prefixed qualifies each column of a comma-separated list with a table alias.
func prefixed(alias, columns string) string {
	parts := strings.Split(columns, ",")
	for i, c := range parts {
		parts[i] = alias + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}
