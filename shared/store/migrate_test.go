package store_test

import (
	"context"
	"sync"
	"testing"

	"horizon/shared/store"
	"horizon/shared/testkit"
)

// TestMigrateConcurrently starts several "processes" migrating one database at once, as
// replicas do: all succeed and each migration is recorded once.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t) // already migrated from the template; reset to empty to migrate again
	ctx := context.Background()
	if _, err := db.Exec(ctx, `DROP SCHEMA public CASCADE; CREATE SCHEMA public`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool, err := store.Open(ctx, store.Config{URL: db.Config().ConnString(), MaxConns: 2})
			if err != nil {
				errs <- err
				return
			}
			defer pool.Close()
			errs <- store.Migrate(ctx, pool)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("migrate: %v", err)
		}
	}
	var applied, dupes int
	if err := db.QueryRow(ctx, `SELECT count(*), count(*) - count(DISTINCT version_id) FROM goose_db_version WHERE version_id > 0`).Scan(&applied, &dupes); err != nil {
		t.Fatal(err)
	}
	if applied == 0 || dupes != 0 {
		t.Fatalf("goose_db_version has %d migrations with %d duplicates", applied, dupes)
	}
}
