package notify_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"horizon/shared/testkit"
	notifyw "horizon/workers/notify"
)

// TestPruneKeepsPendingRecentAndTheNewestPerSubscription seeds an outbox with a month-old
// history and prunes it with a retention of a day, keeping the newest two deliveries of each
// subscription: old finished deliveries go, and their events once nothing refers to them; a
// pending delivery stays whatever its age, and so does its event; a quiet subscription keeps its
// last two; recent deliveries stay.
func TestPruneKeepsPendingRecentAndTheNewestPerSubscription(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	ids := make([]uuid.UUID, 40)
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7())
	}
	// Deliveries are ordered by id: make the order of creation here the order of the ids.
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	next := 0
	id := func() uuid.UUID { next++; return ids[next-1] }
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := db.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	hook := func(name string) uuid.UUID {
		w := id()
		exec(`INSERT INTO webhooks (id, name, kind, url_sealed, url_shown, events, secret_sealed, enabled)
			VALUES ($1, $2, 'standard', '\x01', 'https://example.org/…', ARRAY['run.finished'], '\x02', true)`, w, name)
		return w
	}
	const old, recent = "40 days", "1 hour"
	event := func(age string) uuid.UUID {
		e := id()
		exec(`INSERT INTO webhook_events (id, type, data, created_at) VALUES ($1, 'run.finished', '{}', now() - $2::interval)`, e, age)
		return e
	}
	delivery := func(w, e uuid.UUID, state, age string) uuid.UUID {
		d := id()
		exec(`INSERT INTO webhook_deliveries (id, webhook_id, event_id, event_type, state, created_at)
			VALUES ($1, $2, $3, 'run.finished', $4, now() - $5::interval)`, d, w, e, state, age)
		return d
	}
	busy, quiet, fresh := hook("busy"), hook("quiet"), hook("fresh")
	shared := event(old) // also delivered to the fresh subscription, recently (a redelivery)
	e1, e2, e3, e4, e5 := shared, event(old), event(old), event(old), event(old)
	d1 := delivery(busy, e1, "delivered", old)
	d2 := delivery(busy, e2, "pending", old) // still retrying: never pruned
	d3 := delivery(busy, e3, "failed", old)
	d4 := delivery(busy, e4, "delivered", old)
	d5 := delivery(busy, e5, "failed", old)
	eq1, eq2 := event(old), event(old)
	q1 := delivery(quiet, eq1, "delivered", old)
	q2 := delivery(quiet, eq2, "failed", old)
	f1 := delivery(fresh, shared, "delivered", recent)
	ef2, ef3 := event(recent), event(recent)
	f2 := delivery(fresh, ef2, "delivered", recent)
	f3 := delivery(fresh, ef3, "delivered", recent)
	orphanOld, orphanRecent := event(old), event(recent)

	h := notifyw.Handler{DB: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Retention: 24 * time.Hour, Keep: 2}
	if err := h.Prune(ctx, nil); err != nil {
		t.Fatalf("prune: %v", err)
	}
	left := func(table string) []uuid.UUID {
		t.Helper()
		rows, err := db.Query(ctx, `SELECT id FROM `+table+` ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []uuid.UUID
		for rows.Next() {
			var u uuid.UUID
			if err := rows.Scan(&u); err != nil {
				t.Fatal(err)
			}
			out = append(out, u)
		}
		return out
	}
	sorted := func(us ...uuid.UUID) []uuid.UUID {
		slices.SortFunc(us, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
		return us
	}
	if got, want := left("webhook_deliveries"), sorted(d2, d4, d5, q1, q2, f1, f2, f3); !slices.Equal(got, want) {
		t.Errorf("deliveries left %v, want %v (old finished %s and %s gone; pending, the newest two of each subscription and the recent ones kept)",
			got, want, d1, d3)
	}
	if got, want := left("webhook_events"), sorted(shared, e2, e4, e5, eq1, eq2, ef2, ef3, orphanRecent); !slices.Equal(got, want) {
		t.Errorf("events left %v, want %v (old e3 and the old orphan %s gone)", got, want, orphanOld)
	}
	// A second pass finds nothing more to do.
	before := len(left("webhook_deliveries")) + len(left("webhook_events"))
	if err := h.Prune(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if after := len(left("webhook_deliveries")) + len(left("webhook_events")); after != before {
		t.Errorf("the second pass deleted %d rows, want none", before-after)
	}
}
