package stacks_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/shared/horizon"
)

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
			r := s.LoseConnectionAt("runs", func() *apitest.Response {
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
