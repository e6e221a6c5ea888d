package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"
	"horizon/shared/testkit"
)

// roundTrips is a Querier that counts the round trips made through it: one per statement, one
// per batch.
type roundTrips struct {
	store.Querier
	n int
}

func (r *roundTrips) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	r.n++
	return r.Querier.Exec(ctx, sql, args...)
}

func (r *roundTrips) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	r.n++
	return r.Querier.Query(ctx, sql, args...)
}

func (r *roundTrips) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	r.n++
	return r.Querier.QueryRow(ctx, sql, args...)
}

func (r *roundTrips) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	r.n++
	return r.Querier.SendBatch(ctx, b)
}

// TestStackViewGetReadsTheDetailInOneRoundTripWithinTheScope: a stack's detail (the stack, its
// executions, its run in progress, its drift) is one round trip, and a scope without the
// stack's team gets not found, not the stack's rows.
func TestStackViewGetReadsTheDetailInOneRoundTripWithinTheScope(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	execs := newExecutions(t, db, 2)
	stackID := execs[0].StackID
	run, _, err := store.RunInsertWithSteps(ctx, db, horizon.Run{StackID: &stackID, Kind: horizon.RunDeploy}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.StackGet(ctx, db, auth.Scope{All: true}, stackID)
	if err != nil {
		t.Fatal(err)
	}

	for _, scope := range []auth.Scope{{All: true}, {Teams: []uuid.UUID{uuid.New(), s.TeamID}}} {
		q := &roundTrips{Querier: db}
		v, err := store.StackViewGet(ctx, q, scope, stackID)
		if err != nil {
			t.Fatal(err)
		}
		if q.n != 1 {
			t.Errorf("scope %+v: %d round trips, want 1", scope, q.n)
		}
		if v.Stack.ID != stackID || len(v.Executions) != 2 || v.Active == nil || v.Active.ID != run.ID || len(v.Findings) != 0 || v.CheckedAt != nil {
			t.Errorf("scope %+v: got stack %s, %d executions, active run %v, %d findings, checked %v; want %s, 2, %s, 0, nil",
				scope, v.Stack.ID, len(v.Executions), v.Active, len(v.Findings), v.CheckedAt, stackID, run.ID)
		}
	}

	other, err := store.TeamCreate(ctx, db, "other-"+t.Name())
	if err != nil {
		t.Fatal(err)
	}
	for _, scope := range []auth.Scope{{Teams: []uuid.UUID{other.ID}}, {}} {
		v, err := store.StackViewGet(ctx, db, scope, stackID)
		if !errors.Is(err, horizon.ErrNotFound) {
			t.Errorf("scope %+v: got %v, want not found", scope, err)
		}
		if v.Stack.ID != uuid.Nil || len(v.Executions) != 0 || v.Active != nil {
			t.Errorf("scope %+v: rows of a stack out of scope: %+v", scope, v)
		}
	}
}
