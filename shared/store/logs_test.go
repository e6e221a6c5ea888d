package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"horizon/shared/horizon"
	"horizon/shared/store"
	"horizon/shared/testkit"
)

func logLines(run, stack uuid.UUID, n int) []store.LogLine {
	step := uuid.New()
	out := make([]store.LogLine, n)
	for i := range out {
		out[i] = store.LogLine{RunID: run, StackID: stack, StreamMS: 1000, StreamSeq: int64(i),
			At: time.UnixMicro(1_700_000_000_000_000 + int64(i)).UTC(), FD: "stdout", Text: "line"}
		if i%2 == 1 {
			out[i].StepID, out[i].Job, out[i].Execution = step, "web", i%4/2
		}
	}
	return out
}

func TestLogLinesCopyIsIdempotentAndScansInOrder(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	run, stack := uuid.New(), uuid.New()
	lines := logLines(run, stack, 10)
	if err := store.LogLinesCopy(ctx, db, lines[:6]); err != nil {
		t.Fatal(err)
	}
	// A retry of a batch of which part is stored already stores the rest, once.
	if err := store.LogLinesCopy(ctx, db, lines); err != nil {
		t.Fatalf("copy with duplicates: %v", err)
	}
	var got []store.LogLine
	n, err := store.LogLinesOfRun(ctx, db, run, store.LogPos{}, store.LogPosMax, store.LogFilter{}, 100, func(l store.LogLine) error {
		l.At = l.At.UTC()
		got = append(got, l)
		return nil
	})
	if err != nil || n != 10 {
		t.Fatalf("scan: n=%d, %v", n, err)
	}
	if d := cmp.Diff(lines, got); d != "" {
		t.Fatalf("lines (-want +got):\n%s", d)
	}

	one := 1
	n, err = store.LogLinesOfRun(ctx, db, run, store.LogPos{MS: 1000, Seq: 2}, store.LogPos{MS: 1000, Seq: 9},
		store.LogFilter{Job: "web", Execution: &one}, 100, func(l store.LogLine) error {
			if l.Job != "web" || l.Execution != 1 || l.StreamSeq <= 2 || l.StreamSeq >= 9 {
				t.Errorf("filtered scan returned %+v", l)
			}
			return nil
		})
	if err != nil || n != 2 { // seq 3 and 7
		t.Fatalf("filtered scan: n=%d, %v; want 2", n, err)
	}
}

func TestLogEndsAndStackDeletion(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	run, stack, other := uuid.New(), uuid.New(), uuid.New()
	if _, err := store.LogEndGet(ctx, db, run); !errors.Is(err, horizon.ErrNotFound) {
		t.Fatalf("end before any: got %v, want ErrNotFound", err)
	}
	first := store.LogEnd{RunID: run, StackID: stack, Pos: store.LogPos{MS: 5, Seq: 1}, Status: "succeeded", At: time.Now()}
	second := first
	second.Status = "failed"
	for _, e := range []store.LogEnd{first, second} {
		if err := store.LogEndInsert(ctx, db, e); err != nil {
			t.Fatal(err)
		}
	}
	if e, err := store.LogEndGet(ctx, db, run); err != nil || e.Status != "succeeded" || e.Pos != first.Pos {
		t.Fatalf("got %+v, %v; want the first end", e, err)
	}
	if err := store.LogLinesCopy(ctx, db, append(logLines(run, stack, 5), logLines(uuid.New(), other, 3)...)); err != nil {
		t.Fatal(err)
	}
	n, err := store.LogDeleteStack(ctx, db, stack)
	if err != nil || n != 5 {
		t.Fatalf("delete: n=%d, %v; want 5", n, err)
	}
	var left, ends int
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM log_lines), (SELECT count(*) FROM log_ends)`).Scan(&left, &ends); err != nil || left != 3 || ends != 0 {
		t.Fatalf("left %d lines and %d ends (%v), want 3 and 0", left, ends, err)
	}
}

// TestRunsFinishedWithoutLogEndAreTheOnesToRepair: the reconciler's list of runs whose log was
// never ended holds a run finished in the window without a log end, a stack's and an ISO's; not
// one whose log ended, one finished too recently (its advance may still be ending it) or too
// long ago; and once the stack is removed, only its successful removal, whose log end is what
// tells followers the stack is gone (the earlier runs' logs went with the stack).
func TestRunsFinishedWithoutLogEndAreTheOnesToRepair(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	ctx := context.Background()
	stackID := newStack(t, db).ID
	var srv horizon.ProxmoxServer
	iso := newISO(t, db, &srv, "boot", "pve1", "local")
	now := time.Now()
	finished := func(owner horizon.Run, kind horizon.RunKind, state horizon.RunState, ago time.Duration) uuid.UUID {
		t.Helper()
		owner.Kind = kind
		r, _, err := store.RunInsertWithSteps(ctx, db, owner, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ctx, `UPDATE runs SET state = $2, finished_at = $3 WHERE id = $1`, r.ID, state, now.Add(-ago)); err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	ofStack, ofISO := horizon.Run{StackID: &stackID}, horizon.Run{ISOID: &iso.ID}
	unended := finished(ofStack, horizon.RunDeploy, horizon.RunFailed, time.Minute)
	ended := finished(ofStack, horizon.RunDeploy, horizon.RunSucceeded, time.Minute)
	if err := store.LogEndInsert(ctx, db, store.LogEnd{RunID: ended, StackID: stackID, Status: "succeeded", At: now}); err != nil {
		t.Fatal(err)
	}
	finished(ofStack, horizon.RunDeploy, horizon.RunSucceeded, 5*time.Second)
	finished(ofStack, horizon.RunDeploy, horizon.RunSucceeded, 2*time.Hour)
	isoRun := finished(ofISO, horizon.RunISOBuild, horizon.RunSucceeded, time.Minute)

	list := func() []uuid.UUID {
		t.Helper()
		ids, err := store.RunsFinishedWithoutLogEnd(ctx, db, now.Add(-time.Hour), now.Add(-30*time.Second), 100)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(ids, compareIDs)
		return ids
	}
	want := []uuid.UUID{unended, isoRun}
	if slices.SortFunc(want, compareIDs); !slices.Equal(list(), want) {
		t.Fatalf("to repair: %v, want the stack's unended run and the ISO's %v", list(), want)
	}

	removal := finished(ofStack, horizon.RunRemove, horizon.RunSucceeded, time.Minute)
	if _, err := db.Exec(ctx, `UPDATE stacks SET state = 'removed' WHERE id = $1`, stackID); err != nil {
		t.Fatal(err)
	}
	want = []uuid.UUID{removal, isoRun}
	if slices.SortFunc(want, compareIDs); !slices.Equal(list(), want) {
		t.Fatalf("to repair after the removal: %v, want the removal and the ISO's %v", list(), want)
	}
}
