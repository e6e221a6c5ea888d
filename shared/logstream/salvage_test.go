package logstream_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"horizon/shared/logstream"
	"horizon/shared/rstream"
	"horizon/shared/secrets"
	"horizon/shared/store"
	"horizon/shared/testkit"
)

// dbVia returns a pool on the test database that reaches Postgres through p.
func dbVia(t testing.TB, db *pgxpool.Pool, p *testkit.Proxy) *pgxpool.Pool {
	t.Helper()
	cfg := db.Config().Copy()
	host, port, err := net.SplitHostPort(p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Host = host
	if _, err := fmt.Sscan(port, &cfg.ConnConfig.Port); err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.ConnectTimeout = time.Second
	cfg.ConnConfig.Fallbacks = nil
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// storedIDs returns the ids of run's rows in log_lines, in order.
func (e *env) storedIDs(run uuid.UUID) []rstream.ID {
	e.t.Helper()
	rows, err := e.db.Query(context.Background(), `SELECT stream_ms, stream_seq FROM log_lines WHERE run_id = $1 ORDER BY stream_ms, stream_seq`, run)
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (rstream.ID, error) {
		var ms, seq int64
		err := r.Scan(&ms, &seq)
		return rstream.ID{MS: uint64(ms), Seq: uint64(seq)}, err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// TestStoreStreamedKeepsWhatFollowersSaw: a writer that streams a 30 000-line step and dies
// before storing any of it (its Postgres unreachable until its worker is killed), beside a
// healthy writer of another step. StoreStreamed, run by two workers at once, stores every line
// followers saw, masked as they saw it, under the ids they saw, once; run again it stores
// nothing.
func TestStoreStreamedKeepsWhatFollowersSaw(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{})
	p := testkit.NewProxy(t, e.db.Config().ConnConfig.Host+":"+fmt.Sprint(e.db.Config().ConnConfig.Port))
	dying := logstream.New(e.rdb, dbVia(t, e.db, p), logstream.Config{Prefix: e.ns})
	run, stack := uuid.New(), uuid.New()
	const secret = "s3cr3t-token-value"
	m := &secrets.Masker{}
	m.Add(secret)

	p.Cut()
	const n = 30_000
	dead := dying.NewWriter(run, stack, m)
	for i := range n {
		text := fmt.Sprintf("dead %d", i)
		if i%1000 == 0 {
			text += " token=" + secret
		}
		if err := dead.Line(uuid.New(), "master", 0, logstream.Stdout, text); err != nil {
			t.Fatal(err)
		}
	}
	e.write(run, stack, source{step: uuid.New(), job: "db", exec: 1}, "alive", 50)
	testkit.Eventually(t, 60*time.Second, "the dead writer's lines streamed", func() bool { return dead.Stats().Streamed == n })
	gone, cancel := context.WithCancel(context.Background())
	cancel() // the worker is killed: nothing more is stored
	if err := dead.Close(gone); !errors.Is(err, logstream.ErrNotDurable) {
		t.Fatalf("close: got %v, want ErrNotDurable", err)
	}

	live := e.backfill(run, rstream.ID{}, logstream.Filter{}) // what a follower saw
	if len(live) != n+50 {
		t.Fatalf("the stream has %d lines, want %d", len(live), n+50)
	}
	if got := len(e.storedIDs(run)); got != 50 {
		t.Fatalf("log_lines has %d lines before the copy, want the healthy writer's 50", got)
	}

	var wg sync.WaitGroup
	counts := make([]int64, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i], errs[i] = e.c.StoreStreamed(context.Background(), run, stack)
		}()
	}
	wg.Wait()
	if errors.Join(errs...) != nil || counts[0]+counts[1] != n {
		t.Fatalf("two copies at once stored %d and %d lines (%v), want %d in all", counts[0], counts[1], errors.Join(errs...), n)
	}
	if d := cmp.Diff(texts(live), e.storedTexts(run)); d != "" {
		t.Fatalf("log_lines against the lines followers saw (-live +stored):\n%s", d)
	}
	if d := cmp.Diff(ids(live), e.storedIDs(run)); d != "" {
		t.Fatalf("ids in log_lines against the stream's (-live +stored):\n%s", d)
	}
	if got := testkit.TablesHolding(t, e.db, secret); len(got) > 0 {
		t.Fatalf("the secret is stored in %v", got)
	}
	if got, err := e.c.StoreStreamed(context.Background(), run, stack); err != nil || got != 0 {
		t.Fatalf("copy again: stored %d (%v), want 0", got, err)
	}
}

// TestStoreStreamedBesideALiveWriter: a stale delivery's writer is still storing its lines
// when another worker copies the stream: both succeed and every line is stored once.
func TestStoreStreamedBesideALiveWriter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{})
	slow := logstream.New(e.rdb, e.db, logstream.Config{Prefix: e.ns, CopyInterval: time.Hour, CopyLines: 1 << 20})
	run, stack := uuid.New(), uuid.New()
	w := slow.NewWriter(run, stack, &secrets.Masker{})
	for i := range 1000 {
		if err := w.Line(uuid.Nil, "", 0, logstream.Stdout, fmt.Sprintf("line %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 30*time.Second, "lines streamed", func() bool { return w.Stats().Streamed == 1000 })
	if got, err := e.c.StoreStreamed(context.Background(), run, stack); err != nil || got != 1000 {
		t.Fatalf("copy: stored %d (%v), want 1000", got, err)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatalf("the live writer's close after the copy: %v", err)
	}
	if st := w.Stats(); st.Stored != 1000 || st.Lost != 0 {
		t.Fatalf("writer stats %+v", st)
	}
	if d := cmp.Diff(numbered("line", 1000), e.storedTexts(run)); d != "" {
		t.Fatalf("log_lines (-want +got):\n%s", d)
	}
}

// TestStoreStreamedSkipsAFallbackTwin: a line whose XADD reached Redis but whose answer was
// lost is stored by its writer under a fallback id; the copy does not store it a second time.
func TestStoreStreamedSkipsAFallbackTwin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{})
	ctx := context.Background()
	run, stack, step := uuid.New(), uuid.New(), uuid.New()
	at := time.UnixMicro(time.Now().UnixMicro())
	// The stream entry as a writer adds it (fields of logstream's layout, see doc.go).
	add := func(text string) rstream.ID {
		id, err := e.rdb.XAdd(ctx, &redis.XAddArgs{Stream: e.c.Key(run), Values: []string{"step", step.String(), "job", "", "execution", "",
			"fd", "stdout", "ts", fmt.Sprint(at.UnixMicro()), "text", text}}).Result()
		if err != nil {
			t.Fatal(err)
		}
		parsed, _ := rstream.ParseID(id)
		return parsed
	}
	twin := add("answer lost")
	add("never stored")
	err := store.LogLinesCopy(ctx, e.db, []store.LogLine{{RunID: run, StackID: stack, StreamMS: int64(twin.MS) - 1, StreamSeq: 1<<62 | 7<<32 | 1,
		StepID: step, At: at, FD: "stdout", Text: "answer lost"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := e.c.StoreStreamed(ctx, run, stack); err != nil || got != 1 {
		t.Fatalf("copy: stored %d (%v), want 1", got, err)
	}
	if d := cmp.Diff([]string{"answer lost", "never stored"}, e.storedTexts(run)); d != "" {
		t.Fatalf("log_lines (-want +got):\n%s", d)
	}
}
