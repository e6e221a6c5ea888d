package testkit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/migrations"
	"horizon/shared/store"
)

// DatabaseURL is the Postgres server the tests use (any database on it; tests create their
// own): HORIZON_TEST_DATABASE_URL, or the local default with trust authentication.
func DatabaseURL() string {
	if u := os.Getenv("HORIZON_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// templateLockKey serialises the creation of migrated template databases across every test
// process on the server (go test runs packages in parallel).
const templateLockKey = 727_400_001

// DB returns a pool on a fresh database of its own, cloned from a template database migrated
// once per migration set (the template's name carries a hash of the migrations). The database
// uses a non-UTC time zone so that time bugs show, and is dropped on cleanup. The pool's
// Config().ConnString() is the database's URL, for processes the test starts.
func DB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	admin, err := pgx.Connect(ctx, DatabaseURL())
	if err != nil {
		t.Fatalf("connect to test postgres at %s: %v", DatabaseURL(), err)
	}
	defer admin.Close(context.Background())

	tmpl, err := ensureTemplate(ctx, admin)
	if err != nil {
		t.Fatalf("prepare template database: %v", err)
	}
	name := "horizon_test_" + randomHex(8)
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, tmpl)); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	// Per-database settings are not copied from a template, so the zone is set on each clone.
	if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s SET timezone TO 'America/Sao_Paulo'", name)); err != nil {
		t.Fatalf("set test database time zone: %v", err)
	}
	dbURL := withDatabase(t, DatabaseURL(), name)
	pool, err := store.Open(ctx, store.Config{URL: dbURL, MaxConns: 16})
	if err != nil {
		t.Fatalf("open test database: %v", err)
	}
	t.Cleanup(func() {
		pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, DatabaseURL())
		if err != nil {
			t.Logf("drop test database %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name)); err != nil {
			t.Logf("drop test database %s: %v", name, err)
		}
	})
	return pool
}

// ensureTemplate returns the name of the migrated template database for the current
// migrations, creating it under an advisory lock if no test process has yet.
func ensureTemplate(ctx context.Context, admin *pgx.Conn) (string, error) {
	sum, err := migrationsHash()
	if err != nil {
		return "", err
	}
	tmpl := "horizon_tmpl_" + sum[:16]
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLockKey); err != nil {
		return "", fmt.Errorf("lock: %w", err)
	}
	defer admin.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", templateLockKey) //nolint:errcheck // the session ends with the connection anyway

	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", tmpl).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return tmpl, nil
	}
	// Build under a temporary name and rename at the end, so a crash half-way never leaves a
	// template that looks complete.
	building := tmpl + "_building"
	if _, err := admin.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", building)); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s", building)); err != nil {
		return "", err
	}
	u, err := url.Parse(DatabaseURL())
	if err != nil {
		return "", err
	}
	u.Path = "/" + building
	pool, err := store.Open(ctx, store.Config{URL: u.String(), MaxConns: 2})
	if err != nil {
		return "", err
	}
	err = store.Migrate(ctx, pool)
	pool.Close()
	if err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s", building, tmpl)); err != nil {
		return "", err
	}
	return tmpl, nil
}

func migrationsHash() (string, error) {
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, err := fs.ReadFile(migrations.FS, n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func withDatabase(t testing.TB, base, name string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse test database url: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// TablesHolding returns the tables ("schema.table") of db in which some row, read as text, holds
// needle or its hex encoding (how a bytea column reads): the scan a test makes for a secret that
// must never be stored in clear. System schemas are skipped.
func TablesHolding(t testing.TB, db *pgxpool.Pool, needle string) []string {
	t.Helper()
	ctx := context.Background()
	rows, err := db.Query(ctx, `SELECT table_schema, table_name FROM information_schema.tables
		WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`)
	if err != nil {
		t.Fatalf("list tables: %v", err)
	}
	tables, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pgx.Identifier, error) {
		var schema, name string
		return pgx.Identifier{schema, name}, r.Scan(&schema, &name)
	})
	if err != nil {
		t.Fatalf("list tables: %v", err)
	}
	var found []string
	for _, table := range tables {
		var hit bool
		err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+table.Sanitize()+` AS t
			WHERE strpos(t::text, $1) > 0 OR strpos(t::text, $2) > 0)`, needle, hex.EncodeToString([]byte(needle))).Scan(&hit)
		if err != nil {
			t.Fatalf("scan %s: %v", table.Sanitize(), err)
		}
		if hit {
			found = append(found, table[0]+"."+table[1])
		}
	}
	return found
}
