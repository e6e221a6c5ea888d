package logstream_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/logstream"
	"horizon/shared/rstream"
	"horizon/shared/secrets"
	"horizon/shared/testkit"
)

// storedTexts returns the texts of run's rows in log_lines, in id order, and checks that the
// ids are what the rows say.
func (e *env) storedTexts(run uuid.UUID) []string {
	e.t.Helper()
	rows, err := e.db.Query(context.Background(), `SELECT text FROM log_lines WHERE run_id = $1 ORDER BY stream_ms, stream_seq`, run)
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func TestWriterLinesArriveInOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{})
	run, stack := uuid.New(), uuid.New()
	src := source{step: uuid.New(), job: "web", exec: 2}
	e.write(run, stack, src, "line", 2000)
	e.end(run, stack, "succeeded")

	got := e.backfill(run, rstream.ID{}, logstream.Filter{})
	want := append(numbered("line", 2000), "<end>")
	if d := cmp.Diff(want, texts(got)); d != "" {
		t.Fatalf("backfill (-want +got):\n%s", d)
	}
	for i, m := range got[:2000] {
		if i > 0 && !got[i-1].ID.Less(m.ID) {
			t.Fatalf("ids not increasing at %d: %v then %v", i, got[i-1].ID, m.ID)
		}
		l := m.Line
		if l.ID != m.ID || l.Run != run || l.Step != src.step || l.Job != "web" || l.Execution != 2 || l.FD != logstream.Stdout || l.At.IsZero() {
			t.Fatalf("line %d: %+v", i, l)
		}
	}
	if got[2000].Status != "succeeded" {
		t.Fatalf("end status %q, want succeeded", got[2000].Status)
	}
	if d := cmp.Diff(numbered("line", 2000), e.storedTexts(run)); d != "" {
		t.Fatalf("log_lines (-want +got):\n%s", d)
	}
	ttl, err := e.rdb.TTL(context.Background(), e.c.Key(run)).Result()
	if err != nil || ttl <= 6*24*time.Hour || ttl > 7*24*time.Hour {
		t.Fatalf("stream TTL after End is %v (%v), want the 7 d retention", ttl, err)
	}
}

func TestWriterSplitsLongLinesTrimsNewlinesAndRefusesBadFD(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{})
	run := uuid.New()
	w := e.c.NewWriter(run, uuid.New(), &secrets.Masker{})
	long := strings.Repeat("é", logstream.MaxLineBytes) // 2 bytes a rune: two pieces
	if err := w.Line(uuid.Nil, "", 0, logstream.Stderr, long); err != nil {
		t.Fatal(err)
	}
	if err := w.Line(uuid.Nil, "", 0, logstream.Stdout, "crlf\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := w.Line(uuid.Nil, "", 0, "stdin", "x"); err == nil {
		t.Fatal("fd stdin accepted")
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Line(uuid.Nil, "", 0, logstream.Stdout, "late"); !errors.Is(err, logstream.ErrClosed) {
		t.Fatalf("line after Close: got %v, want ErrClosed", err)
	}
	got := e.storedTexts(run)
	if len(got) != 3 || got[0]+got[1] != long || len(got[0]) > logstream.MaxLineBytes || got[2] != "crlf" {
		t.Fatalf("got %d lines (first of %d bytes, last %q), want the text in 2 pieces of at most %d and \"crlf\"", len(got), len(got[0]), got[len(got)-1], logstream.MaxLineBytes)
	}
}

