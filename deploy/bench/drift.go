package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/deploy/sandbox/estate"
	"horizon/deploy/sandbox/pve"
	"horizon/shared/drift"
	"horizon/shared/horizon"
	"horizon/shared/proxmox"
	"horizon/shared/secrets"
	driftcheck "horizon/workers/drift"
)

// benchDrift measures the drift check (workers/drift) on sandbox clusters: HORIZON_BENCH_DRIFT_STACKS
// stacks (default 1000) of three VMs each, spread over three clusters of three nodes. It
// builds the estate the drift tests build (deploy/sandbox/estate) and prints, per check of
// every cluster with the default sweep (every config every check), the Proxmox calls by kind,
// the wall time, the Postgres queries and the process CPU (Horizon and the sandbox share this
// process), for a healthy estate (HORIZON_BENCH_DRIFT_CHECKS checks, default 10: every finding
// is a false alarm and fails the benchmark) and for the first check after 3 % of the VMs were
// changed behind Horizon's back by synchronous config edits (memory, a NIC's bridge, onboot:
// each must be found); and, in the same run, the bare way for comparison: one listing and a
// config read of every VM.
func benchDrift(ctx context.Context) error {
	stacks := envInt("HORIZON_BENCH_DRIFT_STACKS", 1000)
	checks := envInt("HORIZON_BENCH_DRIFT_CHECKS", 10)
	fmt.Printf("Drift benchmark: %d stacks, %d VMs on 3 clusters, load %s\n", stacks, 3*stacks, loadAvg())
	env, err := newBenchEnv(ctx)
	if err != nil {
		return err
	}
	defer env.Close()
	cfg := pve.DefaultConfig()
	cfg.TaskDuration = 0
	cfg.AdminToken = ""
	base := cfg.Clusters[0]
	cfg.Clusters = nil
	for i := 0; i < 3; i++ {
		c := base
		c.Name = fmt.Sprintf("c%d", i)
		cfg.Clusters = append(cfg.Clusters, c)
	}
	sb, err := pve.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer sb.Close()

	var queries atomic.Int64
	pcfg, err := pgxpool.ParseConfig(env.DatabaseURL)
	if err != nil {
		return err
	}
	pcfg.ConnConfig.Tracer = queryCounter{&queries}
	db, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return err
	}
	defer db.Close()
	key := make([]byte, 32)
	box, err := secrets.NewBox(key)
	if err != nil {
		return err
	}

	start := time.Now()
	built, err := estate.Build(ctx, env.DB, box, sb.Clusters(), estate.Options{Stacks: stacks, PerStack: 3, Parallel: 16})
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	servers := built.Servers
	counters := map[string]*callCounter{}
	for i, c := range sb.Clusters() {
		counters[c.URL()] = &callCounter{api: built.APIs[i]}
	}
	fmt.Printf("seeded in %s\n", time.Since(start).Round(time.Millisecond))

	// The default sweep; reads unspread (as an on-demand check makes them), so that the wall
	// time is the reads' own.
	checker := &driftcheck.Checker{DB: db, Box: box, Client: func(s horizon.ProxmoxServer) (drift.API, error) { return counters[s.APIURL], nil }}
	round := func(what string, n int) (findings int, perCheck time.Duration, err error) {
		for _, c := range counters {
			c.reset()
		}
		queries.Store(0)
		cpu0 := cpuTime()
		t0 := time.Now()
		for i := 0; i < n; i++ {
			var wg sync.WaitGroup
			var mu sync.Mutex
			for _, id := range servers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, cerr := checker.Check(ctx, id, nil)
					mu.Lock()
					defer mu.Unlock()
					if cerr == nil && res.Failed != nil {
						cerr = res.Failed
					}
					if cerr != nil && err == nil {
						err = cerr
					}
					findings += res.Findings
				}()
			}
			wg.Wait()
		}
		wall, cpu := time.Since(t0), cpuTime()-cpu0
		var l, t, c int64
		for _, cc := range counters {
			l, t, c = l+cc.listings.Load(), t+cc.tasks.Load(), c+cc.configs.Load()
		}
		fmt.Printf("%-34s per check of the 3 clusters: %7.1f Proxmox calls (%.1f listings + %.1f config reads) + %.1f task-log reads, %7.1f DB queries, %8s wall, %8s CPU; findings %d\n",
			what, float64(l+c)/float64(n), float64(l)/float64(n), float64(c)/float64(n), float64(t)/float64(n), float64(queries.Load())/float64(n),
			(wall / time.Duration(n)).Round(time.Microsecond), (cpu / time.Duration(n)).Round(time.Microsecond), findings)
		return findings, wall / time.Duration(n), err
	}
	if _, _, err := round("first check (sweep starts)", 1); err != nil {
		return err
	}
	healthy, horizonWall, err := round(fmt.Sprintf("healthy estate, %d checks", checks), checks)
	if err != nil {
		return err
	}
	// 1 % of the VMs changed behind Horizon's back by a synchronous config PUT (no task): memory
	// (the listing shows it), and 1 % a NIC's bridge or onboot (only the config shows them).
	changed := 0
	for _, m := range built.Machines {
		var body map[string]any
		switch m.VMID % 100 {
		case 7:
			body = map[string]any{"memory": 1024}
		case 8:
			body = map[string]any{"net0": "virtio,bridge=vmbr1"}
		case 9:
			body = map[string]any{"onboot": 0}
		default:
			continue
		}
		changed++
		if err := built.APIs[m.Cluster].Put(ctx, fmt.Sprintf("/nodes/%s/qemu/%d/config", m.Node, m.VMID), body, nil); err != nil {
			return err
		}
	}
	drifted, _, err := round(fmt.Sprintf("after %d VMs changed", changed), 1)
	if err != nil {
		return err
	}
	// The bare way: one listing and every config, per cluster.
	for _, c := range counters {
		c.reset()
	}
	t0 := time.Now()
	for i := 0; i < 5; i++ {
		for _, c := range sb.Clusters() {
			api := counters[c.URL()]
			vms, err := drift.ListVMs(ctx, api)
			if err != nil {
				return err
			}
			var wg sync.WaitGroup
			sem := make(chan struct{}, 6)
			for _, v := range vms {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					_, _ = drift.ReadConfig(ctx, api, v.Node, v.VMID)
				}()
			}
			wg.Wait()
		}
	}
	bareWall := time.Since(t0) / 5
	var bareCalls int64
	for _, cc := range counters {
		bareCalls += cc.listings.Load() + cc.configs.Load()
	}
	fmt.Printf("%-34s per check of the 3 clusters: %7.1f calls, %8s wall\n", "bare: listing + every config", float64(bareCalls)/5, bareWall.Round(time.Microsecond))
	fmt.Printf("ratio Horizon/bare (healthy estate): wall %.3f\n", float64(horizonWall)/float64(bareWall))
	if healthy != 0 {
		return fmt.Errorf("%d findings on a healthy estate: false alarms", healthy)
	}
	if drifted != changed {
		return fmt.Errorf("%d findings by the first check after %d VMs changed, want one each", drifted, changed)
	}
	return nil
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// queryCounter counts the queries of a pool.
type queryCounter struct{ n *atomic.Int64 }

func (q queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	q.n.Add(1)
	return ctx
}
func (q queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// callCounter is a cluster's API that counts the calls a check makes, by kind.
type callCounter struct {
	api                      *proxmox.Client
	listings, tasks, configs atomic.Int64
}

func (c *callCounter) reset() { c.listings.Store(0); c.tasks.Store(0); c.configs.Store(0) }

func (c *callCounter) Get(ctx context.Context, path string, v any) error {
	switch {
	case strings.HasPrefix(path, "/cluster/resources"):
		c.listings.Add(1)
	case strings.Contains(path, "/tasks"):
		c.tasks.Add(1)
	case strings.HasSuffix(path, "/config"):
		c.configs.Add(1)
	}
	return c.api.Get(ctx, path, v)
}
