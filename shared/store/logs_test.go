package store_test

import (
	"context"
	"errors"
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