func TestWriterMasksBeforeTheLineLeaves(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{})
	h := e.hub(rstream.Config{})
	run, stack := uuid.New(), uuid.New()
	const secret = "s3cr3t-Pa55w0rd!"
	forms := []string{secret, base64.StdEncoding.EncodeToString([]byte(secret)), base64.RawURLEncoding.EncodeToString([]byte("user:" + secret))}
	m := &secrets.Masker{}
	m.Add(secret)

	live := h.Subscribe(context.Background(), run, rstream.ID{}, logstream.Filter{})
	defer live.Close()
	w := e.c.NewWriter(run, stack, m)
	for i, f := range forms {
		for _, text := range []string{f, "password=" + f + " ok", fmt.Sprintf("Authorization: Basic %s (%d)", f, i)} {
			if err := w.Line(uuid.Nil, "db", 0, logstream.Stdout, text); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.end(run, stack, "succeeded")

	var seen []string
	// Redis: every field of every entry, raw.
	entries, err := e.rdb.XRange(context.Background(), e.c.Key(run), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range entries {
		for k, v := range x.Values {
			seen = append(seen, "redis "+k+"="+fmt.Sprint(v))
		}
	}
	for _, s := range e.storedTexts(run) {
		seen = append(seen, "log_lines "+s)
	}
	msgs, err := drain(t, live)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range texts(msgs) {
		seen = append(seen, "follower "+s)
	}
	for _, s := range texts(e.backfill(run, rstream.ID{}, logstream.Filter{})) {
		seen = append(seen, "backfill "+s)
	}
	var dl bytes.Buffer
	if _, err := e.c.Download(context.Background(), &dl, logstream.Query{Run: run}, logstream.NDJSON); err != nil {
		t.Fatal(err)
	}
	seen = append(seen, "download "+dl.String())

	if len(msgs) != 10 || !strings.Contains(dl.String(), secrets.Masked) {
		t.Fatalf("got %d follower messages and download %q; want 9 lines and the end, masked", len(msgs), dl.String())
	}
	for _, s := range seen {
		for _, f := range append(forms, base64.StdEncoding.EncodeToString([]byte("user:"+secret))) {
			if strings.Contains(s, f) {
				t.Errorf("%s contains %q", s, f)
			}
		}
	}
}

func TestWriterBlocksWhenFullInsteadOfGrowing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{BufferBytes: 16 << 10, CopyInterval: time.Millisecond})
	ctx := context.Background()
	run := uuid.New()

	// Hold a lock that every COPY into log_lines waits for: Postgres is "slow".
	tx, err := e.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE log_lines IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	w := e.c.NewWriter(run, uuid.New(), &secrets.Masker{})
	const n = 1000
	wrote := make(chan error, 1)
	go func() {
		for i := range n {
			if err := w.Line(uuid.Nil, "", 0, logstream.Stdout, fmt.Sprintf("line %d", i)); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	testkit.Eventually(t, 10*time.Second, "Line blocked on a full buffer", func() bool { return w.Stats().Blocked == 1 })
	st := w.Stats()
	if st.Buffered > 16<<10 || st.Accepted >= n || st.Stored != 0 {
		t.Fatalf("stats while blocked: %+v; want at most 16 KiB held, nothing stored", st)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(numbered("line", n), e.storedTexts(run)); d != "" {
		t.Fatalf("log_lines (-want +got):\n%s", d)
	}
}

func TestWriterKeepsEveryLineWhenRedisFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{RedisRetry: 20 * time.Millisecond})
	p := testkit.NewProxy(t, e.rdb.Options().Addr)
	c := logstream.New(redisVia(t, p), e.db, logstream.Config{Prefix: e.ns, RedisRetry: 20 * time.Millisecond})
	run, stack := uuid.New(), uuid.New()
	w := c.NewWriter(run, stack, &secrets.Masker{})
	var want []string
	line := func(text string) {
		t.Helper()
		if err := w.Line(uuid.Nil, "", 0, logstream.Stdout, text); err != nil {
			t.Fatal(err)
		}
		want = append(want, text)
	}

	for i := range 100 {
		line(fmt.Sprintf("before %d", i))
	}
	testkit.Eventually(t, 10*time.Second, "first lines streamed", func() bool { return w.Stats().Streamed == 100 })
	p.Cut()
	for i := range 100 {
		line(fmt.Sprintf("during %d", i))
	}
	testkit.Eventually(t, 10*time.Second, "lines during the outage given fallback ids", func() bool { return w.Stats().Fallback == 100 })
	p.Restore()
	for i := 0; w.Stats().Streamed < 102; i++ { // the notice and at least one line
		line(fmt.Sprintf("after %d", i))
		testkit.Eventually(t, 10*time.Second, "line handled", func() bool { st := w.Stats(); return st.Streamed+st.Fallback == st.Accepted })
	}
	for i := range 100 {
		line(fmt.Sprintf("after more %d", i))
	}
	err := w.Close(context.Background())
	if !errors.Is(err, logstream.ErrNotStreamed) || errors.Is(err, logstream.ErrNotDurable) {
		t.Fatalf("close: got %v, want ErrNotStreamed only", err)
	}

	// Postgres has every line in the order written, and a notice where Redis came back (two,
	// if the first try after the restore failed too).
	isNotice := func(s string) bool { return strings.Contains(s, "written while the live log was unavailable") }
	got := e.storedTexts(run)
	if !slices.ContainsFunc(got, isNotice) {
		t.Fatalf("no notice in log_lines")
	}
	if d := cmp.Diff(want, slices.DeleteFunc(slices.Clone(got), isNotice)); d != "" {
		t.Fatalf("log_lines without notices (-want +got):\n%s", d)
	}
	stats := w.Stats()
	if stats.Lost != 0 || stats.Stored != int64(len(got)) || stats.Streamed+stats.Fallback != stats.Stored {
		t.Fatalf("stats %+v with %d rows stored", stats, len(got))
	}
	// Redis has the lines streamed, none of the outage's, and the notice.
	live := texts(e.backfill(run, rstream.ID{}, logstream.Filter{}))
	if int64(len(live)) != stats.Streamed || slices.ContainsFunc(live, func(s string) bool { return strings.HasPrefix(s, "during ") }) || !slices.ContainsFunc(live, isNotice) {
		t.Fatalf("stream has %d lines, want the %d streamed, with a notice and without the outage's", len(live), stats.Streamed)
	}
	var fallbacks int
	if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM log_lines WHERE run_id = $1 AND stream_seq >= 1::bigint << 62`, run).Scan(&fallbacks); err != nil || int64(fallbacks) != stats.Fallback {
		t.Fatalf("%d rows with fallback ids (%v), want %d", fallbacks, err, stats.Fallback)
	}
}

// TestWriterNoticesAtCloseWhatRedisMissed: lines written during an outage, then Close right
// after Redis is back (within the retry interval, so no batch tried Redis again): the stream
// still gets the notice, so a live follower learns that the download holds more.
func TestWriterNoticesAtCloseWhatRedisMissed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{})
	p := testkit.NewProxy(t, e.rdb.Options().Addr)
	c := logstream.New(redisVia(t, p), e.db, logstream.Config{Prefix: e.ns, RedisRetry: time.Hour})
	run, stack := uuid.New(), uuid.New()
	w := c.NewWriter(run, stack, &secrets.Masker{})
	p.Cut()
	for i := range 10 {
		if err := w.Line(uuid.Nil, "", 0, logstream.Stdout, fmt.Sprintf("during %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 10*time.Second, "lines given fallback ids", func() bool { return w.Stats().Fallback == 10 })
	p.Restore()
	if err := w.Close(context.Background()); !errors.Is(err, logstream.ErrNotStreamed) {
		t.Fatalf("close: got %v, want ErrNotStreamed", err)
	}
	live := texts(e.backfill(run, rstream.ID{}, logstream.Filter{}))
	if len(live) != 1 || !strings.Contains(live[0], "10 log lines were written while the live log was unavailable") {
		t.Fatalf("stream holds %q, want the notice of the 10 lines alone", live)
	}
}
