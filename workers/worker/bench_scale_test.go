package worker_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"horizon/deploy/sandbox/pve"
	"horizon/functions/apitest"
	"horizon/shared/redisconn"
	"horizon/shared/testkit"
	"horizon/workers/worker/workertest"
)

// BenchmarkEngineScale deploys many stacks of three machines at once (HORIZON_BENCH_SCALE_STACKS,
// default 200) on a sandbox cluster of 10 nodes, with three workers sharing the queue as three
// worker processes would (each its own database pool and Redis client, in this process so that
// they can be counted), the builds module of EngineMakespan (a 200 ms build), and prints:
//
//   - the makespan (the first deploy accepted → the last run finished) ÷ the gate-held bound (the
//     largest per-node sum of gate-held time, as EngineMakespan defines it), goal ≤ 1.1, and
//     where the makespan goes on that busiest node (lead, gate held, hand-offs, trail);
//   - the workers' Postgres queries and Redis commands per step, with the statements and
//     commands that make up most of them: the candidates for cutting.
//
// Run it with:
//
//	go test ./workers/worker -run '^$' -bench EngineScale -benchtime 1x
func BenchmarkEngineScale(b *testing.B) {
	stacks := 200
	if n, err := strconv.Atoi(os.Getenv("HORIZON_BENCH_SCALE_STACKS")); err == nil && n > 0 {
		stacks = n
	}
	const machines, nodeCount, workers = 3, 10, 3
	var nodes []string
	for i := range nodeCount {
		nodes = append(nodes, fmt.Sprintf("pve%d", i+1))
	}
	clock := newTFClock(b)
	e := newEngine(b, engineOpts{noWorker: true, sandbox: func(c *pve.Config) {
		c.Clusters[0].Nodes = nil
		for _, n := range nodes {
			c.Clusters[0].Nodes = append(c.Clusters[0].Nodes, pve.NodeConfig{Name: n})
		}
	}})
	queries, commands := newTally(), newTally()
	d := e.API.Deps
	for range workers {
		workertest.Start(b, workertest.Deps{DB: countedPool(b, d.DB.Config().ConnString(), queries), Redis: countedRedis(b, commands),
			Box: d.Box, Namespace: d.Namespace},
			workertest.Options{TerraformBin: clock.bin, Concurrency: benchConcurrency, Heartbeat: benchHeartbeat, WorkRoot: b.TempDir()})
	}
	tmpl := e.publishFiles(buildsTemplate(machines), map[string]string{"jobs/build/main.tf": buildModule})
	// The stacks' addresses: networks of 150 (a /24 each), one environment per network.
	const perLab = 50
	var ids []string
	for k := 0; k*perLab < stacks; k++ {
		env, addrs := e.lab(100+k, perLab*machines)
		for s := k * perLab; s < min(stacks, (k+1)*perLab); s++ {
			var execs []any
			for m := range machines {
				execs = append(execs, map[string]any{"address_id": addrs[(s-k*perLab)*machines+m], "ssh_key_id": e.Key,
					"proxmox_server_id": e.Server, "node": nodes[(s*machines+m)%nodeCount], "pool": "dev"})
			}
			ids = append(ids, e.createStack(fmt.Sprintf("scale-%d", s), env, tmpl, map[string]any{"build": map[string]any{"executions": execs}}))
		}
	}
	load := loadAvg()
	queries.reset()
	commands.reset()
	var res makespanResult
	var shed atomic.Int32
	for b.Loop() {
		runs := make([]uuid.UUID, len(ids))
		var wg sync.WaitGroup
		for i, id := range ids {
			wg.Go(func() { runs[i] = e.waitRun(deployRetrying(b, e, id, &shed), 30*time.Minute) })
		}
		wg.Wait()
		res = makespanOf(b, e, clock, runs...)
	}
	steps := stacks * machines
	w := table()
	fmt.Fprintf(w, "\nEngine at scale: %d stacks × %d machines deployed at once over %d nodes, %d workers of concurrency %d, 200 ms builds; load %s → %s\n",
		stacks, machines, nodeCount, workers, benchConcurrency, load, loadAvg())
	fmt.Fprintf(w, "makespan %s, LB gate %s: ratio %.3f (goal ≤ 1.10); LB CPU %s: ratio %.2f; hand-off p50 %s p99 %s; overlaps %d; out of order %d\n",
		res.makespan.Round(time.Millisecond), res.lbGate.Round(time.Millisecond), ratio(res.makespan, res.lbGate),
		res.lbCPU.Round(time.Millisecond), ratio(res.makespan, res.lbCPU), msString(pct(res.gaps, .5)), msString(pct(res.gaps, .99)),
		res.overlaps, res.outOfOrder)
	bn := res.busiest
	fmt.Fprintf(w, "on the busiest node, makespan = lead %s + gate held %s + hand-offs %s + trail %s\n",
		bn.lead.Round(time.Millisecond), bn.held.Round(time.Millisecond), bn.handOffs.Round(time.Millisecond), bn.trail.Round(time.Millisecond))
	slices.SortFunc(res.gapsAt, func(a, b [2]time.Duration) int { return cmp.Compare(b[1], a[1]) })
	var longest []string
	for _, g := range res.gapsAt[:min(8, len(res.gapsAt))] {
		longest = append(longest, fmt.Sprintf("%s at +%s", g[1].Round(time.Millisecond), g[0].Round(100*time.Millisecond)))
	}
	fmt.Fprintf(w, "the longest hand-offs, and when they began: %s\n", strings.Join(longest, ", "))
	fmt.Fprintf(w, "Horizon's part of the gate-held time per build: p50 %s, p99 %s\n", msString(pct(res.horizonHeld, .5)), msString(pct(res.horizonHeld, .99)))
	fmt.Fprintf(w, "deploy requests answered 503 (past the request's deadline) and asked again: %d of %d\n", shed.Load(), stacks)
	fmt.Fprintf(w, "workers' Postgres queries: %.1f per step (%d in all); the most frequent:\n", float64(queries.total())/float64(steps), queries.total())
	queries.print(w, steps, 8)
	fmt.Fprintf(w, "workers' Redis commands: %.1f per step (%d in all, Asynq's polling included); the most frequent:\n", float64(commands.total())/float64(steps), commands.total())
	commands.print(w, steps, 8)
	_ = w.Flush()
	b.ReportMetric(ratio(res.makespan, res.lbGate), "makespan/LB-gate")
	b.ReportMetric(float64(queries.total())/float64(steps), "queries/step")
	b.ReportMetric(float64(commands.total())/float64(steps), "redis-commands/step")
}

