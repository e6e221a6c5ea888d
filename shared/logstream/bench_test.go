package logstream_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"horizon/shared/logstream"
	"horizon/shared/rstream"
	"horizon/shared/secrets"
	"horizon/shared/testkit"
)

var report = flag.Bool("report", false, "run the log pipeline benchmark (TestPipelineReport) and print its table")

// TestPipelineReport measures the log pipeline against raw go-redis on the same Redis, in the
// same run, and prints a table (research perf-reliability §A.7.4, goals §A.8 4a–4e):
//
//	go test ./shared/logstream -run TestPipelineReport -report -v
//
// It is a benchmark, not a test: it asserts nothing but the absence of lost lines.
func TestPipelineReport(t *testing.T) {
	if !*report {
		t.Skip("benchmark: run with -report")
	}
	r := &reporter{w: tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)}
	fmt.Fprintln(r.w, "#\tmetric\tHorizon\traw go-redis\tratio\tgoal")
	benchThroughput(t, r)
	benchLatency(t, r, 1000, 3*time.Second, "≤ 50 ms")
	benchLatency(t, r, 10000, 3*time.Second, "≤ 250 ms")
	benchResumes(t, r)
	benchStalled(t, r)
	benchIdle(t, r)
	if err := r.w.Flush(); err != nil {
		t.Fatal(err)
	}
}

type reporter struct{ w *tabwriter.Writer }

func (r *reporter) row(cols ...string) { fmt.Fprintln(r.w, strings.Join(cols, "\t")) }

// secretMasker is a Masker with twenty registered secrets, none of which the benchmark prints.
func secretMasker() *secrets.Masker {
	m := &secrets.Masker{}
	for i := range 20 {
		m.Add(fmt.Sprintf("s3cret-value-number-%02d-%s", i, strings.Repeat("x", i)))
	}
	return m
}

// benchLine is a Terraform-like line of about 100 bytes.
func benchLine(i int) string {
	return fmt.Sprintf("module.vm[%d].proxmox_vm_qemu.this: Still creating... [%ds elapsed] seq=%08d", i%50, i%600, i)
}

func rate(n int, d time.Duration) string { return fmt.Sprintf("%.0f lines/s", float64(n)/d.Seconds()) }

