package store_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"horizon/migrations"
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

// TestMigrationsGoDownAndUpAgain rolls back, on a database that used the newer features (read,
// deploy and prometheus tokens, webhooks with deliveries, idempotent responses), to before the
// token scopes, then migrates up again. A Down that cannot express a narrower token revokes it
// rather than widening it to full.
func TestMigrationsGoDownAndUpAgain(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	if _, err := db.Exec(ctx, `
		WITH u AS (INSERT INTO users (name, email, role) VALUES ('bot owner', 'bot@example.org', 'member') RETURNING id),
		tok AS (INSERT INTO api_tokens (user_id, name, scope, hash)
			SELECT u.id, s, s, convert_to(s, 'UTF8') FROM u, unnest(ARRAY['full', 'read', 'deploy', 'prometheus']) s RETURNING id, scope),
		k AS (INSERT INTO idempotency_keys (token_id, key, method, path, request_hash) SELECT id, 'k', 'POST', '/v1/x', '\x00' FROM tok),
		tm AS (INSERT INTO teams (name) VALUES ('bots') RETURNING id),
		w AS (INSERT INTO webhooks (team_id, name, kind, url_sealed, url_shown, events, secret_sealed)
			SELECT id, 'bot', 'standard', '\x01', 'https://example.org/…', ARRAY['run.finished'], '\x02' FROM tm RETURNING id),
		e AS (INSERT INTO webhook_events (team_id, type, data) SELECT id, 'run.finished', '{}' FROM tm RETURNING id)
		INSERT INTO webhook_deliveries (webhook_id, event_id, event_type) SELECT w.id, e.id, 'run.finished' FROM w, e`); err != nil {
		t.Fatalf("use the features: %v", err)
	}
	sqlDB := stdlib.OpenDBFromPool(db)
	defer sqlDB.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	scopes := func() string {
		var s string
		if err := db.QueryRow(ctx, `SELECT string_agg(name, ',' ORDER BY name) FROM api_tokens`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, err := p.DownTo(ctx, 20); err != nil {
		t.Fatalf("down to 20: %v", err)
	}
	if got := scopes(); got != "full,prometheus" {
		t.Fatalf("tokens after rolling the webhooks back: %s, want full,prometheus (read and deploy revoked)", got)
	}
	if _, err := p.DownTo(ctx, 17); err != nil {
		t.Fatalf("down to 17: %v", err)
	}
	if got := scopes(); got != "full" {
		t.Fatalf("tokens after rolling the scopes back: %s, want full (prometheus revoked)", got)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	var scope string
	if err := db.QueryRow(ctx, `SELECT scope FROM api_tokens`).Scan(&scope); err != nil || scope != "full" {
		t.Fatalf("the surviving token after up: %q %v", scope, err)
	}
}
