package logstream_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"horizon/shared/logstream"
	"horizon/shared/rstream"
	"horizon/shared/rstream/rstreamtest"
	"horizon/shared/secrets"
	"horizon/shared/testkit"
)

func TestFollowResumesFromEveryIDWithExactlyTheRest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{PageSize: 7}) // pages end inside the log
	h := e.hub(rstream.Config{})
	run, stack := uuid.New(), uuid.New()
	e.write(run, stack, source{job: "a"}, "a", 60)
	e.write(run, stack, source{job: "b", exec: 1}, "b", 60)
	e.end(run, stack, "failed")

	all, err := drain(t, h.Subscribe(context.Background(), run, rstream.ID{}, logstream.Filter{}))
	if err != nil || len(all) != 121 || all[120].Kind != logstream.KindEnd {
		t.Fatalf("from the start: %d messages, %v; want 120 lines and the end", len(all), err)
	}
	for i := range all[:120] {
		got, err := drain(t, h.Subscribe(context.Background(), run, all[i].ID, logstream.Filter{}))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(ids(all[i+1:]), ids(got)); d != "" {
			t.Fatalf("resume from %d (%v) (-want +got):\n%s", i, all[i].ID, d)
		}
	}
}

func TestFollowGoesFromBackfillToLiveAndStopsAtEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{})
	h := e.hub(rstream.Config{})
	run, stack := uuid.New(), uuid.New()
	e.write(run, stack, source{}, "old", 10)
	sub := h.Subscribe(context.Background(), run, rstream.ID{}, logstream.Filter{})
	defer sub.Close()
	for i := range 10 {
		if m := <-sub.C; m.Line.Text != numbered("old", 10)[i] {
			t.Fatalf("backfill message %d: %+v", i, m)
		}
	}
	testkit.Eventually(t, 5*time.Second, "follower joined the hub", func() bool { return h.Stats().Members == 1 })
	e.write(run, stack, source{}, "new", 10)
	e.end(run, stack, "succeeded")
	got, err := drain(t, sub)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(append(numbered("new", 10), "<end>"), texts(got)); d != "" {
		t.Fatalf("live (-want +got):\n%s", d)
	}
}

func TestFollowFillsTrimmedGapFromPostgres(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{MaxLen: 10, PageSize: 50})
	h := e.hub(rstream.Config{})
	run, stack := uuid.New(), uuid.New()
	e.write(run, stack, source{job: "a"}, "line", 3000)
	e.end(run, stack, "succeeded")
	n, err := e.rdb.XLen(context.Background(), e.c.Key(run)).Result()
	if err != nil || n >= 1000 {
		t.Fatalf("stream holds %d entries (%v): not trimmed", n, err)
	}
	all, err := drain(t, h.Subscribe(context.Background(), run, rstream.ID{}, logstream.Filter{}))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(append(numbered("line", 3000), "<end>"), texts(all)); d != "" {
		t.Fatalf("from the start (-want +got):\n%s", d)
	}
	for _, i := range []int{0, 1, 1500, 2990, 2998, 2999} {
		got, err := drain(t, h.Subscribe(context.Background(), run, all[i].ID, logstream.Filter{Job: "a"}))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(ids(all[i+1:]), ids(got)); d != "" {
			t.Fatalf("resume from %d (-want +got):\n%s", i, d)
		}
	}
}

func TestFollowAfterTheStreamExpiredReadsPostgres(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{PageSize: 9})
	h := e.hub(rstream.Config{})
	run, stack := uuid.New(), uuid.New()
	e.write(run, stack, source{}, "line", 100)
	e.end(run, stack, "canceled")
	before := e.backfill(run, rstream.ID{}, logstream.Filter{})
	if err := e.rdb.Del(context.Background(), e.c.Key(run)).Err(); err != nil { // as EXPIRE would
		t.Fatal(err)
	}
	got, err := drain(t, h.Subscribe(context.Background(), run, rstream.ID{}, logstream.Filter{}))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(ids(before), ids(got)); d != "" {
		t.Fatalf("ids from Postgres vs from Redis (-want +got):\n%s", d)
	}
	if last := got[len(got)-1]; last.Kind != logstream.KindEnd || last.Status != "canceled" {
		t.Fatalf("last message %+v, want the end", last)
	}
	rest, err := drain(t, h.Subscribe(context.Background(), run, got[49].ID, logstream.Filter{}))
	if err != nil || len(rest) != 51 {
		t.Fatalf("resume from line 49: %d messages, %v; want 50 lines and the end", len(rest), err)
	}
}

func TestFollowFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{})
	h := e.hub(rstream.Config{})
	run, stack := uuid.New(), uuid.New()
	stepA0, stepA1, stepB0 := uuid.New(), uuid.New(), uuid.New()
	zero, one := 0, 1
	write := func(tag string) {
		e.write(run, stack, source{}, tag+" run", 2)
		e.write(run, stack, source{stepA0, "a", 0}, tag+" a0", 3)
		e.write(run, stack, source{stepA1, "a", 1}, tag+" a1", 3)
		e.write(run, stack, source{stepB0, "b", 0}, tag+" b0", 3)
	}
	tests := []struct {
		name string
		f    logstream.Filter
		want []string // prefixes, in order
	}{
		{"none", logstream.Filter{}, []string{"run", "a0", "a1", "b0"}},
		{"job", logstream.Filter{Job: "a"}, []string{"a0", "a1"}},
		{"job and execution", logstream.Filter{Job: "a", Execution: &one}, []string{"a1"}},
		{"execution", logstream.Filter{Execution: &zero}, []string{"a0", "b0"}},
		{"step", logstream.Filter{Step: stepB0}, []string{"b0"}},
	}
	expect := func(tag string, prefixes []string) []string {
		var out []string
		for _, p := range prefixes {
			n := 3
			if p == "run" {
				n = 2
			}
			out = append(out, numbered(tag+" "+p, n)...)
		}
		return out
	}
	write("old")
	subs := make([]*rstream.Subscription[logstream.Message], len(tests))
	for i, tc := range tests {
		subs[i] = h.Subscribe(context.Background(), run, rstream.ID{}, tc.f)
	}
	testkit.Eventually(t, 5*time.Second, "followers live", func() bool { return h.Stats().Members == len(tests) })
	write("new")
	e.end(run, stack, "succeeded")
	got := make([][]logstream.Message, len(tests))
	for i, s := range subs {
		var err error
		if got[i], err = drain(t, s); err != nil {
			t.Fatal(err)
		}
	}
	// Then the same filters served by Postgres, the stream being gone.
	if err := e.rdb.Del(context.Background(), e.c.Key(run)).Err(); err != nil {
		t.Fatal(err)
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := append(append(expect("old", tc.want), expect("new", tc.want)...), "<end>")
			if d := cmp.Diff(want, texts(got[i])); d != "" {
				t.Fatalf("backfill then live (-want +got):\n%s", d)
			}
			if d := cmp.Diff(want, texts(e.backfill(run, rstream.ID{}, tc.f))); d != "" {
				t.Fatalf("from Postgres (-want +got):\n%s", d)
			}
		})
	}
}

func TestFollowSeesAnEndThatRedisMissed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{})
	h := e.hub(rstream.Config{})
	run, stack := uuid.New(), uuid.New()
	e.write(run, stack, source{}, "line", 5)
	p := testkit.NewProxy(t, e.rdb.Options().Addr)
	p.Cut()
	down := logstream.New(redisVia(t, p), e.db, logstream.Config{Prefix: e.ns})
	if err := down.End(context.Background(), run, stack, "failed", 0); err == nil {
		t.Fatal("End through a cut proxy reported no error")
	}
	got, err := drain(t, h.Subscribe(context.Background(), run, rstream.ID{}, logstream.Filter{}))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(append(numbered("line", 5), "<end>"), texts(got)); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
}

