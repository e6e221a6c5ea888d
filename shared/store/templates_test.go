package store_test

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/shared/horizon"
	"horizon/shared/store"
	"horizon/shared/testkit"
)

func newVersion(hash string) horizon.TemplateVersion {
	return horizon.TemplateVersion{
		Definition:     []byte(`{"name":"t","phases":[]}`),
		DefinitionHash: hash,
		JobCommits:     map[string]string{"web": "0123456789012345678901234567890123456789"},
		Modules:        []byte(`{"jobs":{}}`),
	}
}

func createTemplate(t *testing.T, db *pgxpool.Pool, name string) horizon.Template {
	t.Helper()
	tmpl, v, err := store.TemplateCreate(context.Background(), db, horizon.Template{Name: name, Active: true}, newVersion("sha256:1"))
	if err != nil {
		t.Fatal(err)
	}
	if v.Number != 1 || tmpl.LatestVersion != 1 || len(tmpl.Versions) != 1 {
		t.Fatalf("created %+v with version %+v, want version 1", tmpl, v)
	}
	return tmpl
}

func TestTemplateVersionsAreNumberedInOrderUnderConcurrency(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	tmpl := createTemplate(t, db, "web")
	const n = 12
	var wg sync.WaitGroup
	numbers := make(chan int, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := store.WithTxV(ctx, db, func(ctx context.Context, tx pgx.Tx) (horizon.TemplateVersion, error) {
				v := newVersion("sha256:2")
				v.TemplateID = tmpl.ID
				return store.TemplateVersionCreate(ctx, tx, v, 0)
			})
			if err != nil {
				t.Error(err)
			}
			numbers <- v.Number
		}()
	}
	wg.Wait()
	close(numbers)
	var got []int
	for x := range numbers {
		got = append(got, x)
	}
	sort.Ints(got)
	for i, x := range got {
		if x != i+2 {
			t.Fatalf("version numbers %v, want 2..%d without gaps or repeats", got, n+1)
		}
	}
	after, err := store.TemplateGet(ctx, db, tmpl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.LatestVersion != n+1 || len(after.Versions) != n+1 || after.Version != tmpl.Version+n {
		t.Fatalf("template %+v, want latest version %d listed and its ETag version moved %d times", after, n+1, n)
	}
}

func TestTemplateVersionCreateHonoursIfMatch(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	tmpl := createTemplate(t, db, "web")
	v := newVersion("sha256:2")
	v.TemplateID = tmpl.ID
	if _, err := store.TemplateVersionCreate(ctx, db, v, tmpl.Version+1); !errors.Is(err, horizon.ErrStale) {
		t.Fatalf("stale If-Match: got %v, want ErrStale", err)
	}
	if _, err := store.TemplateVersionCreate(ctx, db, v, tmpl.Version); err != nil {
		t.Fatalf("current If-Match: %v", err)
	}
	v.TemplateID = [16]byte{1}
	if _, err := store.TemplateVersionCreate(ctx, db, v, 0); !errors.Is(err, horizon.ErrNotFound) {
		t.Fatalf("missing template: got %v, want ErrNotFound", err)
	}
}

func TestTemplateVersionsAreImmutable(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	tmpl := createTemplate(t, db, "web")
	_, err := db.Exec(context.Background(), `UPDATE template_versions SET definition_hash = 'sha256:forged' WHERE template_id = $1`, tmpl.ID)
	if err == nil {
		t.Fatal("a template version was updated")
	}
	v, err := store.TemplateVersionGet(context.Background(), db, tmpl.ID, 1)
	if err != nil || v.DefinitionHash != "sha256:1" || v.JobCommits["web"] == "" {
		t.Fatalf("version after the refused update: %+v (%v)", v, err)
	}
}

func TestTemplateNameIsUnique(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	createTemplate(t, db, "web")
	_, _, err := store.TemplateCreate(context.Background(), db, horizon.Template{Name: "web"}, newVersion("sha256:1"))
	var ce *horizon.ConflictError
	if !errors.As(err, &ce) || ce.Field != "name" {
		t.Fatalf("got %v, want a conflict on name", err)
	}
}

func TestTemplateListFiltersActive(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	createTemplate(t, db, "on")
	off := createTemplate(t, db, "off")
	no := false
	if _, err := store.TemplateUpdate(ctx, db, off.ID, store.TemplatePatch{Active: &no}, off.Version); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		active *bool
		want   []string
	}{{nil, []string{"on", "off"}}, {&no, []string{"off"}}} {
		ts, _, err := store.TemplateList(ctx, db, store.TemplateFilter{Active: tc.active}, store.Page{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, x := range ts {
			names = append(names, x.Name)
		}
		if len(names) != len(tc.want) || names[0] != tc.want[0] {
			t.Errorf("active=%v: got %v, want %v", tc.active, names, tc.want)
		}
	}
}
