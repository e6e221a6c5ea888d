package logstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"horizon/shared/logstream"
	"horizon/shared/rstream"
)

func TestDownloadFormatsAndFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{})
	ctx := context.Background()
	stack := uuid.New()
	run1, run2 := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()) // time-ordered, as the engine's
	step := uuid.New()
	e.write(run1, stack, source{}, "setup", 1)
	e.write(run1, stack, source{step, "web", 1}, "apply", 2)
	e.write(run2, stack, source{step, "web", 0}, "again", 1)
	e.write(uuid.New(), uuid.New(), source{}, "other stack", 1)

	var text bytes.Buffer
	n, err := e.c.Download(ctx, &text, logstream.Query{Stack: stack}, logstream.Text)
	if err != nil || n != 4 {
		t.Fatalf("stack text: n=%d, %v; want 4", n, err)
	}
	var shape []string
	for l := range strings.Lines(text.String()) {
		f := strings.SplitN(strings.TrimSuffix(l, "\n"), " ", 4)
		if !strings.HasPrefix(l, "==") {
			if _, err := time.Parse(time.RFC3339Nano, f[0]); err != nil || !strings.HasSuffix(f[0], "Z") {
				t.Fatalf("time %q: %v", f[0], err)
			}
			f[0] = "T"
		}
		shape = append(shape, strings.Join(f, " "))
	}
	want := []string{"== run " + run1.String() + " ==", "T - stdout setup 0", "T web#1 stdout apply 0", "T web#1 stdout apply 1",
		"== run " + run2.String() + " ==", "T web#0 stdout again 0"}
	if d := cmp.Diff(want, shape); d != "" {
		t.Fatalf("text (-want +got):\n%s", d)
	}

	one := 1
	var nd bytes.Buffer
	if n, err := e.c.Download(ctx, &nd, logstream.Query{Run: run1, Filter: logstream.Filter{Job: "web", Execution: &one}}, logstream.NDJSON); err != nil || n != 2 {
		t.Fatalf("run ndjson: n=%d, %v; want 2", n, err)
	}
	var got []logstream.Line
	for l := range strings.Lines(nd.String()) {
		var line logstream.Line
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("ndjson line %q: %v", l, err)
		}
		got = append(got, line)
	}
	live := e.backfill(run1, rstream.ID{}, logstream.Filter{Job: "web", Execution: &one})
	for i, l := range got {
		w := live[i].Line
		if l.ID != w.ID || l.Run != run1 || l.Step != step || l.Job != "web" || l.Execution != 1 || l.Text != w.Text || !l.At.Equal(w.At) {
			t.Fatalf("ndjson line %d = %+v, want %+v", i, l, w)
		}
	}
	if _, err := e.c.Download(ctx, &nd, logstream.Query{}, logstream.Text); err == nil {
		t.Fatal("download of neither a run nor a stack accepted")
	}
}

