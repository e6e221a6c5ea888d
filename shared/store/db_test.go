package store_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"horizon/shared/store"
	"horizon/shared/testkit"
)

// TestPoolSize: a process's default pool size applies unless the URL (an operator's
// pool_max_conns) or the caller's MaxConns says otherwise.
func TestPoolSize(t *testing.T) {
	t.Parallel()
	url := testkit.DatabaseURL()
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	for _, c := range []struct {
		name string
		cfg  store.Config
		want int32
	}{
		{"the process's default", store.Config{URL: url, DefaultMaxConns: 23}, 23},
		{"the URL's pool_max_conns", store.Config{URL: url + sep + "pool_max_conns=3", DefaultMaxConns: 23}, 3},
		{"the caller's MaxConns", store.Config{URL: url + sep + "pool_max_conns=3", MaxConns: 5, DefaultMaxConns: 23}, 5},
	} {
		pool, err := store.Open(context.Background(), c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := pool.Config().MaxConns; got != c.want {
			t.Errorf("%s: pool of %d, want %d", c.name, got, c.want)
		}
		pool.Close()
	}
}

// TestWithTxRunsADeadlockVictimAgain: two transactions lock two rows in opposite orders, each
// waiting for the other's first lock; Postgres ends the deadlock by rolling one back. WithTx
// runs the victim again, so both commit, each having added its row once.
func TestWithTxRunsADeadlockVictimAgain(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	if _, err := db.Exec(ctx, `CREATE TABLE deadlocked (id int PRIMARY KEY, n int NOT NULL); INSERT INTO deadlocked VALUES (1, 0), (2, 0)`); err != nil {
		t.Fatal(err)
	}
	var ready sync.WaitGroup
	ready.Add(2)
	var tries atomic.Int32
	lockBoth := func(first, second int) error {
		try := 0
		return store.WithTx(ctx, db, func(ctx context.Context, tx pgx.Tx) error {
			tries.Add(1)
			try++
			if _, err := tx.Exec(ctx, `UPDATE deadlocked SET n = n + 1 WHERE id = $1`, first); err != nil {
				return err
			}
			if try == 1 { // the first time, both hold their first row before either goes on
				ready.Done()
				ready.Wait()
			}
			_, err := tx.Exec(ctx, `UPDATE deadlocked SET n = n + 1 WHERE id = $1`, second)
			return err
		})
	}
	errs := make(chan error, 2)
	go func() { errs <- lockBoth(1, 2) }()
	go func() { errs <- lockBoth(2, 1) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("a transaction failed: %v", err)
		}
	}
	if tries.Load() < 3 {
		t.Fatalf("%d runs of the two transactions: no deadlock happened, the test proves nothing", tries.Load())
	}
	var sum int
	if err := db.QueryRow(ctx, `SELECT sum(n) FROM deadlocked`).Scan(&sum); err != nil || sum != 4 {
		t.Fatalf("rows changed %d times (%v), want 4: each transaction once", sum, err)
	}
}
