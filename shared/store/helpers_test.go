package store_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/shared/horizon"
	"horizon/shared/store"
)

// newStack makes a draft stack, with its team, environment and template.
func newStack(t *testing.T, db *pgxpool.Pool) horizon.Stack {
	t.Helper()
	ctx := context.Background()
	team, err := store.TeamCreate(ctx, db, "team-"+t.Name())
	if err != nil {
		t.Fatal(err)
	}
	env, err := store.EnvironmentCreate(ctx, db, horizon.Environment{Name: "env-" + t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	tmpl := createTemplate(t, db, "tmpl-"+t.Name())
	s, err := store.StackCreate(ctx, db, horizon.Stack{TeamID: team.ID, Name: "s", EnvironmentID: env.ID, TemplateID: tmpl.ID, TemplateVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newExecutions makes a draft stack (newStack) holding n executions of a job "web", and
// returns them.
func newExecutions(t *testing.T, db *pgxpool.Pool, n int) []horizon.Execution {
	t.Helper()
	ctx := context.Background()
	s := newStack(t, db)
	var out []horizon.Execution
	for i := 0; i < n; i++ {
		e, err := store.ExecutionInsert(ctx, db, horizon.Execution{StackID: s.ID, Job: "web", Index: i, Commit: "0123456789012345678901234567890123456789"})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}