func benchThroughput(t *testing.T, r *reporter) {
	e := newEnv(t, logstream.Config{})
	ctx := context.Background()
	const n = 100_000
	lines := make([]string, n)
	for i := range lines {
		lines[i] = benchLine(i)
	}

	// Raw: one XADD per round trip, then pipelined in batches of 64.
	key := e.ns + ":raw"
	start := time.Now()
	for i := range n / 4 {
		if err := e.rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: logstream.DefaultMaxLen, Approx: true, Values: []string{"text", lines[i]}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	unpiped := time.Since(start) * 4 // a quarter of the lines: the loop is slow
	start = time.Now()
	for i := 0; i < n; i += 64 {
		pipe := e.rdb.Pipeline()
		for _, l := range lines[i:min(i+64, n)] {
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: logstream.DefaultMaxLen, Approx: true, Values: []string{"text", l}})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	piped := time.Since(start)

	through := func(m *secrets.Masker) (time.Duration, time.Duration) {
		run := uuid.New()
		w := e.c.NewWriter(run, uuid.New(), m)
		start := time.Now()
		for _, l := range lines {
			if err := w.Line(uuid.Nil, "apply", 0, logstream.Stdout, l); err != nil {
				t.Fatal(err)
			}
		}
		accepted := time.Since(start)
		if err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
		return accepted, time.Since(start)
	}
	acc, masked := through(secretMasker())
	_, plain := through(&secrets.Masker{})
	// ratio of rates: a's lines/s over b's, for the same number of lines
	ratio := func(a, b time.Duration) string { return fmt.Sprintf("%.2f×", b.Seconds()/a.Seconds()) }
	r.row("4a", "lines/s, Writer with masking (Close: in Redis and Postgres) vs unpipelined XADD loop", rate(n, masked), rate(n, unpiped), ratio(masked, unpiped), "≥ 1.0×")
	r.row("4a", "  same vs XADD pipelined by 64", rate(n, masked), rate(n, piped), ratio(masked, piped), "≥ 0.3×")
	r.row("", "  accepted by Line (backpressure included)", rate(n, acc), "", "", "")
	r.row("", "  masking off (ratio: masking on / off)", rate(n, plain), "", ratio(masked, plain), "")
}

// latencies records emit times by sequence number and the latency of each delivery.
type latencies struct {
	emit []atomic.Int64 // UnixNano
	mu   sync.Mutex
	got  []time.Duration
}

func (l *latencies) deliver(seq int) {
	d := time.Duration(time.Now().UnixNano() - l.emit[seq].Load())
	l.mu.Lock()
	l.got = append(l.got, d)
	l.mu.Unlock()
}

func (l *latencies) p(q float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return percentile(l.got, q)
}

func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func seqOf(text string) int {
	i := strings.LastIndex(text, "seq=")
	n, _ := strconv.Atoi(text[i+4:])
	return n
}

// pace calls emit(i) for i in [0, n) at perSecond, in 1 ms ticks.
func pace(n, perSecond int, emit func(i int)) {
	perTick := max(1, perSecond/1000)
	start := time.Now()
	for i := 0; i < n; {
		for j := 0; j < perTick && i < n; j++ {
			emit(i)
			i++
		}
		next := start.Add(time.Duration(i/perTick) * time.Millisecond)
		time.Sleep(time.Until(next)) // pacing the emitter, not waiting for a result
	}
}

func benchLatency(t *testing.T, r *reporter, perSecond int, d time.Duration, goal string) {
	e := newEnv(t, logstream.Config{})
	h := e.hub(rstream.Config{Block: time.Second})
	ctx := context.Background()
	n := int(float64(perSecond) * d.Seconds())

	// Horizon: Writer → Redis → hub → subscriber; and log_lines polled for the durable lag.
	run := uuid.New()
	lat := &latencies{emit: make([]atomic.Int64, n)}
	sub := h.Subscribe(ctx, run, rstream.ID{}, logstream.Filter{})
	testkit.Eventually(t, 5*time.Second, "subscriber live", func() bool { return h.Stats().Members == 1 })
	received := make(chan int)
	go func() {
		count := 0
		for m := range sub.C {
			if m.Kind == logstream.KindLine {
				lat.deliver(seqOf(m.Line.Text))
				count++
			}
		}
		received <- count
	}()
	durable := &latencies{emit: lat.emit}
	stopPoll := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		seen := 0
		for {
			var c int
			if err := e.db.QueryRow(ctx, `SELECT count(*) FROM log_lines WHERE run_id = $1`, run).Scan(&c); err == nil {
				for ; seen < c; seen++ {
					durable.deliver(seen) // one writer: rows appear in emit order
				}
			}
			if seen == n {
				return
			}
			select {
			case <-stopPoll:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	w := e.c.NewWriter(run, uuid.New(), secretMasker())
	pace(n, perSecond, func(i int) {
		lat.emit[i].Store(time.Now().UnixNano())
		if err := w.Line(uuid.Nil, "apply", 0, logstream.Stdout, benchLine(i)); err != nil {
			t.Fatal(err)
		}
	})
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	e.end(run, uuid.New(), "succeeded")
	if got := <-received; got != n {
		t.Fatalf("subscriber got %d of %d lines", got, n)
	}
	select {
	case <-polled:
	case <-time.After(10 * time.Second):
		close(stopPoll)
		<-polled
	}

	// Raw: unpipelined XADD at the same rate, one XREAD BLOCK consumer.
	key := e.ns + ":rawlat"
	raw := &latencies{emit: make([]atomic.Int64, n)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		last, count := "0-0", 0
		for count < n {
			res, err := e.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{key, last}, Count: 512, Block: time.Second}).Result()
			if err != nil {
				continue
			}
			for _, m := range res[0].Messages {
				raw.deliver(seqOf(m.Values["text"].(string)))
				last = m.ID
				count++
			}
		}
	}()
	pace(n, perSecond, func(i int) {
		raw.emit[i].Store(time.Now().UnixNano())
		if err := e.rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: logstream.DefaultMaxLen, Approx: true, Values: []string{"text", benchLine(i)}}).Err(); err != nil {
			t.Fatal(err)
		}
	})
	<-done

	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	r.row("4b", fmt.Sprintf("emit → hub subscriber p50, %d lines/s", perSecond), ms(lat.p(0.5)), ms(raw.p(0.5)), "", "")
	r.row("4b", fmt.Sprintf("emit → hub subscriber p99, %d lines/s", perSecond), ms(lat.p(0.99)), ms(raw.p(0.99)), fmt.Sprintf("%.1f×", lat.p(0.99).Seconds()/raw.p(0.99).Seconds()), goal)
	r.row("4e", fmt.Sprintf("durable-copy lag p50 / p99, %d lines/s (5 ms polling)", perSecond), ms(durable.p(0.5))+" / "+ms(durable.p(0.99)), "", "", "p99 ≤ 1 s")
}

