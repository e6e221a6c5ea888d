package gate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"horizon/shared/gate"
	"horizon/shared/testkit"
)

// The gate's benchmark scenario, scaled down from the engine's: builds of a fixed length
// spread round-robin over nodes, enqueued at once as run:advance would, run by several Asynq
// servers (as several worker processes would be) through the pattern of the package doc.
const (
	benchBuilds      = 30
	benchBuildTime   = 100 * time.Millisecond
	benchServers     = 3
	benchConcurrency = 4
)

var benchNodes = []string{"pve-1", "pve-2", "pve-3"}

// BenchmarkBuildGate prints, per variant: makespan / lower bound (the largest per-node sum of
// gate-held time), the hand-off gap (one build's release to the next build's acquire on the same
// node) at p50 and p99, and FIFO violations (a build acquiring after one enqueued later on its
// node). Goals: ratio ≤ 1.10, p50 ≤ 100 ms, p99 ≤ 500 ms, no violations.
//
//	go test ./shared/gate -run '^$' -bench BuildGate -benchtime 3x
//
// HeadWaits is the recommended pattern (the head of the line waits in Acquire, up to 2 s);
// RunTaskOnly returns busy at once and relies on AsynqWaker alone, for comparison.
func BenchmarkBuildGate(b *testing.B) {
	for _, v := range []struct {
		name string
		wait time.Duration
	}{
		{"HeadWaits", 2 * time.Second},
		{"RunTaskOnly", 0},
	} {
		b.Run(v.name, func(b *testing.B) {
			var ratios []float64
			var gaps []time.Duration
			violations := 0
			for i := range b.N {
				r := runBuildScenario(b, v.wait)
				ratio := float64(r.makespan) / float64(r.lowerBound)
				ratios = append(ratios, ratio)
				gaps = append(gaps, r.gaps...)
				violations += r.violations
				b.Logf("run %d: makespan %s, lower bound %s, ratio %.3f, hand-off p50 %s p99 %s max %s (n=%d), FIFO violations %d",
					i+1, r.makespan.Round(time.Millisecond), r.lowerBound.Round(time.Millisecond), ratio,
					percentile(r.gaps, 0.50), percentile(r.gaps, 0.99), slices.Max(r.gaps), len(r.gaps), r.violations)
			}
			mean := 0.0
			for _, r := range ratios {
				mean += r / float64(len(ratios))
			}
			b.ReportMetric(mean, "makespan/LB")
			b.ReportMetric(ms(percentile(gaps, 0.50)), "handoff-p50-ms")
			b.ReportMetric(ms(percentile(gaps, 0.99)), "handoff-p99-ms")
			b.ReportMetric(float64(violations), "fifo-violations")
		})
	}
}

type scenarioResult struct {
	makespan, lowerBound time.Duration
	gaps                 []time.Duration
	violations           int
}

type buildPayload struct {
	Node  string `json:"node"`
	Index int    `json:"index"`
}

type heldInterval struct {
	index              int
	acquired, released time.Time
}

