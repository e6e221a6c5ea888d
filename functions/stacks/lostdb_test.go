package stacks_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/shared/horizon"
	"horizon/shared/testkit"
)

// loseConnectionAt runs request while the table is locked, and kills the API's connection to
// Postgres as soon as one of its statements waits on the table: a database lost in the middle
// of a request, after its first reads succeeded. It returns request's response.
func loseConnectionAt(t *testing.T, s *apitest.Server, table string, request func() *apitest.Response) *apitest.Response {
	t.Helper()
	ctx := context.Background()
	lock, err := s.DB.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Rollback(ctx) }()
	if _, err := lock.Exec(ctx, `LOCK TABLE `+table+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan *apitest.Response, 1)
	go func() { done <- request() }()
	testkit.Eventually(t, 10*time.Second, "no statement of the request waited on "+table, func() bool {
		var killed bool
		err := s.DB.QueryRow(ctx, `SELECT coalesce(bool_or(pg_terminate_backend(pid)), false) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%FROM `+table+`%'`).Scan(&killed)
		return err == nil && killed
	})
	_ = lock.Rollback(ctx)
	select {
	case r := <-done:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("the request did not answer once its connection was lost")
		return nil
	}
}

// TestALostDatabaseMidRequestIsA503AndChangesNothing: a retry or a cancel whose connection
// to Postgres is lost half-way answers 503 problem+json (the client did nothing wrong and may
// try again) — not the 409 "The stack has never run" a forced retry once answered for any
// error reading the last run — and leaves the database as it was.
func TestALostDatabaseMidRequestIsA503AndChangesNothing(t *testing.T) {
	t.Parallel()
	failed := func(s *apitest.Server, stack uuid.UUID) {
		s.FinishRun(s.NewRun(stack), horizon.RunFailed)
		if _, err := s.DB.Exec(context.Background(), `UPDATE stacks SET state = 'failed' WHERE id = $1`, stack); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, path string
		body       any
		setup      func(s *apitest.Server, stack uuid.UUID)
	}{
		{name: "forced retry", path: "/retry", body: map[string]any{"mode": "force"}, setup: failed},
		{name: "retry", path: "/retry", body: map[string]any{"mode": "all"}, setup: failed},
		{name: "cancel", path: "/cancel", setup: func(s *apitest.Server, stack uuid.UUID) { s.NewRun(stack) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := apitest.New(t, nil)
			stack := s.NewStack(s.NewTeam("red"), "web")
			tc.setup(s, stack)
			before := s.State()
			r := loseConnectionAt(t, s, "runs", func() *apitest.Response {
				return s.Do("POST", "/v1/stacks/"+stack.String()+tc.path, apitest.Req{Body: tc.body})
			})
			if r.Status != 503 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
				t.Fatalf("%s with the database lost half-way: %d %s, want 503 problem+json", tc.name, r.Status, r.Body)
			}
			if s.State() != before {
				t.Fatalf("a %s that failed half-way changed the database", tc.name)
			}
		})
	}
}
