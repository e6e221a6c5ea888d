package stacks

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"horizon/shared/horizon"
	"horizon/shared/store"
	"horizon/shared/testkit"
)

// reads counts the single-row reads made through a Querier.
type reads struct {
	store.Querier
	n int
}

func (r *reads) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	r.n++
	return r.Querier.QueryRow(ctx, sql, args...)
}

// TestVersionIsReadOncePerProcess: a template version, which never changes, is read from
// Postgres once; later reads are answered by the process, with the same definition. A version
// read inside a transaction, which may not be committed, is not kept.
func TestVersionIsReadOncePerProcess(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	tmpl, _, err := store.TemplateCreate(ctx, db, horizon.Template{Name: "cached", Active: true}, horizon.TemplateVersion{
		Definition:     []byte(`{"name":"cached","phases":[{"name":"p","jobs":[{"name":"web","source":{"repo":"https://example.org/r.git","branch":"main"}}]}]}`),
		DefinitionHash: "sha256:cached", JobCommits: map[string]string{}, Modules: []byte(`{"jobs":{}}`)})
	if err != nil {
		t.Fatal(err)
	}

	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := version(ctx, tx, tmpl.ID, 1); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(ctx)

	q := &reads{Querier: db}
	for i := range 3 {
		v, def, err := version(ctx, q, tmpl.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		if v.Number != 1 || v.TemplateID != tmpl.ID || def.Name != "cached" || len(def.Jobs()) != 1 || def.Jobs()[0].Name != "web" {
			t.Fatalf("read %d: version %d of %s, definition %+v", i+1, v.Number, v.TemplateID, def)
		}
	}
	if q.n != 1 {
		t.Fatalf("Postgres was asked %d times for 3 reads after a transaction's; want 1", q.n)
	}
}
