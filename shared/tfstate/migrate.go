package tfstate

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/shared/secrets"
)

// PGSchema is the schema where the pg backend kept states before this package.
const PGSchema = "terraform"

// MigratePG moves every state the pg backend kept in schema into terraform_states, sealed, then
// drops the pg backend's schema and sequence, in one transaction: after it no plaintext state
// is left in a table (DROP removes the relation's files; nothing needs a VACUUM). A state
// already in terraform_states is newer and is kept. It returns how many states it moved, and
// does nothing when the schema has no states table. Replicas starting together are serialised
// by a transaction lock.
func MigratePG(ctx context.Context, db *pgxpool.Pool, box *secrets.Box, schema string) (int, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit it does nothing
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('horizon-tfstate-migrate', 0))`); err != nil {
		return 0, err
	}
	table := pgx.Identifier{schema, "states"}.Sanitize()
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return 0, nil
	}
	rows, err := tx.Query(ctx, `SELECT name, data FROM `+table+` WHERE data IS NOT NULL AND data <> ''`)
	if err != nil {
		return 0, err
	}
	type state struct{ workspace, data string }
	states, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (state, error) {
		var s state
		return s, r.Scan(&s.workspace, &s.data)
	})
	if err != nil {
		return 0, err
	}
	moved := 0
	for _, s := range states {
		tag, err := tx.Exec(ctx, `INSERT INTO terraform_states (workspace, state) VALUES ($1, $2) ON CONFLICT (workspace) DO NOTHING`,
			s.workspace, box.Seal(purpose(s.workspace), []byte(s.data)))
		if err != nil {
			return 0, fmt.Errorf("move the state of %s: %w", s.workspace, err)
		}
		moved += int(tag.RowsAffected())
	}
	if _, err := tx.Exec(ctx, `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `DROP SEQUENCE IF EXISTS public.global_states_id_seq`); err != nil {
		return 0, err
	}
	return moved, tx.Commit(ctx)
}
