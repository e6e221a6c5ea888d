package store_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"

	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"
	"horizon/shared/testkit"
)

// TestStackListFiltersAndPages: every filter narrows the list, a scope sees only its teams,
// removed stacks appear only when asked for by state, and pages follow each other newest first
// without gaps or repeats.
func TestStackListFiltersAndPages(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	teamA, err := store.TeamCreate(ctx, db, "a")
	if err != nil {
		t.Fatal(err)
	}
	teamB, err := store.TeamCreate(ctx, db, "b")
	if err != nil {
		t.Fatal(err)
	}
	env, err := store.EnvironmentCreate(ctx, db, horizon.Environment{Name: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	web, other := createTemplate(t, db, "web"), createTemplate(t, db, "other")
	// Stacks 0–9 (the lists below name them in creation order): even ones in team a; every third labelled "x"; 7 of template other; 5
	// failed, 8 removed.
	var ids []uuid.UUID
	for i := range 10 {
		team, tmpl, labels := teamA.ID, web.ID, []string{}
		if i%2 == 1 {
			team = teamB.ID
		}
		if i == 7 {
			tmpl = other.ID
		}
		if i%3 == 0 {
			labels = []string{"x"}
		}
		s, err := store.StackCreate(ctx, db, horizon.Stack{TeamID: team, Name: fmt.Sprint("s", i), Labels: labels, EnvironmentID: env.ID,
			TemplateID: tmpl, TemplateVersion: 1})
		if err != nil {
			t.Fatal(err)
		}
		for i, to := range map[int]horizon.StackState{5: horizon.StackFailed, 8: horizon.StackRemoved} {
			if s.Name == fmt.Sprint("s", i) {
				if _, err := store.StackSetState(ctx, db, horizon.StateChange{StackID: s.ID, To: to}); err != nil {
					t.Fatal(err)
				}
			}
		}
		ids = append(ids, s.ID)
	}
	all := auth.Scope{All: true}
	// newest first is id order: UUIDv7 ids made in the same millisecond need not follow
	// creation order.
	newestFirst := func(idx []int) []int {
		out := slices.Clone(idx)
		slices.SortFunc(out, func(a, b int) int { return -compareIDs(ids[a], ids[b]) })
		return out
	}
	list := func(scope auth.Scope, f store.StackFilter, p store.Page) ([]int, *uuid.UUID) {
		t.Helper()
		stacks, next, err := store.StackList(ctx, db, scope, f, p)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, s := range stacks {
			got = append(got, slices.Index(ids, s.ID))
		}
		return got, next
	}
	tests := []struct {
		name  string
		scope auth.Scope
		f     store.StackFilter
		want  []int
	}{
		{"AllButRemoved", all, store.StackFilter{}, []int{9, 7, 6, 5, 4, 3, 2, 1, 0}},
		{"TeamScope", auth.Scope{Teams: []uuid.UUID{teamA.ID}}, store.StackFilter{}, []int{6, 4, 2, 0}},
		{"NoTeams", auth.Scope{}, store.StackFilter{}, nil},
		{"State", all, store.StackFilter{State: horizon.StackFailed}, []int{5}},
		{"RemovedOnlyByState", all, store.StackFilter{State: horizon.StackRemoved}, []int{8}},
		{"Label", all, store.StackFilter{Label: "x"}, []int{9, 6, 3, 0}},
		{"TeamFilter", all, store.StackFilter{TeamID: &teamB.ID}, []int{9, 7, 5, 3, 1}},
		{"TemplateFilter", all, store.StackFilter{TemplateID: &other.ID}, []int{7}},
		{"TeamFilterOutsideScope", auth.Scope{Teams: []uuid.UUID{teamA.ID}}, store.StackFilter{TeamID: &teamB.ID}, nil},
		{"Combined", auth.Scope{Teams: []uuid.UUID{teamA.ID, teamB.ID}}, store.StackFilter{Label: "x", TeamID: &teamA.ID}, []int{6, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, next := list(tc.scope, tc.f, store.Page{Limit: 50})
			if want := newestFirst(tc.want); !slices.Equal(got, want) || next != nil {
				t.Fatalf("got %v (next %v), want %v and no next page", got, next, want)
			}
		})
	}
	t.Run("Pages", func(t *testing.T) {
		var got []int
		p := store.Page{Limit: 2}
		for pages := 0; ; pages++ {
			page, next := list(all, store.StackFilter{Label: "x"}, p)
			got = append(got, page...)
			if next == nil {
				break
			}
			if pages > 5 {
				t.Fatal("the pages do not end")
			}
			p.After = next
		}
		if want := newestFirst([]int{9, 6, 3, 0}); !slices.Equal(got, want) {
			t.Fatalf("pages gave %v, want %v", got, want)
		}
	})
}

func compareIDs(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) }