// benchResumes follows a run written at 10 000 lines/s with a follower that drops its
// subscription every 997 lines and resumes from its last id, over a stream trimmed at 2 000
// entries (so that some resumes fill the gap from Postgres), and counts lost and repeated
// lines, live and in log_lines.
func benchResumes(t *testing.T, r *reporter) {
	e := newEnv(t, logstream.Config{MaxLen: 2000})
	h := e.hub(rstream.Config{Block: time.Second})
	ctx := context.Background()
	run, stack := uuid.New(), uuid.New()
	const n = 30_000
	seen := make([]int, n)
	resumes := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		var last rstream.ID
		for {
			sub := h.Subscribe(ctx, run, last, logstream.Filter{})
			count, ended := 0, false
			for m := range sub.C {
				last = m.ID
				if m.Kind == logstream.KindEnd {
					ended = true
					break
				}
				if m.Kind == logstream.KindLine {
					seen[seqOf(m.Line.Text)]++
				}
				if count++; count == 997 {
					break
				}
			}
			sub.Close()
			if ended {
				return
			}
			resumes++
		}
	}()
	w := e.c.NewWriter(run, stack, secretMasker())
	pace(n, 10000, func(i int) {
		if err := w.Line(uuid.Nil, "apply", 0, logstream.Stdout, benchLine(i)); err != nil {
			t.Fatal(err)
		}
	})
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	e.end(run, stack, "succeeded")
	<-done
	lost, dup := 0, 0
	for _, c := range seen {
		switch {
		case c == 0:
			lost++
		case c > 1:
			dup += c - 1
		}
	}
	var stored int
	if err := e.db.QueryRow(ctx, `SELECT count(DISTINCT text) FROM log_lines WHERE run_id = $1`, run).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	r.row("4c", fmt.Sprintf("lines lost / repeated across %d resumes (MAXLEN 2000, %d lines)", resumes, n), fmt.Sprintf("%d / %d", lost, dup), "", "", "0")
	r.row("4c", "lines missing from log_lines", strconv.Itoa(n-stored), "", "", "0")
	if lost+dup+n-stored != 0 {
		t.Errorf("lost %d, repeated %d, missing from log_lines %d", lost, dup, n-stored)
	}
}

