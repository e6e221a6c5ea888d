package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/valyala/fasthttp"

	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// benchStack measures an authenticated GET /v1/stacks/{id} of a deployed-looking stack (two
// executions, a finished run): its saturation throughput (closed loop) and its p50/p99 at half
// of it (open loop). The control, in the same run, is a bare Fiber handler reading the same rows
// as the endpoint did before it batched them (six statements one after another: stack, template
// version, executions, run in progress, drift findings, drift check), and the load generator's
// own floor: a bare hello at the same rate, whose p99 is subtracted, and the endpoint's own
// batched read in a bare handler at the same rate, which tells the data path's tail from the
// rest of Horizon's. It also counts the Postgres round trips per request (transactions
// committed in the database, from pg_stat_database: every statement outside a transaction, and
// every pipelined batch, is one).
func benchStack(ctx context.Context) error {
	env, err := newBenchEnv(ctx)
	if err != nil {
		return err
	}
	defer env.Close()
	hAddr, err := serveHorizon(ctx, env)
	if err != nil {
		return err
	}
	tok, err := benchAdmin(ctx, env)
	if err != nil {
		return err
	}
	stack, err := benchStackRow(ctx, env.DB)
	if err != nil {
		return err
	}

	bare := fiber.New(fiber.Config{DisableStartupMessage: true})
	bare.Get("/hello", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"status": "ok"}) })
	bare.Get("/stacks/:id", func(c *fiber.Ctx) error {
		id, err := uuid.Parse(c.Params("id"))
		if err != nil {
			return fiber.ErrBadRequest
		}
		return sequentialReads(c, env.DB, id)
	})
	// The tail's control: the endpoint's own read (one pipelined batch) with nothing around it.
	bare.Get("/view/:id", func(c *fiber.Ctx) error {
		id, err := uuid.Parse(c.Params("id"))
		if err != nil {
			return fiber.ErrBadRequest
		}
		v, err := store.StackViewGet(c.Context(), env.DB, auth.Scope{All: true}, id)
		if err != nil {
			return err
		}
		return c.JSON(v)
	})
	bAddr, err := serve(bare)
	if err != nil {
		return err
	}
	get := func(path string, authd bool) request {
		return func(_ int64, req *fasthttp.Request) {
			req.SetRequestURI(path)
			if authd {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
		}
	}
	horizonReq, bareReq, viewReq, hello := get("/v1/stacks/"+stack.String(), true), get("/stacks/"+stack.String(), false),
		get("/view/"+stack.String(), false), get("/hello", false)

	const conns, dur = 32, 5 * time.Second
	fmt.Printf("Stack detail benchmark: %d connections, %s per run, loopback, Postgres and Redis local; load generator in the same process (GOMAXPROCS %d shared); load %s\n\n",
		conns, dur, runtime.GOMAXPROCS(0), loadAvg())
	closedLoop(bAddr, conns, time.Second, bareReq) // warm up both
	closedLoop(hAddr, conns, time.Second, horizonReq)
	bt, b := roundTripsOf(ctx, env, func() result { return closedLoop(bAddr, conns, dur, bareReq) })
	ht, h := roundTripsOf(ctx, env, func() result { return closedLoop(hAddr, conns, dur, horizonReq) })
	fmt.Printf("GET /v1/stacks/{id} (bearer auth, rate limit) vs bare sequential reads\n  bare     %s  round trips/req %.2f\n  horizon  %s  round trips/req %.2f\n  ratio    %.2f×\n",
		b, bt, h, ht, h.rps/b.rps)
	// The first open-loop run of a handler has a tail of its own (p99 150–200 ms for the bare
	// read, whatever runs before it): each handler measured at half is warmed up first.
	openLoop(hAddr, h.rps/2, 2*time.Second, horizonReq)
	openLoop(bAddr, h.rps/2, 2*time.Second, viewReq)
	half := openLoop(hAddr, h.rps/2, dur, horizonReq)
	floor := openLoop(bAddr, h.rps/2, dur, hello)
	view := openLoop(bAddr, h.rps/2, dur, viewReq)
	fmt.Printf("  horizon at half its max (%.0f req/s): %s\n  generator floor (bare hello, same rate): %s\n  horizon p99 less the floor's: %.2f ms (goal ≤ 5 ms); load %s\n",
		h.rps/2, half, floor, float64((half.p99-floor.p99).Microseconds())/1000, loadAvg())
	fmt.Printf("  the endpoint's read alone (StackViewGet in a bare handler, same rate): %s\n  horizon p99 less the read's: %.2f ms (what auth, the rate limit and the response add to the tail)\n",
		view, float64((half.p99-view.p99).Microseconds())/1000)
	return nil
}

