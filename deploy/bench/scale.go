package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/valyala/fasthttp"

	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/queue"
	"horizon/shared/store"
	"horizon/shared/template"
	"horizon/workers/reconcile"
)

// scaleData is one seeded installation: n stacks in 10 teams, each stack with 10 executions and
// 10 finished runs of 5 steps (so the large one has 100 000 executions, 100 000 finished runs
// and 500 000 steps), and a small team of 3 stacks.
type scaleData struct {
	stacks        int
	env           *benchEnv
	addr          string
	admin, member string // bearer tokens; the member is in the first team only
	tinyMember    string // a member of a team of 3 stacks (the others have n/10 each)
	detail        uuid.UUID
	deepCursor    string // the admin list's cursor 90 % of the way down
	reconcile     reconcile.Handler
}

// benchScale compares Horizon's stack list and detail, and the workers' reconcile pass, on an
// installation of 10 000 stacks with one of 100 (goals in deploy/README.md, Benchmarks). Both are seeded with bulk SQL (generate_series) into databases made by the real
// migrations, then VACUUM ANALYZEd as autovacuum would leave them; both APIs run in this process
// on the same Postgres and Redis and are measured alternately, five pairs per endpoint, with one
// connection (latency, not throughput). The skewed cases (a member of a team of 3 stacks, a
// state no stack is in) are there because a plan that is good for evenly sized teams can scan
// the whole table for them. Goals: p50 with 10 000 stacks ≤ 1.2× p50 with 100; a reconcile pass
// over 100 000 finished runs ≤ 20 ms.
func benchScale(ctx context.Context) error {
	fmt.Printf("Scale benchmark: load %s\n", loadAvg())
	var sets []*scaleData
	for _, n := range []int{100, 10_000} {
		env, err := newBenchEnv(ctx)
		if err != nil {
			return err
		}
		defer env.Close()
		start := time.Now()
		d, err := seedScale(ctx, env, n)
		if err != nil {
			return fmt.Errorf("seed %d stacks: %w", n, err)
		}
		if d.addr, err = serveHorizon(ctx, env); err != nil {
			return err
		}
		fmt.Printf("seeded %d stacks (and 3 of a small team), %d executions, %d finished runs, %d steps in %s\n", n, 10*n, 10*n, 50*n,
			time.Since(start).Round(time.Millisecond))
		sets = append(sets, d)
	}
	small, big := sets[0], sets[1]

	type endpoint struct {
		name string
		req  func(d *scaleData) request
	}
	get := func(path func(d *scaleData) string, token func(d *scaleData) string) func(d *scaleData) request {
		return func(d *scaleData) request {
			p, bearer := path(d), "Bearer "+token(d)
			return func(_ int64, req *fasthttp.Request) {
				req.SetRequestURI(p)
				req.Header.Set("Authorization", bearer)
			}
		}
	}
	admin := func(d *scaleData) string { return d.admin }
	member := func(d *scaleData) string { return d.member }
	tiny := func(d *scaleData) string { return d.tinyMember }
	fixed := func(p string) func(*scaleData) string { return func(*scaleData) string { return p } }
	endpoints := []endpoint{
		{"GET /v1/stacks?limit=50 (admin, first page)", get(fixed("/v1/stacks?limit=50"), admin)},
		{"GET /v1/stacks?limit=50&cursor= (admin, 90 % down)", get(func(d *scaleData) string { return "/v1/stacks?limit=50&cursor=" + d.deepCursor }, admin)},
		{"GET /v1/stacks?limit=10 (member of 1 team in 10)", get(fixed("/v1/stacks?limit=10"), member)},
		{"GET /v1/stacks?limit=10 (member of a team of 3 stacks)", get(fixed("/v1/stacks?limit=10"), tiny)},
		{"GET /v1/stacks?state=failed&limit=5 (admin; 1 in 20 failed)", get(fixed("/v1/stacks?state=failed&limit=5"), admin)},
		{"GET /v1/stacks?state=deploying&limit=5 (admin; none deploying)", get(fixed("/v1/stacks?state=deploying&limit=5"), admin)},
		{"GET /v1/stacks/{id} (member; 10 executions, 10 runs)", get(func(d *scaleData) string { return "/v1/stacks/" + d.detail.String() }, member)},
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "\nendpoint\tp50 100 stacks\tp50 10 000 stacks\tratio (median of 5 pairs)\tpair ratios min–max\tp99 100 / 10 000\tgoal")
	const perRun = 2 * time.Second
	for _, ep := range endpoints {
		rs, rb := ep.req(small), ep.req(big)
		closedLoop(small.addr, 1, 500*time.Millisecond, rs) // warm up: connections, plans, caches
		closedLoop(big.addr, 1, 500*time.Millisecond, rb)
		var ps, pb, ratios []float64
		var p99s, p99b []float64
		for i := range 5 {
			var a, c result
			if i%2 == 0 {
				a = closedLoop(small.addr, 1, perRun, rs)
				c = closedLoop(big.addr, 1, perRun, rb)
			} else {
				c = closedLoop(big.addr, 1, perRun, rb)
				a = closedLoop(small.addr, 1, perRun, rs)
			}
			if a.errors+c.errors > 0 {
				return fmt.Errorf("%s: %d and %d errors", ep.name, a.errors, c.errors)
			}
			ps, pb = append(ps, msOf(a.p50)), append(pb, msOf(c.p50))
			p99s, p99b = append(p99s, msOf(a.p99)), append(p99b, msOf(c.p99))
			ratios = append(ratios, msOf(c.p50)/msOf(a.p50))
		}
		fmt.Fprintf(w, "%s\t%.2f ms\t%.2f ms\t%.2f×\t%.2f–%.2f\t%.2f / %.2f ms\t≤ 1.2×\n", ep.name, median(ps), median(pb), median(ratios),
			slices.Min(ratios), slices.Max(ratios), median(p99s), median(p99b))
	}

	// The reconcile pass, called as the scheduler's task calls it, alternately on both.
	var passS, passB []time.Duration
	for i := range 400 {
		for _, d := range []*scaleData{small, big} {
			if i%2 == 1 {
				d = map[*scaleData]*scaleData{small: big, big: small}[d]
			}
			start := time.Now()
			if err := d.reconcile.Pass(ctx); err != nil {
				return fmt.Errorf("reconcile pass: %w", err)
			}
			el := time.Since(start)
			if i >= 20 { // the first passes warm up connections and plans
				if d == small {
					passS = append(passS, el)
				} else {
					passB = append(passB, el)
				}
			}
		}
	}
	fmt.Fprintf(w, "reconcile pass, 0 runs in progress (1 000 vs 100 000 finished runs)\t%.2f ms\t%.2f ms\t%.2f×\t\t%.2f / %.2f ms\tp50 ≤ 20 ms\n",
		msOf(pctl(passS, .5)), msOf(pctl(passB, .5)), msOf(pctl(passB, .5))/msOf(pctl(passS, .5)), msOf(pctl(passS, .99)), msOf(pctl(passB, .99)))
	_ = w.Flush()
	fmt.Printf("load %s\n", loadAvg())
	return nil
}

