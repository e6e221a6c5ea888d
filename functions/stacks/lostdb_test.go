package stacks_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/shared/horizon"
)

// TestALostDatabaseMidRequestIsRetriedOrA503: a retry or a cancel whose connection to Postgres
// is lost half-way either answers 503 problem+json (the client did nothing wrong and may try
// again) and leaves the database as it was — not the 409 "The stack has never run" a forced
// retry once answered for any error reading the last run — or, when the connection was lost
// inside the request's transaction before its COMMIT, runs that transaction once more on a new
// connection (store.WithTx, what a Postgres failover needs) and answers 202 with the effect of
// exactly one request. The plain retry and the cancel read the run inside their transaction, so
// they must be retried; never a 500, never a double effect.
func TestALostDatabaseMidRequestIsRetriedOrA503(t *testing.T) {
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
		retried    bool // lost inside the transaction: must be run again, and answer 202
		newRuns    int  // runs one accepted request adds
	}{
		{name: "forced retry", path: "/retry", body: map[string]any{"mode": "force"}, setup: failed, newRuns: 1},
		{name: "retry", path: "/retry", body: map[string]any{"mode": "all"}, setup: failed, retried: true, newRuns: 1},
		{name: "cancel", path: "/cancel", setup: func(s *apitest.Server, stack uuid.UUID) { s.NewRun(stack) }, retried: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := apitest.New(t, nil)
			stack := s.NewStack(s.NewTeam("red"), "web")
			tc.setup(s, stack)
			before := s.State()
			runsBefore := countRuns(t, s, stack)
			r := s.LoseConnectionAt("runs", func() *apitest.Response {
				return s.Do("POST", "/v1/stacks/"+stack.String()+tc.path, apitest.Req{Body: tc.body})
			})
			switch {
			case r.Status == 202:
				if got := countRuns(t, s, stack); got != runsBefore+tc.newRuns {
					t.Fatalf("%s retried after a lost connection: %d runs, want %d (one request's effect)", tc.name, got, runsBefore+tc.newRuns)
				}
				if tc.name == "cancel" {
					var canceling int
					if err := s.DB.QueryRow(context.Background(), `SELECT count(*) FROM runs WHERE stack_id = $1 AND state = 'canceling'`, stack).Scan(&canceling); err != nil || canceling != 1 {
						t.Fatalf("cancel retried after a lost connection: %d runs canceling (%v), want 1", canceling, err)
					}
				}
			case r.Status == 503 && !tc.retried && strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json"):
				if s.State() != before {
					t.Fatalf("a %s that failed half-way changed the database", tc.name)
				}
			default:
				t.Fatalf("%s with the database lost half-way: %d %s, want 202 (retried: %v) or 503 problem+json", tc.name, r.Status, r.Body, tc.retried)
			}
		})
	}
}

func countRuns(t *testing.T, s *apitest.Server, stack uuid.UUID) int {
	t.Helper()
	var n int
	if err := s.DB.QueryRow(context.Background(), `SELECT count(*) FROM runs WHERE stack_id = $1`, stack).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