// tally counts occurrences by name.
type tally struct {
	mu sync.Mutex
	n  map[string]int
}

func newTally() *tally { return &tally{n: map[string]int{}} }

func (t *tally) add(name string) {
	t.mu.Lock()
	t.n[name]++
	t.mu.Unlock()
}

func (t *tally) reset() {
	t.mu.Lock()
	clear(t.n)
	t.mu.Unlock()
}

func (t *tally) total() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	sum := 0
	for _, v := range t.n {
		sum += v
	}
	return sum
}

// print writes the top names with their count per step.
func (t *tally) print(w interface{ Write([]byte) (int, error) }, steps, top int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := slices.SortedFunc(maps.Keys(t.n), func(a, b string) int { return cmp.Or(cmp.Compare(t.n[b], t.n[a]), strings.Compare(a, b)) })
	for _, name := range names[:min(top, len(names))] {
		fmt.Fprintf(w, "  %6.2f/step\t%s\n", float64(t.n[name])/float64(steps), name)
	}
}

var spaces = regexp.MustCompile(`\s+`)

// queryTally is a pgx tracer that counts statements by their text (whitespace folded, cut at
// 110 characters: enough to tell them apart).
type queryTally struct{ t *tally }

func (q queryTally) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	s := strings.TrimSpace(spaces.ReplaceAllString(data.SQL, " "))
	if len(s) > 110 {
		s = s[:110] + "…"
	}
	q.t.add(s)
	return ctx
}

func (queryTally) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// countedPool is a pool of the database at url whose statements t counts.
func countedPool(b *testing.B, url string, t *tally) *pgxpool.Pool {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	pc.MaxConns = benchConcurrency + 10
	pc.ConnConfig.Tracer = queryTally{t}
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}

// countedRedis is a client of the tests' Redis whose commands t counts by name.
func countedRedis(b *testing.B, t *tally) redis.UniversalClient {
	opts, _, err := redisconn.Parse(testkit.RedisURL())
	if err != nil {
		b.Fatal(err)
	}
	c := opts.NewClient(0)
	c.AddHook(commandTally{t})
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// commandTally is a go-redis hook counting commands by name (a script by its first key's kind
// would be finer; the name is enough to rank them).
type commandTally struct{ t *tally }

func (commandTally) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c commandTally) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.t.add(cmd.Name())
		return next(ctx, cmd)
	}
}

func (c commandTally) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.t.add(cmd.Name())
		}
		return next(ctx, cmds)
	}
}

// deployRetrying starts stack's deploy as a client should: a 503 — the API shedding the burst, a
// deploy that waited its turn past the request's deadline, which wrote nothing — is asked again
// after its Retry-After, and counted in shed. It returns the run.
func deployRetrying(b *testing.B, e *engine, stack string, shed *atomic.Int32) uuid.UUID {
	for {
		r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member})
		switch r.Status {
		case 202:
			return uuid.MustParse(r.Map()["id"].(string))
		case 503:
			shed.Add(1)
			wait, _ := strconv.Atoi(r.Header.Get("Retry-After"))
			time.Sleep(time.Duration(max(wait, 1)) * time.Second)
		default:
			b.Fatalf("deploy: %d %s", r.Status, r.Body)
		}
	}
}