// Not parallel: it counts the process's goroutines.
func TestSlowFollowerIsDroppedWhileOthersContinue(t *testing.T) {
	e := newEnv(t, logstream.Config{})
	h := e.hub(rstream.Config{Buffer: 64 << 10})
	run, stack := uuid.New(), uuid.New()
	ctx := context.Background()
	baseline := runtime.NumGoroutine()

	slow := h.Subscribe(ctx, run, rstream.ID{}, logstream.Filter{})
	defer slow.Close()
	fast := h.Subscribe(ctx, run, rstream.ID{}, logstream.Filter{})
	defer fast.Close()
	testkit.Eventually(t, 5*time.Second, "both followers live", func() bool { return h.Stats().Members == 2 })

	w := e.c.NewWriter(run, stack, &secrets.Masker{})
	const n = 5000
	// The fast follower takes each round of 100 lines (≈ 17 KiB) before the next is written,
	// so it never falls 64 KiB behind however slow the machine; the slow one reads nothing.
	var fastSeen atomic.Int64
	fastGot := make(chan []logstream.Message, 1)
	go func() {
		var ms []logstream.Message
		for m := range fast.C {
			ms = append(ms, m)
			fastSeen.Add(1)
		}
		fastGot <- ms
	}()
	maxBuffered := 0
	for i, text := range numbered("line", n) {
		if err := w.Line(uuid.Nil, "", 0, logstream.Stdout, text); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			testkit.Eventually(t, 10*time.Second, "fast follower caught up", func() bool { return fastSeen.Load() == int64(i+1) })
			maxBuffered = max(maxBuffered, h.Stats().Buffered)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	e.end(run, stack, "succeeded")
	testkit.Eventually(t, 10*time.Second, "slow follower dropped", func() bool { return h.Stats().Dropped == 1 })

	if got := <-fastGot; !slices.Equal(append(numbered("line", n), "<end>"), texts(got)) {
		t.Fatalf("fast follower got %d messages, want every line and the end", len(got))
	}
	// The slow follower gets what was in flight, then lagging; resuming from there gives
	// exactly the rest.
	got, err := drain(t, slow)
	if err != nil {
		t.Fatal(err)
	}
	last := got[len(got)-1]
	if last.Kind != logstream.KindLagging || len(got) > 1000 {
		t.Fatalf("slow follower: %d messages ending in %v, want a few and lagging", len(got), last.Kind)
	}
	rest, err := drain(t, h.Subscribe(ctx, run, last.ID, logstream.Filter{}))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(append(numbered("line", n), "<end>"), texts(append(got[:len(got)-1], rest...))); d != "" {
		t.Fatalf("before lagging + after resume (-want +got):\n%s", d)
	}
	if maxBuffered > 64<<10+32<<10 { // the slow member's Buffer, and one batch
		t.Fatalf("hub held %d bytes, want at most its 64 KiB buffer and a batch", maxBuffered)
	}
	slow.Close()
	testkit.Eventually(t, 5*time.Second, "goroutines back to baseline", func() bool {
		return h.Stats().Streams == 0 && runtime.NumGoroutine() <= baseline
	})
}

// Not parallel: it counts the process's goroutines.
func TestLastFollowerLeavingStopsTheReader(t *testing.T) {
	e := newEnv(t, logstream.Config{})
	h := e.hub(rstream.Config{})
	baseline := runtime.NumGoroutine()
	run := uuid.New()
	var subs []*rstream.Subscription[logstream.Message]
	for range 5 {
		subs = append(subs, h.Subscribe(context.Background(), run, rstream.ID{}, logstream.Filter{}))
	}
	other := h.Subscribe(context.Background(), uuid.New(), rstream.ID{}, logstream.Filter{})
	testkit.Eventually(t, 5*time.Second, "followers live", func() bool { st := h.Stats(); return st.Members == 6 && st.Streams == 2 })
	for _, s := range subs {
		s.Close()
	}
	testkit.Eventually(t, 5*time.Second, "one reader left", func() bool { return h.Stats().Streams == 1 })
	other.Close()
	testkit.Eventually(t, 5*time.Second, "no reader and goroutines back to baseline", func() bool {
		return h.Stats().Streams == 0 && runtime.NumGoroutine() <= baseline
	})
}

// TestBackfillWaitsForTrimmedLinesToBeStored trims lines from the stream before their writer
// stored them (a far-behind follower of a busy run with a short MaxLen): the backfill must
// wait for them to reach Postgres rather than skip them.
func TestBackfillWaitsForTrimmedLinesToBeStored(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{MaxLen: 10, CopyInterval: time.Hour, CopyLines: 100_000})
	run, stack := uuid.New(), uuid.New()
	w := e.c.NewWriter(run, stack, &secrets.Masker{})
	for i := range 3000 {
		if err := w.Line(uuid.Nil, "a", 0, logstream.Stdout, fmt.Sprintf("line %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 10*time.Second, "every line streamed", func() bool { return w.Stats().Streamed == 3000 })
	got := make(chan []logstream.Message)
	go func() {
		var out []logstream.Message
		_, _, err := e.c.Backfill(context.Background(), run, rstream.ID{}, logstream.Filter{}, func(m logstream.Message) error {
			out = append(out, m)
			return nil
		})
		if err != nil {
			t.Error(err)
		}
		got <- out
	}()
	// Nothing is stored until Close (the copy interval is an hour).
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(numbered("line", 3000), texts(<-got)); d != "" {
		t.Fatalf("backfill (-want +got):\n%s", d)
	}
}

// TestFollowerLearnsAtTheEndWhatRedisMissed: Redis fails mid-step and is still down when the
// writer closes, so no notice reaches the live log; the follower's end says how many stored
// lines it was not sent. A follower reading the whole log from Postgres is told none.
func TestFollowerLearnsAtTheEndWhatRedisMissed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{})
	p := testkit.NewProxy(t, e.rdb.Options().Addr)
	c := logstream.New(redisVia(t, p), e.db, logstream.Config{Prefix: e.ns, RedisRetry: time.Hour})
	hub := e.hub(rstream.Config{})
	run, stack := uuid.New(), uuid.New()
	step := uuid.New()
	sub := hub.Subscribe(context.Background(), run, rstream.ID{}, logstream.Filter{})
	filtered := hub.Subscribe(context.Background(), run, rstream.ID{}, logstream.Filter{Step: step})

	w := c.NewWriter(run, stack, &secrets.Masker{})
	for i := range 5 {
		if err := w.Line(step, "", 0, logstream.Stdout, fmt.Sprintf("before %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 10*time.Second, "first lines streamed", func() bool { return w.Stats().Streamed == 5 })
	// Both followers have read the first lines, so they follow live when Redis goes: one that
	// started only after the run's end would read the whole log from Postgres instead.
	firsts := map[*rstream.Subscription[logstream.Message]][]logstream.Message{}
	for _, s := range []*rstream.Subscription[logstream.Message]{sub, filtered} {
		firsts[s] = rstreamtest.Take(t, s, 5)
	}
	p.Cut()
	for i := range 10 {
		if err := w.Line(step, "", 0, logstream.Stdout, fmt.Sprintf("during %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 10*time.Second, "lines given fallback ids", func() bool { return w.Stats().Fallback == 10 })
	if err := w.Close(context.Background()); !errors.Is(err, logstream.ErrNotStreamed) {
		t.Fatalf("close: got %v, want ErrNotStreamed", err)
	}
	e.end(run, stack, "succeeded") // Redis is back for the run's end

	stored := len(e.storedTexts(run)) // the lines and the notice that could not be streamed
	for _, tc := range []struct {
		name string
		sub  *rstream.Subscription[logstream.Message]
		want int64
	}{{"all", sub, int64(stored - 5)}, {"step", filtered, 10}} {
		rest, err := drain(t, tc.sub)
		if err != nil {
			t.Fatal(err)
		}
		got := append(firsts[tc.sub], rest...)
		if d := cmp.Diff(append(numbered("before", 5), "<end>"), texts(got)); d != "" {
			t.Fatalf("%s: live (-want +got):\n%s", tc.name, d)
		}
		if end := got[len(got)-1]; end.Unstreamed != tc.want {
			t.Fatalf("%s: the end says %d lines were not streamed, want %d", tc.name, end.Unstreamed, tc.want)
		}
	}

	// Once the stream is gone, the whole log comes from Postgres: nothing is missed.
	if err := e.rdb.Del(context.Background(), e.c.Key(run)).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := drain(t, hub.Subscribe(context.Background(), run, rstream.ID{}, logstream.Filter{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != stored+1 || got[len(got)-1].Unstreamed != 0 || !strings.Contains(texts(got)[stored-1], "were written while the live log was unavailable") {
		t.Fatalf("from Postgres: %q, end %+v; want the %d stored lines and an end with nothing unstreamed", texts(got), got[len(got)-1], stored)
	}
}
