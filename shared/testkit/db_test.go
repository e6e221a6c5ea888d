package testkit_test

import (
	"context"
	"testing"

	"horizon/shared/testkit"
)

func TestDBIsMigratedAndIsolated(t *testing.T) {
	t.Parallel()
	a, b := testkit.DB(t), testkit.DB(t)
	ctx := context.Background()
	if _, err := a.Exec(ctx, "INSERT INTO teams (name) VALUES ('only-in-a')"); err != nil {
		t.Fatalf("insert into a: %v", err)
	}
	var n int
	if err := b.QueryRow(ctx, "SELECT count(*) FROM teams").Scan(&n); err != nil {
		t.Fatalf("count in b: %v", err)
	}
	if n != 0 {
		t.Fatalf("got %d teams in b, want 0: databases are shared", n)
	}
	var tz string
	if err := a.QueryRow(ctx, "SHOW timezone").Scan(&tz); err != nil {
		t.Fatal(err)
	}
	if tz == "UTC" || tz == "Etc/UTC" {
		t.Fatalf("test database time zone is %s, want a non-UTC zone", tz)
	}
}

func TestRedisNamespaceIsCleanedUp(t *testing.T) {
	t.Parallel()
	var ns string
	t.Run("writer", func(t *testing.T) {
		c, n := testkit.Redis(t)
		ns = n
		if err := c.Set(context.Background(), ns+":k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	})
	c, _ := testkit.Redis(t)
	if n, err := c.Exists(context.Background(), ns+":k").Result(); err != nil || n != 0 {
		t.Fatalf("key of a finished test still exists (n=%d, err=%v)", n, err)
	}
}
