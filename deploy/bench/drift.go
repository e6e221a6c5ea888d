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

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/deploy/sandbox/pve"
	"horizon/shared/drift"
	"horizon/shared/horizon"
	"horizon/shared/proxmox"
	"horizon/shared/secrets"
	"horizon/shared/store"
	driftcheck "horizon/workers/drift"
)

// benchDrift measures the drift check (workers/drift) on sandbox clusters: HORIZON_BENCH_DRIFT_STACKS
// stacks (default 1000) of three VMs each, spread over three clusters of three nodes. It
// prints, per check of every cluster, the Proxmox calls by kind, the wall time, the Postgres
// queries and the process CPU (Horizon and the sandbox share this process), for a healthy
// estate (HORIZON_BENCH_DRIFT_CHECKS checks, default 100: every finding is a false alarm and
// fails the benchmark) and after 1 % of the VMs were changed behind Horizon's back; and, in the
// same run, the bare way for comparison: one listing and a config read of every VM.
func benchDrift(ctx context.Context) error {
	stacks := envInt("HORIZON_BENCH_DRIFT_STACKS", 1000)
	checks := envInt("HORIZON_BENCH_DRIFT_CHECKS", 100)
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
	counters := map[string]*callCounter{}
	servers, err := seedDrift(ctx, env.DB, box, sb, stacks, counters)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	fmt.Printf("seeded in %s\n", time.Since(start).Round(time.Millisecond))

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
		fmt.Printf("%-34s per check of the 3 clusters: %5.1f listings, %5.1f task-log reads, %7.1f config reads, %7.1f DB queries, %8s wall, %8s CPU; findings %d\n",
			what, float64(l)/float64(n), float64(t)/float64(n), float64(c)/float64(n), float64(queries.Load())/float64(n),
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
	// 1 % of the VMs changed behind Horizon's back: memory through PUT (seen in the listing).
	changed := 0
	for _, c := range sb.Clusters() {
		for _, v := range c.VMs() {
			if v.VMID%100 == 7 {
				changed++
				if err := counters[c.URL()].api.Put(ctx, fmt.Sprintf("/nodes/%s/qemu/%d/config", v.Node, v.VMID), map[string]any{"memory": 1024}, nil); err != nil {
					return err
				}
			}
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
		return fmt.Errorf("%d findings after %d VMs changed, want one each", drifted, changed)
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

// seedDrift registers the clusters, creates the stacks' VMs in the sandbox and records them
// as an apply would.
func seedDrift(ctx context.Context, db *pgxpool.Pool, box *secrets.Box, sb *pve.Sandbox, n int, counters map[string]*callCounter) ([]uuid.UUID, error) {
	var team, envID uuid.UUID
	if err := db.QueryRow(ctx, `INSERT INTO teams (name) VALUES ('ops') RETURNING id`).Scan(&team); err != nil {
		return nil, err
	}
	if err := db.QueryRow(ctx, `INSERT INTO environments (name) VALUES ('lab') RETURNING id`).Scan(&envID); err != nil {
		return nil, err
	}
	tmpl, _, err := store.TemplateCreate(ctx, db, horizon.Template{Name: "vm", Active: true},
		horizon.TemplateVersion{Definition: []byte(`{"name":"vm","phases":[]}`), DefinitionHash: "bench", JobCommits: map[string]string{}, Modules: []byte(`{}`)})
	if err != nil {
		return nil, err
	}
	var servers []uuid.UUID
	for i, c := range sb.Clusters() {
		var id uuid.UUID
		err := db.QueryRow(ctx, `INSERT INTO proxmox_servers (name, api_url, token_id, token_secret, tls_fingerprint, ssh_user, ssh_private_key, ssh_public_key)
			VALUES ($1, $2, $3, $4, $5, 'root', '\x00', '') RETURNING id`, fmt.Sprintf("c%d", i), c.URL(), c.TokenID(),
			box.SealString(horizon.PurposeProxmoxTokenSecret, c.TokenSecret()), c.CertFingerprint()).Scan(&id)
		if err != nil {
			return nil, err
		}
		api, err := proxmox.New(proxmox.Config{URL: c.URL(), TokenID: c.TokenID(), TokenSecret: secrets.Value(c.TokenSecret()), Fingerprint: c.CertFingerprint()})
		if err != nil {
			return nil, err
		}
		counters[c.URL()] = &callCounter{api: api}
		servers = append(servers, id)
	}
	if _, err := db.Exec(ctx, `INSERT INTO stacks (team_id, name, environment_id, template_id, template_version, state, deployed_at)
		SELECT $1, 'stack-' || i, $2, $3, 1, 'deployed', now() FROM generate_series(0, $4 - 1) i`, team, envID, tmpl.ID, n); err != nil {
		return nil, err
	}
	if _, err := db.Exec(ctx, `INSERT INTO executions (stack_id, job, index, commit) SELECT s.id, 'vm', k, 'c' FROM stacks s, generate_series(0, 2) k`); err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, `SELECT e.id, e.stack_id, row_number() OVER (ORDER BY e.id) - 1 FROM executions e`)
	if err != nil {
		return nil, err
	}
	type ex struct {
		id, stack uuid.UUID
		i         int
	}
	execs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ex, error) {
		var e ex
		err := r.Scan(&e.id, &e.stack, &e.i)
		return e, err
	})
	if err != nil {
		return nil, err
	}
	clusters := sb.Clusters()
	var wg sync.WaitGroup
	errs := make(chan error, len(execs))
	sem := make(chan struct{}, 16)
	for _, e := range execs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c := clusters[e.i%3]
			api := counters[c.URL()].api
			vmid, node := 100+e.i/3, fmt.Sprintf("pve%d", 1+e.i%9/3)
			var upid string
			err := api.Post(ctx, "/nodes/"+node+"/qemu", map[string]any{"vmid": vmid, "name": fmt.Sprintf("vm-%d", e.i), "memory": 512,
				"cores": 1, "net0": "virtio,bridge=vmbr0", "tags": "horizon", "scsi0": "local-lvm:1", "start": 1, "pool": "dev"}, &upid)
			if err == nil {
				err = api.WaitTask(ctx, upid, 5*time.Millisecond)
			}
			if err != nil {
				errs <- err
				return
			}
			raw, err := drift.ReadConfig(ctx, api, node, vmid)
			if err != nil {
				errs <- err
				return
			}
			config, digest, id, ctime := drift.Capture(raw)
			rec := drift.Record{ExecutionID: e.id, StackID: e.stack, ServerID: servers[e.i%3], VMID: vmid, Node: node, Name: fmt.Sprintf("vm-%d", e.i),
				Tags: []string{"horizon"}, Pool: "dev", Status: "running", Config: config, Digest: digest, UUID: id, CTime: ctime,
				MaxMem: 512 << 20, MaxCPU: 1, MaxDisk: 1 << 30}
			if err := store.VMRecordPut(ctx, db, rec, nil); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	return servers, nil
}
