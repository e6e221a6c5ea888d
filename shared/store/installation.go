package store

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"horizon/shared/horizon"
)

// InstallationID is the id that tells this installation (this database) from any other, made
// by the first call.
func InstallationID(ctx context.Context, q Querier) (uuid.UUID, error) {
	var id uuid.UUID
	// Two first calls at once: the one whose insert loses sees no row in its statement's
	// snapshot, and finds the winner's on its second try.
	for range 2 {
		err := q.QueryRow(ctx, `WITH made AS (INSERT INTO installation DEFAULT VALUES ON CONFLICT (singleton) DO NOTHING RETURNING id)
			SELECT id FROM made UNION ALL SELECT id FROM installation LIMIT 1`).Scan(&id)
		if err = translate(err); !errors.Is(err, horizon.ErrNotFound) {
			return id, err
		}
	}
	return id, errors.New("installation id: no row after two tries")
}
