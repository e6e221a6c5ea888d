package apitest

import (
	"context"
	"time"

	"horizon/shared/testkit"
)

// LoseConnectionAt runs request while table is locked, and kills the API's connection to
// Postgres as soon as one of its statements waits on the table: a database lost in the middle
// of a request, after its first reads succeeded. It returns request's response.
func (s *Server) LoseConnectionAt(table string, request func() *Response) *Response {
	t := s.t
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
	done := make(chan *Response, 1)
	go func() { done <- request() }()
	testkit.Eventually(t, 10*time.Second, "no statement of the request waited on "+table, func() bool {
		var killed bool
		err := s.DB.QueryRow(ctx, `SELECT coalesce(bool_or(pg_terminate_backend(pid)), false) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ~* ('(from|into|update|join)\s+' || $1 || '\M')`, table).Scan(&killed)
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