// seedScale fills env with n stacks and what goes with them, and returns how to ask for them.
func seedScale(ctx context.Context, env *benchEnv, n int) (*scaleData, error) {
	db := env.DB
	d := &scaleData{stacks: n, env: env}
	if _, err := db.Exec(ctx, `INSERT INTO teams (name) SELECT 'team-' || i FROM generate_series(0, 9) i`); err != nil {
		return nil, err
	}
	var team0 uuid.UUID
	if err := db.QueryRow(ctx, `SELECT id FROM teams WHERE name = 'team-0'`).Scan(&team0); err != nil {
		return nil, err
	}
	var err error
	if d.admin, err = userWithToken(ctx, env, "admin", auth.RoleAdmin, nil); err != nil {
		return nil, err
	}
	if d.member, err = userWithToken(ctx, env, "member", auth.RoleMember, []uuid.UUID{team0}); err != nil {
		return nil, err
	}
	var envID uuid.UUID
	if err := db.QueryRow(ctx, `INSERT INTO environments (name) VALUES ('lab') RETURNING id`).Scan(&envID); err != nil {
		return nil, err
	}
	def, err := template.Parse([]byte(`name: web
phases:
  - name: web
    jobs:
      - name: web
        source: { repo: https://git.example.org/web.git, branch: main, path: jobs/web }
        executions: { multiple: true, min: 1, max: 20 }
`))
	if err != nil {
		return nil, err
	}
	defJSON, err := json.Marshal(def)
	if err != nil {
		return nil, err
	}
	commit := "0123456789abcdef0123456789abcdef01234567"
	tmpl, _, err := store.TemplateCreate(ctx, db, horizon.Template{Name: "web", Active: true},
		horizon.TemplateVersion{Definition: defJSON, DefinitionHash: "bench", JobCommits: map[string]string{"web": commit}, Modules: json.RawMessage(`{}`)})
	if err != nil {
		return nil, err
	}
	// Stack i: team i mod 10; one in 20 failed (one in each block of 20, at a place that moves
	// from block to block, so that every team has some); a third labelled. Ids are UUIDv7 in
	// insertion order, as they would be. Each stack's last run is its outcome.
	seed := []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO stacks (team_id, name, labels, environment_id, template_id, template_version, state, deployed_at)
		  SELECT t.ids[1 + i % 10], 'stack-' || i, CASE WHEN i % 3 = 0 THEN '{lab}'::text[] ELSE '{}' END, $1, $2, 1,
		         CASE WHEN i % 20 = (i / 20) % 20 THEN 'failed' ELSE 'deployed' END, now()
		  FROM generate_series(0, $3 - 1) i, (SELECT array_agg(id ORDER BY name) AS ids FROM teams) t ORDER BY i`, []any{envID, tmpl.ID, n}},
		{`INSERT INTO executions (stack_id, job, index, config, commit, applied_hash, outputs)
		  SELECT s.id, 'web', k, '{"parameters": {"size": "small"}}', $1, 'h' || k, jsonb_build_object('ip', '10.0.0.' || k)
		  FROM stacks s, generate_series(0, 9) k ORDER BY s.id, k`, []any{commit}},
		{`INSERT INTO runs (stack_id, kind, state, created_at, started_at, finished_at)
		  SELECT s.id, CASE WHEN k = 0 THEN 'deploy' ELSE 'reapply' END,
		         CASE WHEN k = 9 AND s.state = 'failed' THEN 'failed' ELSE 'succeeded' END,
		         now() - (10 - k) * interval '1 hour', now() - (10 - k) * interval '1 hour',
		         now() - (10 - k) * interval '1 hour' + interval '5 minutes'
		  FROM stacks s, generate_series(0, 9) k ORDER BY s.id, k`, nil},
		{`INSERT INTO steps (run_id, position, phase, phase_name, job, execution_index, kind, state, attempt, ready_at, started_at,
		         finished_at, heartbeat_at)
		  SELECT r.id, p, 0, 'web', 'web', p, 'apply', 'succeeded', 1, r.started_at, r.started_at, r.finished_at, r.finished_at
		  FROM runs r, generate_series(0, 4) p ORDER BY r.id, p`, nil},
	}
	for i, q := range seed {
		if _, err := db.Exec(ctx, q.sql, q.args...); err != nil {
			return nil, fmt.Errorf("seed statement %d: %w", i+1, err)
		}
	}
	// Skew: a team of 3 stacks among the others' thousands, whose member's list must not scan
	// them all.
	var tiny uuid.UUID
	if err := db.QueryRow(ctx, `INSERT INTO teams (name) VALUES ('tiny') RETURNING id`).Scan(&tiny); err != nil {
		return nil, err
	}
	if _, err := db.Exec(ctx, `INSERT INTO stacks (team_id, name, environment_id, template_id, template_version, state, deployed_at)
		SELECT $1, 'tiny-' || i, $2, $3, 1, 'deployed', now() FROM generate_series(1, 3) i`, tiny, envID, tmpl.ID); err != nil {
		return nil, err
	}
	if d.tinyMember, err = userWithToken(ctx, env, "tiny", auth.RoleMember, []uuid.UUID{tiny}); err != nil {
		return nil, err
	}
	for _, t := range []string{"stacks", "executions", "runs", "steps"} {
		if _, err := db.Exec(ctx, "VACUUM ANALYZE "+t); err != nil {
			return nil, err
		}
	}
	var runs int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM runs WHERE state IN ('succeeded', 'failed')`).Scan(&runs); err != nil {
		return nil, err
	}
	if runs != 10*n {
		return nil, fmt.Errorf("seeded %d finished runs, want %d", runs, 10*n)
	}
	// The member's detail: a deployed stack of team 0 in the middle of the set.
	if err := db.QueryRow(ctx, `SELECT id FROM stacks WHERE team_id = $1 AND state = 'deployed' ORDER BY id OFFSET $2 LIMIT 1`,
		team0, n/20).Scan(&d.detail); err != nil {
		return nil, err
	}
	var deep uuid.UUID
	if err := db.QueryRow(ctx, `SELECT id FROM stacks ORDER BY id DESC OFFSET $1 LIMIT 1`, n*9/10-50).Scan(&deep); err != nil {
		return nil, err
	}
	d.deepCursor = base64.RawURLEncoding.EncodeToString(deep[:])
	d.reconcile = reconcile.Handler{DB: db, Queues: queue.Names(env.NS), Enqueue: queue.Enqueuer{Client: asynq.NewClientFromRedisClient(env.Redis)},
		StaleAfter: time.Minute, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now}
	return d, nil
}

func userWithToken(ctx context.Context, env *benchEnv, name string, role auth.Role, teams []uuid.UUID) (string, error) {
	if teams == nil {
		teams = []uuid.UUID{}
	}
	u, err := store.UserCreate(ctx, env.DB, store.NewUser{Name: name, Email: name + "@example.org", Role: role, Teams: teams})
	if err != nil {
		return "", err
	}
	tok := auth.NewToken().Reveal()
	if _, err := store.TokenCreate(ctx, env.DB, u.ID, "bench", auth.TokenFull, auth.HashToken(tok)); err != nil {
		return "", err
	}
	return tok, nil
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

// pctl is the nearest-rank q-quantile.
func pctl(ds []time.Duration, q float64) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

// loadAvg is the machine's load average (1, 5, 15 min), as uptime prints it.
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	var a, c, e string
	_, _ = fmt.Sscan(string(b), &a, &c, &e)
	return a + " " + c + " " + e
}
