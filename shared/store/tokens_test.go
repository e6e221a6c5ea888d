package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"
	"horizon/shared/testkit"
)

func TestEnsureBootstrapAdmin(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	hash := auth.HashToken(auth.NewToken().Reveal())
	ensure := func() bool {
		restored, err := store.WithTxV(ctx, db, func(ctx context.Context, tx pgx.Tx) (bool, error) {
			return store.EnsureBootstrapAdmin(ctx, tx, hash)
		})
		if err != nil {
			t.Fatal(err)
		}
		return restored
	}
	ensure()
	ensure() // idempotent: a restart does not create a second user or token
	a, err := store.TokenAuthenticate(ctx, db, hash)
	if err != nil || a.Principal.Role != auth.RoleAdmin {
		t.Fatalf("bootstrap token: %+v %v", a, err)
	}
	var users, tokens int
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM api_tokens)`).Scan(&users, &tokens); err != nil || users != 1 || tokens != 1 {
		t.Fatalf("users=%d tokens=%d (%v), want 1 and 1", users, tokens, err)
	}
	if _, err := store.TokenRevoke(ctx, db, a.Principal, a.Principal.TokenID); err != nil {
		t.Fatal(err)
	}
	if _, err := store.TokenAuthenticate(ctx, db, hash); !errors.Is(err, horizon.ErrNotFound) {
		t.Fatalf("revoked token authenticates: %v", err)
	}
	if !ensure() {
		t.Fatal("restoring a revoked bootstrap token was not reported")
	}
	if _, err := store.TokenAuthenticate(ctx, db, hash); err != nil {
		t.Fatalf("bootstrap token after restart: %v", err)
	}
}