func runBuildScenario(b *testing.B, wait time.Duration) scenarioResult {
	b.Helper()
	rdb, ns := testkit.Redis(b)
	queue := ns + "-build"
	redisOpt, err := asynq.ParseRedisURI(testkit.RedisURL())
	if err != nil {
		b.Fatalf("redis uri: %v", err)
	}
	redisOpts, err := redis.ParseURL(testkit.RedisURL())
	if err != nil {
		b.Fatalf("redis url: %v", err)
	}

	var (
		mu   sync.Mutex
		held = map[string][]heldInterval{}
		done = make(chan error, benchBuilds)
	)
	handler := func(g *gate.Gate) asynq.HandlerFunc {
		return func(ctx context.Context, t *asynq.Task) error {
			var p buildPayload
			if err := json.Unmarshal(t.Payload(), &p); err != nil {
				return fmt.Errorf("decode: %v: %w", err, asynq.SkipRetry)
			}
			owner, _ := asynq.GetTaskID(ctx)
			lease, err := g.Acquire(ctx, p.Node, owner, wait)
			if err != nil {
				return err // busy: retried without counting as a failure
			}
			iv := heldInterval{index: p.Index, acquired: time.Now()}
			select {
			case <-lease.Context().Done():
			case <-time.After(benchBuildTime): // the simulated build
			}
			iv.released = time.Now()
			mu.Lock()
			held[p.Node] = append(held[p.Node], iv)
			mu.Unlock()
			_, err = lease.Release(ctx)
			done <- err
			return nil
		}
	}

	// Each server plays a worker process: its own Redis clients, gate and inspector.
	var servers []*asynq.Server
	for range benchServers {
		own := redis.NewClient(redisOpts)
		b.Cleanup(func() { _ = own.Close() })
		insp := asynq.NewInspectorFromRedisClient(own)
		g, err := gate.New(own, gate.Config{Prefix: ns, Wake: gate.AsynqWaker(insp, queue)})
		if err != nil {
			b.Fatalf("gate: %v", err)
		}
		srv := asynq.NewServer(redisOpt, asynq.Config{
			Concurrency: benchConcurrency,
			Queues:      map[string]int{queue: 1},
			IsFailure:   func(err error) bool { return !gate.IsBusy(err) },
			RetryDelayFunc: func(n int, err error, t *asynq.Task) time.Duration {
				if gate.IsBusy(err) {
					return gate.BusyRetryDelay(err)
				}
				return asynq.DefaultRetryDelayFunc(n, err, t)
			},
			TaskCheckInterval:        50 * time.Millisecond,
			DelayedTaskCheckInterval: 250 * time.Millisecond,
			ShutdownTimeout:          10 * time.Second,
			Logger:                   quietLogger{},
			LogLevel:                 asynq.ErrorLevel,
		})
		mux := asynq.NewServeMux()
		mux.Handle("step:run", handler(g))
		if err := srv.Start(mux); err != nil {
			b.Fatalf("start server: %v", err)
		}
		servers = append(servers, srv)
	}
	insp := asynq.NewInspectorFromRedisClient(rdb)
	b.Cleanup(func() {
		for _, srv := range servers {
			srv.Shutdown()
		}
		_ = insp.DeleteQueue(queue, true) // drops the queue from asynq:queues
	})

	// run:advance: register each build in its node's line in ready order, then enqueue it.
	enqueuer, err := gate.New(rdb, gate.Config{Prefix: ns})
	if err != nil {
		b.Fatalf("gate: %v", err)
	}
	client := asynq.NewClientFromRedisClient(rdb)
	ctx := context.Background()
	start := time.Now()
	for i := range benchBuilds {
		node := benchNodes[i%len(benchNodes)]
		id := fmt.Sprintf("%s-build-%02d", ns, i)
		if err := enqueuer.Enqueue(ctx, node, id, start.Add(time.Duration(i)*time.Microsecond), true); err != nil { // as the engine registers a build
			b.Fatalf("gate enqueue: %v", err)
		}
		payload, _ := json.Marshal(buildPayload{Node: node, Index: i})
		_, err := client.Enqueue(asynq.NewTask("step:run", payload), asynq.TaskID(id), asynq.Queue(queue),
			asynq.MaxRetry(3), asynq.Timeout(time.Minute))
		if err != nil {
			b.Fatalf("asynq enqueue: %v", err)
		}
	}
	timeout := time.After(2 * time.Minute)
	for range benchBuilds {
		select {
		case err := <-done:
			if err != nil {
				b.Fatalf("release: %v", err)
			}
		case <-timeout:
			b.Fatal("builds not finished after 2 minutes")
		}
	}

	var r scenarioResult
	var end time.Time
	for _, ivs := range held {
		sort.Slice(ivs, func(i, j int) bool { return ivs[i].acquired.Before(ivs[j].acquired) })
		var sum time.Duration
		latest := -1
		for k, iv := range ivs {
			sum += iv.released.Sub(iv.acquired)
			if iv.released.After(end) {
				end = iv.released
			}
			if k > 0 {
				r.gaps = append(r.gaps, iv.acquired.Sub(ivs[k-1].released))
			}
			if iv.index < latest {
				r.violations++
			}
			latest = max(latest, iv.index)
		}
		r.lowerBound = max(r.lowerBound, sum)
	}
	r.makespan = end.Sub(start)
	return r
}

// percentile returns the nearest-rank q-quantile of ds.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	return s[max(0, int(math.Ceil(q*float64(len(s))))-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// quietLogger keeps Asynq's own logging out of the benchmark output.
type quietLogger struct{}

func (quietLogger) Debug(...any) {}
func (quietLogger) Info(...any)  {}
func (quietLogger) Warn(...any)  {}
func (quietLogger) Error(...any) {}
func (quietLogger) Fatal(args ...any) {
	panic(fmt.Sprint(args...)) // Asynq calls Fatal only for unusable configuration
}