// liveHeap returns the live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// benchStalled measures what stalled subscribers (which never read) cost: the most live heap
// seen while runs are written at full speed with stalled subscribers on them, against the same
// with none. With all of them on one run they share the entries they pin; on runs of their own
// each pins its own buffer, which is the per-subscriber worst case.
func benchStalled(t *testing.T, r *reporter) {
	const k = 10
	measure := func(runs, perRun int) (peak uint64, dropped int64) {
		e := newEnv(t, logstream.Config{})
		h := e.hub(rstream.Config{Block: time.Second})
		ctx := context.Background()
		ids := make([]uuid.UUID, runs)
		var subs []*logstream.Subscription
		for i := range ids {
			ids[i] = uuid.New()
			for range perRun {
				subs = append(subs, h.Subscribe(ctx, ids[i], rstream.ID{}, logstream.Filter{}))
			}
		}
		testkit.Eventually(t, 10*time.Second, "subscribers live", func() bool { return h.Stats().Members == runs*perRun })
		base := liveHeap()
		sample := func() {
			if l := liveHeap(); l > base {
				peak = max(peak, l-base)
			}
		}
		// The runs are written together, a line to each in turn, so that every stalled
		// subscriber's buffer fills at the same time.
		ws := make([]*logstream.Writer, runs)
		for i, run := range ids {
			ws[i] = e.c.NewWriter(run, uuid.New(), secretMasker())
		}
		for i := range 20_000 {
			for _, w := range ws {
				if err := w.Line(uuid.Nil, "apply", 0, logstream.Stdout, benchLine(i)); err != nil {
					t.Fatal(err)
				}
			}
			if i%250 == 249 {
				sample()
			}
		}
		for _, w := range ws {
			if err := w.Close(ctx); err != nil {
				t.Fatal(err)
			}
		}
		testkit.Eventually(t, 10*time.Second, "stalled subscribers dropped", func() bool { return h.Stats().Dropped == int64(runs*perRun) })
		sample()
		for _, s := range subs {
			s.Close()
		}
		return peak, h.Stats().Dropped
	}
	none, _ := measure(k, 0)
	for _, c := range []struct {
		name         string
		runs, perRun int
	}{{"each on a run of its own", k, 1}, {"all on one run", 1, k}} {
		with, dropped := measure(c.runs, c.perRun)
		per := (float64(with) - float64(none)) / k / (1 << 20)
		r.row("4d", fmt.Sprintf("live heap per stalled subscriber, %d %s (1 MiB buffer; %d dropped as lagging)", k, c.name, dropped),
			fmt.Sprintf("%.2f MB", max(per, 0)), "", "", "≤ 10 MB")
	}
}

// benchIdle measures 200 open subscriptions on runs that write nothing: on 200 runs (200
// readers) and on one run (one reader).
func benchIdle(t *testing.T, r *reporter) {
	for _, runs := range []int{200, 1} {
		e := newEnv(t, logstream.Config{})
		opts := *e.rdb.Options()
		opts.PoolSize = 250 // a reader per run holds a connection in XREAD
		rdb := redis.NewClient(&opts)
		h := logstream.NewHub(e.c, rdb, rstream.Config{Block: time.Second})
		ctx := context.Background()
		ids := make([]uuid.UUID, runs)
		for i := range ids {
			ids[i] = uuid.New()
		}
		g0, base := runtime.NumGoroutine(), liveHeap()
		var subs []*logstream.Subscription
		for i := range 200 {
			subs = append(subs, h.Subscribe(ctx, ids[i%runs], rstream.ID{}, logstream.Filter{}))
		}
		testkit.Eventually(t, 20*time.Second, "subscriptions open", func() bool { return h.Stats().Members == 200 })
		heap, g := liveHeap()-base, runtime.NumGoroutine()-g0
		r.row("", fmt.Sprintf("200 idle open subscriptions on %d run(s): live heap, goroutines, readers", runs),
			fmt.Sprintf("%.2f MB, %d, %d", float64(heap)/(1<<20), g, h.Stats().Streams), "", "", "bounded")
		for _, s := range subs {
			s.Close()
		}
		h.Close()
		_ = rdb.Close() // nothing to flush
	}
}