// benchStackRow makes a stack of two executions with a finished deploy run, and returns its id.
func benchStackRow(ctx context.Context, db *pgxpool.Pool) (uuid.UUID, error) {
	team, err := store.TeamCreate(ctx, db, "bench")
	if err != nil {
		return uuid.Nil, err
	}
	envr, err := store.EnvironmentCreate(ctx, db, horizon.Environment{Name: "bench"})
	if err != nil {
		return uuid.Nil, err
	}
	tmpl, _, err := store.TemplateCreate(ctx, db, horizon.Template{Name: "bench", Active: true}, horizon.TemplateVersion{
		Definition:     []byte(`{"name":"bench","phases":[{"name":"p","jobs":[{"name":"web","source":{"repo":"https://example.org/r.git","branch":"main"}}]}]}`),
		DefinitionHash: "sha256:bench", JobCommits: map[string]string{"web": "0123456789012345678901234567890123456789"}, Modules: []byte(`{"jobs":{}}`)})
	if err != nil {
		return uuid.Nil, err
	}
	s, err := store.StackCreate(ctx, db, horizon.Stack{TeamID: team.ID, Name: "bench", EnvironmentID: envr.ID, TemplateID: tmpl.ID, TemplateVersion: 1})
	if err != nil {
		return uuid.Nil, err
	}
	for i := range 2 {
		if _, err := store.ExecutionInsert(ctx, db, horizon.Execution{StackID: s.ID, Job: "web", Index: i, Commit: "0123456789012345678901234567890123456789"}); err != nil {
			return uuid.Nil, err
		}
	}
	r, _, err := store.RunInsertWithSteps(ctx, db, horizon.Run{StackID: &s.ID, Kind: horizon.RunDeploy}, nil)
	if err != nil {
		return uuid.Nil, err
	}
	if _, err := db.Exec(ctx, `UPDATE runs SET state = 'succeeded', started_at = now(), finished_at = now() WHERE id = $1`, r.ID); err != nil {
		return uuid.Nil, err
	}
	_, err = db.Exec(ctx, `UPDATE stacks SET state = 'deployed', deployed_at = now() WHERE id = $1`, s.ID)
	return s.ID, err
}

// sequentialReads is the control: the reads of a stack's detail one after another.
func sequentialReads(c *fiber.Ctx, db *pgxpool.Pool, id uuid.UUID) error {
	ctx := c.Context()
	s, err := store.StackGet(ctx, db, auth.Scope{All: true}, id)
	if err != nil {
		return err
	}
	v, err := store.TemplateVersionGet(ctx, db, s.TemplateID, s.TemplateVersion)
	if err != nil {
		return err
	}
	execs, err := store.ExecutionsOfStack(ctx, db, id, false)
	if err != nil {
		return err
	}
	if _, err := store.RunActive(ctx, db, store.OfStack(id)); err != nil && !errors.Is(err, horizon.ErrNotFound) {
		return err
	}
	fs, err := store.DriftFindingsOfStack(ctx, db, id)
	if err != nil {
		return err
	}
	checked, _, _, err := store.DriftCheckOfStack(ctx, db, id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"stack": s, "version": v.Number, "executions": execs, "findings": fs, "checked_at": checked})
}

// roundTripsOf runs load and returns the database's committed transactions per request it
// made, with its result.
func roundTripsOf(ctx context.Context, env *benchEnv, load func() result) (float64, result) {
	before := committed(ctx, env)
	r := load()
	return float64(committed(ctx, env)-before-1) / float64(r.n), r // less the reading of the counter itself
}

// committed is the database's count of committed transactions, once the backends' pending
// statistics are in.
func committed(ctx context.Context, env *benchEnv) int64 {
	time.Sleep(1500 * time.Millisecond) // backends report their counters at most every second
	var n int64
	_ = env.DB.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&n)
	return n
}