// countingWriter counts bytes and lines and keeps nothing.
type countingWriter struct{ bytes, lines int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.bytes += int64(len(p))
	w.lines += int64(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}

func TestDownloadOfAMillionLinesUsesConstantMemory(t *testing.T) {
	e := newEnv(t, logstream.Config{})
	ctx := context.Background()
	run, stack := uuid.New(), uuid.New()
	const n = 1_000_000
	// Rows made by Postgres itself: a Writer would take a minute to write as many.
	if _, err := e.db.Exec(ctx, `INSERT INTO log_lines (run_id, stream_ms, stream_seq, stack_id, job, execution, at, fd, text)
		SELECT $1, 1700000000000 + i / 100, i % 100, $2, 'web', i % 3, now(), 'stdout',
		       'line ' || i || ' ' || repeat('x', 80)
		FROM generate_series(0, $3 - 1) AS i`, run, stack, n); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		q      logstream.Query
		format logstream.Format
		lines  int64
	}{
		{"run ndjson", logstream.Query{Run: run}, logstream.NDJSON, n},
		{"stack text", logstream.Query{Stack: stack}, logstream.Text, n + 1},
		{"one execution text", logstream.Query{Run: run, Filter: logstream.Filter{Job: "web", Execution: new(int)}}, logstream.Text, (n + 2) / 3},
	} {
		base, peak := heapPeak(func() {
			var w countingWriter
			if _, err := e.c.Download(ctx, &w, tc.q, tc.format); err != nil {
				t.Fatal(err)
			}
			if w.lines != tc.lines {
				t.Fatalf("%s: %d lines, want %d", tc.name, w.lines, tc.lines)
			}
			t.Logf("%s: %d lines, %.0f MB", tc.name, w.lines, float64(w.bytes)/1e6)
		})
		growth := int64(peak) - int64(base)
		fmt.Printf("download %s of %d lines: peak heap %.1f MB over a %.1f MB baseline\n", tc.name, n, float64(growth)/(1<<20), float64(base)/(1<<20))
		if growth > 32<<20 {
			t.Fatalf("%s: heap grew by %d MB while downloading", tc.name, growth>>20)
		}
	}
}

// heapPeak runs fn and returns the live heap before it and the highest heap in use seen
// while it ran, sampled every millisecond.
func heapPeak(fn func()) (base, peak uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base = ms.HeapAlloc
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	return base, peak
}

// TestDownloadTailThenTheRest reads a run's end first (?tail=) and then everything before it
// (?before=), as the console does: together they are the whole run, in order, each line once,
// also under a filter and across the download's page size.
func TestDownloadTailThenTheRest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, logstream.Config{})
	ctx := context.Background()
	stack, run := uuid.New(), uuid.Must(uuid.NewV7())
	step := uuid.New()
	e.write(run, stack, source{step, "web", 0}, "web", 4500)
	e.write(run, stack, source{step, "db", 0}, "db", 10)

	read := func(q logstream.Query) []logstream.Line {
		t.Helper()
		var nd bytes.Buffer
		n, err := e.c.Download(ctx, &nd, q, logstream.NDJSON)
		if err != nil {
			t.Fatalf("download %+v: %v", q, err)
		}
		var out []logstream.Line
		for l := range strings.Lines(nd.String()) {
			var line logstream.Line
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatalf("ndjson line %q: %v", l, err)
			}
			out = append(out, line)
		}
		if int(n) != len(out) {
			t.Fatalf("download said %d lines, wrote %d", n, len(out))
		}
		return out
	}
	texts := func(ls []logstream.Line) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.Text)
		}
		return out
	}
	for _, f := range []logstream.Filter{{}, {Job: "web"}} {
		all := read(logstream.Query{Run: run, Filter: f})
		tail := read(logstream.Query{Run: run, Filter: f, Tail: 1200})
		if d := cmp.Diff(texts(all[len(all)-1200:]), texts(tail)); d != "" {
			t.Fatalf("filter %+v: the tail is not the last 1200 lines in order (-want +got):\n%s", f, d)
		}
		rest := read(logstream.Query{Run: run, Filter: f, Before: tail[0].ID})
		if d := cmp.Diff(texts(all), texts(append(rest, tail...))); d != "" {
			t.Fatalf("filter %+v: the rest and the tail are not the whole run (-want +got):\n%s", f, d)
		}
		// A tail before a line: the lines just before it.
		prev := read(logstream.Query{Run: run, Filter: f, Before: tail[0].ID, Tail: 3})
		if d := cmp.Diff(texts(rest[len(rest)-3:]), texts(prev)); d != "" {
			t.Fatalf("filter %+v: the tail before a line (-want +got):\n%s", f, d)
		}
	}
	var sink bytes.Buffer
	if _, err := e.c.Download(ctx, &sink, logstream.Query{Stack: stack, Tail: 5}, logstream.Text); err == nil {
		t.Fatal("a stack's download took a tail: tails are per run")
	}
}
