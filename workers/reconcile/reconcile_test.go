package reconcile_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"horizon/shared/auth"
	"horizon/shared/store"
	"horizon/shared/testkit"
	"horizon/workers/reconcile"
)

func TestReconcileExpiresOldIdempotencyKeys(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	u, err := store.UserCreate(ctx, db, store.NewUser{Name: "u", Email: "u@example.org", Role: auth.RoleMember, Teams: []uuid.UUID{}})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := store.TokenCreate(ctx, db, u.ID, "t", auth.TokenFull, auth.HashToken(auth.NewToken().Reveal()))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"old", "fresh"} {
		if _, err := store.IdempotencyBegin(ctx, db, tok.ID, key, "POST", "/v1/x", []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(ctx, `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'old'`); err != nil {
		t.Fatal(err)
	}
	h := reconcile.Handler{DB: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now, StaleAfter: time.Minute}
	if err := h.ProcessTask(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var keys []string
	rows, _ := db.Query(ctx, `SELECT key FROM idempotency_keys`)
	for rows.Next() {
		var k string
		_ = rows.Scan(&k)
		keys = append(keys, k)
	}
	if len(keys) != 1 || keys[0] != "fresh" {
		t.Fatalf("keys left: %v, want only fresh", keys)
	}
}
