// Package logstreamtest is the deploy log pipeline's benchmark (throughput with masking, emit
// to reader latency, lost or repeated lines over resumes, durable-copy lag, memory per slow or
// idle reader; deploy/README.md, Benchmarks, says how to run it), shared by two reports so that
// they measure the same things the same way:
//
//   - shared/logstream's, where a follower is a hub subscription in the process
//     (go test ./shared/logstream -run '^$' -bench PipelineReport -benchtime 1x);
//   - functions/logs', where a follower is a real SSE client of GET /v1/stacks/{id}/logs/stream
//     on a real API server, end to end (go test ./functions/logs -run '^$' -bench SSEReport -benchtime 1x).
//
// Every figure is printed side by side with raw go-redis doing the same on the same Redis in
// the same run (an unpipelined and a pipelined XADD loop; XADD → one XREAD BLOCK consumer), so
// that ratios mean something on any machine. It asserts nothing but the absence of lost lines.
package logstreamtest

import (
	"context"
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
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"horizon/shared/logstream"
	"horizon/shared/rstream"
	"horizon/shared/secrets"
	"horizon/shared/testkit"
)

// Env is what a measurement writes and reads through: the Redis and database of one test, and
// the Client whose Writers emit the lines.
type Env struct {
	Redis  *redis.Client
	NS     string
	DB     *pgxpool.Pool
	Client *logstream.Client
	// NewRun returns a run to write and follow, and its stack: random ids for a hub, a run
	// that exists (of a stack of its own) for the API.
	NewRun func() (run, stack uuid.UUID)
}

// Follower is a client following runs' logs: a hub subscription, or an SSE client.
type Follower interface {
	// Follow follows run's log after the id after (zero: from its start). The channel carries
	// the messages, in order, and closes after the end or a lagging message, or once stop is
	// called (stop waits for that).
	Follow(run uuid.UUID, after rstream.ID) (msgs <-chan logstream.Message, stop func())
	// Stall opens a follow of run that never reads what it is sent, as a paused client does;
	// the func closes it.
	Stall(run uuid.UUID) func()
	// Hub returns the counters of the hub serving the follows (members following, dropped).
	Hub() rstream.Stats
}

// Setup makes a fresh Env configured with cfg (MaxLen, …) and a Follower reading it; whatever
// it starts ends at t's cleanup.
type Setup func(t testing.TB, cfg logstream.Config) (*Env, Follower)

// Run measures the pipeline through setup's followers and prints the table. via names the
// followers ("hub subscriber", "SSE client").
func Run(t testing.TB, via string, setup Setup) {
	r := &report{w: tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)}
	fmt.Fprintf(r.w, "#\tmetric (followers: %s)\tHorizon\traw go-redis\tratio\tgoal\n", via)
	throughput(t, r, setup)
	latency(t, r, setup, via, 1000, 3*time.Second, "≤ 50 ms")
	latency(t, r, setup, via, 10000, 3*time.Second, "≤ 250 ms")
	resumes(t, r, setup, via)
	stalled(t, r, setup, via)
	idle(t, r, setup, via)
	if err := r.w.Flush(); err != nil {
		t.Fatal(err)
	}
}

type report struct{ w *tabwriter.Writer }

func (r *report) row(cols ...string) { fmt.Fprintln(r.w, strings.Join(cols, "\t")) }

// Masker returns a Masker with twenty registered secrets, none of which the benchmark prints.
func Masker() *secrets.Masker {
	m := &secrets.Masker{}
	for i := range 20 {
		m.Add(fmt.Sprintf("s3cret-value-number-%02d-%s", i, strings.Repeat("x", i)))
	}
	return m
}

// Line is a Terraform-like line of about 100 bytes ending with its sequence number.
func Line(i int) string {
	return fmt.Sprintf("module.vm[%d].proxmox_vm_qemu.this: Still creating... [%ds elapsed] seq=%08d", i%50, i%600, i)
}

func seqOf(text string) int {
	i := strings.LastIndex(text, "seq=")
	n, _ := strconv.Atoi(text[i+4:])
	return n
}

func rate(n int, d time.Duration) string { return fmt.Sprintf("%.0f lines/s", float64(n)/d.Seconds()) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func throughput(t testing.TB, r *report, setup Setup) {
	e, _ := setup(t, logstream.Config{})
	ctx := context.Background()
	const n = 100_000
	lines := make([]string, n)
	for i := range lines {
		lines[i] = Line(i)
	}

	// Raw: one XADD per round trip, then pipelined in batches of 64.
	key := e.NS + ":raw"
	start := time.Now()
	for i := range n / 4 {
		if err := e.Redis.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: logstream.DefaultMaxLen, Approx: true, Values: []string{"text", lines[i]}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	unpiped := time.Since(start) * 4 // a quarter of the lines: the loop is slow
	start = time.Now()
	for i := 0; i < n; i += 64 {
		pipe := e.Redis.Pipeline()
		for _, l := range lines[i:min(i+64, n)] {
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: logstream.DefaultMaxLen, Approx: true, Values: []string{"text", l}})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	piped := time.Since(start)

	through := func(m *secrets.Masker) (time.Duration, time.Duration) {
		w := e.Client.NewWriter(uuid.New(), uuid.New(), m)
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
	acc, masked := through(Masker())
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
	if len(l.got) == 0 {
		return 0
	}
	s := slices.Clone(l.got)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
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

func latency(t testing.TB, r *report, setup Setup, via string, perSecond int, d time.Duration, goal string) {
	e, f := setup(t, logstream.Config{})
	ctx := context.Background()
	n := int(float64(perSecond) * d.Seconds())

	// Horizon: Writer → Redis → hub → follower; and log_lines polled for the durable lag.
	run, stack := e.NewRun()
	lat := &latencies{emit: make([]atomic.Int64, n)}
	msgs, stop := f.Follow(run, rstream.ID{})
	defer stop()
	testkit.Eventually(t, 10*time.Second, "follower live", func() bool { return f.Hub().Members == 1 })
	received := make(chan int)
	go func() {
		count := 0
		for m := range msgs {
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
			if err := e.DB.QueryRow(ctx, `SELECT count(*) FROM log_lines WHERE run_id = $1`, run).Scan(&c); err == nil {
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
	w := e.Client.NewWriter(run, stack, Masker())
	pace(n, perSecond, func(i int) {
		lat.emit[i].Store(time.Now().UnixNano())
		if err := w.Line(uuid.Nil, "apply", 0, logstream.Stdout, Line(i)); err != nil {
			t.Fatal(err)
		}
	})
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.End(ctx, run, stack, "succeeded", 0); err != nil {
		t.Fatal(err)
	}
	if got := <-received; got != n {
		t.Fatalf("the %s got %d of %d lines", via, got, n)
	}
	select {
	case <-polled:
	case <-time.After(10 * time.Second):
		close(stopPoll)
		<-polled
	}

	// Raw: unpipelined XADD at the same rate, one XREAD BLOCK consumer.
	key := e.NS + ":rawlat"
	raw := &latencies{emit: make([]atomic.Int64, n)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		last, count := "0-0", 0
		for count < n {
			res, err := e.Redis.XRead(ctx, &redis.XReadArgs{Streams: []string{key, last}, Count: 512, Block: time.Second}).Result()
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
		if err := e.Redis.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: logstream.DefaultMaxLen, Approx: true, Values: []string{"text", Line(i)}}).Err(); err != nil {
			t.Fatal(err)
		}
	})
	<-done

	r.row("4b", fmt.Sprintf("emit → %s p50, %d lines/s (raw: XADD → XREAD BLOCK)", via, perSecond), ms(lat.p(0.5)), ms(raw.p(0.5)), "", "")
	r.row("4b", fmt.Sprintf("emit → %s p99, %d lines/s", via, perSecond), ms(lat.p(0.99)), ms(raw.p(0.99)), fmt.Sprintf("%.1f×", lat.p(0.99).Seconds()/raw.p(0.99).Seconds()), goal)
	r.row("4e", fmt.Sprintf("durable-copy lag p50 / p99, %d lines/s (5 ms polling)", perSecond), ms(durable.p(0.5))+" / "+ms(durable.p(0.99)), "", "", "p99 ≤ 1 s")
}

// resumes follows a run written at 10 000 lines/s with a follower that drops its follow every
// 997 lines and resumes from its last id, over a stream trimmed at 2 000 entries (so that some
// resumes fill the gap from Postgres), and counts lost and repeated lines, live and in
// log_lines.
func resumes(t testing.TB, r *report, setup Setup, via string) {
	e, f := setup(t, logstream.Config{MaxLen: 2000})
	ctx := context.Background()
	run, stack := e.NewRun()
	const n = 30_000
	seen := make([]int, n)
	count := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		var last rstream.ID
		for {
			msgs, stop := f.Follow(run, last)
			k, ended := 0, false
			for m := range msgs {
				last = m.ID
				if m.Kind == logstream.KindEnd {
					ended = true
					break
				}
				if m.Kind == logstream.KindLine {
					seen[seqOf(m.Line.Text)]++
				}
				if k++; k == 997 {
					break
				}
			}
			stop()
			if ended {
				return
			}
			count++
		}
	}()
	w := e.Client.NewWriter(run, stack, Masker())
	pace(n, 10000, func(i int) {
		if err := w.Line(uuid.Nil, "apply", 0, logstream.Stdout, Line(i)); err != nil {
			t.Fatal(err)
		}
	})
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.End(ctx, run, stack, "succeeded", 0); err != nil {
		t.Fatal(err)
	}
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
	if err := e.DB.QueryRow(ctx, `SELECT count(DISTINCT text) FROM log_lines WHERE run_id = $1`, run).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	r.row("4c", fmt.Sprintf("lines lost / repeated across %d resumes of a %s (MAXLEN 2000, %d lines)", count, via, n), fmt.Sprintf("%d / %d", lost, dup), "", "", "0")
	r.row("4c", "lines missing from log_lines", strconv.Itoa(n-stored), "", "", "0")
	if lost+dup+n-stored != 0 {
		t.Errorf("lost %d, repeated %d, missing from log_lines %d", lost, dup, n-stored)
	}
}

// memory is the live heap and the goroutine stacks after a full collection: what a server's
// structures cost, wherever Go keeps them.
func memory() (heap, stacks uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse
}

// stalled measures what stalled followers (which never read) cost: the most live heap seen
// while runs are written at full speed with stalled followers on them, against the same with
// none. With all of them on one run they share the entries they pin; on runs of their own each
// pins its own buffer, which is the per-follower worst case.
func stalled(t testing.TB, r *report, setup Setup, via string) {
	const k = 10
	measure := func(runs, perRun int) (peak uint64, dropped int64) {
		e, f := setup(t, logstream.Config{})
		ctx := context.Background()
		ids, stacks := make([]uuid.UUID, runs), make([]uuid.UUID, runs)
		var stops []func()
		for i := range ids {
			ids[i], stacks[i] = e.NewRun()
			for range perRun {
				stops = append(stops, f.Stall(ids[i]))
			}
		}
		testkit.Eventually(t, 20*time.Second, "stalled followers live", func() bool { return f.Hub().Members == runs*perRun })
		base, _ := memory()
		sample := func() {
			if l, _ := memory(); l > base {
				peak = max(peak, l-base)
			}
		}
		// The runs are written together, a line to each in turn, so that every stalled
		// follower's buffer fills at the same time.
		ws := make([]*logstream.Writer, runs)
		for i, run := range ids {
			ws[i] = e.Client.NewWriter(run, stacks[i], Masker())
		}
		for i := range 20_000 {
			for _, w := range ws {
				if err := w.Line(uuid.Nil, "apply", 0, logstream.Stdout, Line(i)); err != nil {
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
		testkit.Eventually(t, 20*time.Second, "stalled followers dropped", func() bool { return f.Hub().Dropped == int64(runs*perRun) })
		sample()
		for _, stop := range stops {
			stop()
		}
		return peak, f.Hub().Dropped
	}
	none, _ := measure(k, 0)
	for _, c := range []struct {
		name         string
		runs, perRun int
	}{{"each on a run of its own", k, 1}, {"all on one run", 1, k}} {
		with, dropped := measure(c.runs, c.perRun)
		per := (float64(with) - float64(none)) / k / (1 << 20)
		r.row("4d", fmt.Sprintf("live heap per stalled %s, %d %s (1 MiB buffer; %d dropped as lagging)", via, k, c.name, dropped),
			fmt.Sprintf("%.2f MB", max(per, 0)), "", "", "≤ 10 MB")
	}
}

// idle measures 200 open follows on runs that write nothing: on 200 runs (200 readers, each
// holding a Redis connection in XREAD) and on one run (one reader). It reports what 200 cost
// over none — which includes the connection pools growing to serve 200 connections at once —
// and the marginal cost of a follow, from the second hundred.
func idle(t testing.TB, r *report, setup Setup, via string) {
	for _, runs := range []int{200, 1} {
		e, f := setup(t, logstream.Config{})
		ids := make([]uuid.UUID, runs)
		for i := range ids {
			ids[i], _ = e.NewRun()
		}
		g0 := runtime.NumGoroutine()
		heap0, stacks0 := memory()
		var stops []func()
		open := func(n int) (heap, stacks uint64) {
			for range n {
				stops = append(stops, f.Stall(ids[len(stops)%runs]))
			}
			testkit.Eventually(t, 30*time.Second, "follows open", func() bool { return f.Hub().Members == len(stops) })
			return memory()
		}
		heap1, stacks1 := open(100)
		heap2, stacks2 := open(100)
		g := runtime.NumGoroutine() - g0
		mb := func(a, b uint64) float64 { return float64(a-min(a, b)) / (1 << 20) }
		marginal := (float64(heap2+stacks2) - float64(heap1+stacks1)) / 100 / 1024
		r.row("", fmt.Sprintf("200 idle open follows (%s) on %d run(s): heap + stacks over none; per follow (2nd hundred); goroutines; readers", via, runs),
			fmt.Sprintf("%.2f + %.2f MB; %.1f KB; %d; %d", mb(heap2, heap0), mb(stacks2, stacks0), max(marginal, 0), g, f.Hub().Streams),
			"", "", "bounded")
		for _, stop := range stops {
			stop()
		}
	}
}
