package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"horizon/functions/apitest"
	"horizon/shared/horizon"
	"horizon/shared/queue"
	"horizon/shared/terraform"
	"horizon/shared/testkit"
	"horizon/workers/worker"
)

// The engine benchmarks (their goals are in deploy/README.md, Benchmarks). Each runs
// the whole engine in process — the API, the workers with production settings (concurrency 10,
// heartbeat 10 s), real Postgres, Redis, Asynq, Terraform and, for machine builds, the Proxmox
// sandbox — and prints its figures beside a control measured in the same run:
//
//	go test ./workers/worker -run '^$' -bench EnginePhaseTransition -benchtime 12x   # 12 runs of 10 phases
//	go test ./workers/worker -run '^$' -bench EngineMakespan -benchtime 1x
//	go test ./workers/worker -run '^$' -bench EngineWorkerMemory -benchtime 1x
//
// Terraform runs through tfclock (deploy/bench/tfclock), which logs the start and end of every
// Terraform process: that is how Terraform's own time is told from Horizon's.

// benchConcurrency and benchHeartbeat are the workers' production defaults
// (HORIZON_WORKER_CONCURRENCY, HORIZON_STEP_HEARTBEAT).
const (
	benchConcurrency = 10
	benchHeartbeat   = 10 * time.Second
)

// BenchmarkEnginePhaseTransition deploys stacks of a template of 10 phases of one job each (no
// machine, a terraform_data module) one at a time, and measures each phase transition: the last
// step of a phase finished (steps.finished_at) → the first step of the next one running
// (steps.started_at). The control is a raw Asynq chain on the same Redis, served by a bare Asynq
// server with the workers' settings (concurrency, queues and weights, polling intervals): a
// task on the build queue enqueues one on the control queue, which enqueues one on the build
// queue; the figure is the first handler's return → the third one's start (the shape a
// transition had when a finished step enqueued run:advance; it now advances the run in process,
// so a transition has one task pick-up, hop 2, where the chain has two). One iteration is one
// stack of the template and 9 chains, interleaved. It also prints the per-step overhead outside
// Terraform: a step's running time minus the wall time of the Terraform processes it ran, and
// the same less what tfclock itself costs (wrapperCost, measured in the same run).
// Goals: transition p50 ≤ 1.5× and p99 ≤ 2× the chain, p50 ≤ 150 ms; step overhead p50 ≤ 20 ms.
func BenchmarkEnginePhaseTransition(b *testing.B) {
	clock := newTFClock(b)
	e := newEngine(b, engineOpts{terraformBin: clock.bin, concurrency: benchConcurrency, heartbeat: benchHeartbeat})
	const phases = 10
	tmpl := e.publishFiles(phasesTemplate(phases), map[string]string{"jobs/step/main.tf": stepModule})
	chain := startChain(b, e)
	load := loadAvg()

	var trans, hop1, hop2, bare []time.Duration
	var steps []stepTimes
	round := 0
	for b.Loop() {
		jobs := map[string]any{}
		for i := range phases {
			jobs[fmt.Sprintf("j%d", i)] = map[string]any{"executions": []any{map[string]any{}}}
		}
		stack := e.createStack(fmt.Sprintf("phases-%d", round), e.Env, tmpl, jobs)
		run := e.deployAndWait(stack, 5*time.Minute)
		ss := e.stepsOf(run)
		for i := 1; i < len(ss); i++ {
			trans = append(trans, ss[i].started.Sub(ss[i-1].finished))
			hop1 = append(hop1, ss[i].ready.Sub(ss[i-1].finished))
			hop2 = append(hop2, ss[i].started.Sub(ss[i].ready))
		}
		steps = append(steps, clock.attribute(b, ss)...)
		for range phases - 1 {
			bare = append(bare, chain.sample(b))
		}
		round++
	}
	load += " → " + loadAvg()
	wrapper := clock.wrapperCost(b, 30)

	var wall, tf, over, net []time.Duration
	for _, s := range steps {
		wall = append(wall, s.finished.Sub(s.started))
		tf = append(tf, s.terraform)
		over = append(over, s.finished.Sub(s.started)-s.terraform)
		processes := 0
		for _, n := range s.calls {
			processes += n
		}
		net = append(net, over[len(over)-1]-time.Duration(processes)*wrapper.total)
	}
	w := table()
	fmt.Fprintf(w, "\nEngine phase transitions: %d stacks × %d phases (1 job each, terraform_data), Asynq TaskCheckInterval %s, concurrency %d; load %s\n",
		round, phases, worker.TaskCheckInterval, benchConcurrency, load)
	fmt.Fprintln(w, "metric\tn\tp50\tp99\tmax\tratio p50 / p99\tgoal")
	row(w, "raw Asynq 2-hop chain (build → control → build)", bare, "", "")
	row(w, "Horizon transition: last step finished → next step running", trans,
		fmt.Sprintf("%.2f× / %.2f×", ratio(pct(trans, .5), pct(bare, .5)), ratio(pct(trans, .99), pct(bare, .99))), "p50 ≤ 1.5×, p99 ≤ 2×; p50 ≤ 150 ms")
	row(w, "  of which step finished → its run's advance queued the next (hop 1, in the finishing worker)", hop1, "", "")
	row(w, "  of which queued → running (hop 2: pickup, load, start)", hop2, "", "")
	row(w, "step running time (started → finished)", wall, "", "")
	row(w, fmt.Sprintf("  Terraform processes inside it (tfclock; %.2f per step)", processesPerStep(steps)), tf, "", "")
	row(w, "  per-step overhead outside Terraform", over, fmt.Sprintf("%.2f× of Terraform's p50", ratio(pct(over, .5), pct(tf, .5))), "")
	row(w, "  the same less tfclock's own cost (control below × the step's processes)", net, "", "p50 ≤ 20 ms")
	fmt.Fprintf(w, "tfclock's own cost (control, n 30, wrapped − bare start of `true`): %s\n", wrapper)
	fmt.Fprintf(w, "Terraform per step (mean): %s\n", clock.breakdown(steps))
	_ = w.Flush()
	b.ReportMetric(ms(pct(trans, .5)), "transition-p50-ms")
	b.ReportMetric(ms(pct(trans, .99)), "transition-p99-ms")
	b.ReportMetric(ms(pct(bare, .5)), "chain-p50-ms")
	b.ReportMetric(ratio(pct(trans, .5), pct(bare, .5)), "p50-ratio")
	b.ReportMetric(ms(pct(over, .5)), "step-overhead-p50-ms")
	b.ReportMetric(ms(pct(net, .5)), "step-overhead-less-tfclock-p50-ms")
	b.ReportMetric(processesPerStep(steps), "terraform-processes/step")
}

// BenchmarkEngineMakespan deploys one stack of 50 machine executions spread round-robin over the
// sandbox's 3 nodes (17, 17, 16), whose module builds for a fixed 200 ms (a terraform_data
// whose local-exec sleeps 0.2 s), and compares the makespan (deploy accepted → run finished)
// with lower bounds, all measured in the same run:
//
//   - LB gate: the largest per-node sum of gate-held time (step started, right after the node's
//     gate was taken → its terraform apply exited, right before the gate is released). Only one
//     build per node may hold the gate, so no schedule beats it with these builds: the ratio
//     judges scheduling (hand-offs, the first pickup, the last step's tail). Goal ≤ 1.10.
//   - LB terraform: the largest per-node sum of the Terraform processes run under the gate
//     (version, init, workspace, apply): Horizon's own work under the gate (work dir, cloud-init
//     upload, database writes) is then counted against Horizon as well.
//   - LB nominal: 17 builds × 200 ms, what the module's sleep alone would allow.
//   - LB CPU: the CPU time of every Terraform process of the run (and of its provider plugins)
//     over the cores (GOMAXPROCS): no schedule on this machine runs them faster, whatever the
//     gate. On a small machine this, not the gate, is what bounds the makespan.
//
// It also prints the hand-off gaps (a build's apply exited → the next build on that node
// started), overlapping builds on a node (must be 0) and builds that took the gate out of the
// order in which they became ready.
func BenchmarkEngineMakespan(b *testing.B) {
	clock := newTFClock(b)
	e := newEngine(b, engineOpts{terraformBin: clock.bin, concurrency: benchConcurrency, heartbeat: benchHeartbeat})
	const n = 50
	nodes := []string{"pve1", "pve2", "pve3"}
	tmpl := e.publishFiles(buildsTemplate(n), map[string]string{"jobs/build/main.tf": buildModule})
	// A version is published ahead of its deploys: the workers prepare its module meanwhile.
	testkit.Eventually(b, 2*time.Minute, "the workers prepared the published module", func() bool { return len(seeds(b, e.workRoot)) == 1 })
	load := loadAvg()
	var res []makespanResult
	round := 0
	for b.Loop() {
		b.StopTimer()
		env, addrs := e.lab(round, n) // each stack's machines need addresses of their own
		var execs []any
		for i := range n {
			execs = append(execs, map[string]any{"address_id": addrs[i], "ssh_key_id": e.Key, "proxmox_server_id": e.Server,
				"node": nodes[i%len(nodes)], "pool": "dev"})
		}
		b.StartTimer()
		stack := e.createStack(fmt.Sprintf("builds-%d", round), env, tmpl, map[string]any{"build": map[string]any{"executions": execs}})
		run := e.deployAndWait(stack, 10*time.Minute)
		res = append(res, makespanOf(b, e, clock, run))
		round++
	}
	load += " → " + loadAvg()
	wrapper := clock.wrapperCost(b, 30)
	w := table()
	fmt.Fprintf(w, "\nEngine makespan: 1 stack × %d machine executions over %d nodes, 200 ms builds (local-exec sleep 0.2), concurrency %d; load %s\n",
		n, len(nodes), benchConcurrency, load)
	fmt.Fprintln(w, "run\tmakespan\tLB gate\tratio\tLB terraform\tratio\tLB nominal\tratio\tLB CPU\tratio\thand-off p50 / p99\toverlaps\tout of order\tgoal")
	for i, r := range res {
		fmt.Fprintf(w, "%d\t%s\t%s\t%.3f\t%s\t%.3f\t%s\t%.2f\t%s\t%.2f\t%s / %s\t%d\t%d\tratio to LB gate ≤ 1.10, to LB nominal ≤ 3.0\n", i+1,
			r.makespan.Round(time.Millisecond), r.lbGate.Round(time.Millisecond), ratio(r.makespan, r.lbGate),
			r.lbTF.Round(time.Millisecond), ratio(r.makespan, r.lbTF), r.lbNominal, ratio(r.makespan, r.lbNominal),
			r.lbCPU.Round(time.Millisecond), ratio(r.makespan, r.lbCPU),
			msString(pct(r.gaps, .5)), msString(pct(r.gaps, .99)), r.overlaps, r.outOfOrder)
	}
	last := res[len(res)-1]
	fmt.Fprintf(w, "per build (mean): gate held %s, of which Terraform %s and Horizon %s (cloud-init upload, database; work dir and init when the gate was free at once); after the gate %s (terraform output, finish)\n",
		last.meanHeld.Round(time.Millisecond), last.meanTF.Round(time.Millisecond), (last.meanHeld - last.meanTF).Round(time.Millisecond),
		last.meanAfter.Round(time.Millisecond))
	fmt.Fprintf(w, "Horizon's part of the gate-held time per build: n %d, p50 %s, p99 %s, max %s (goal p50 ≤ 30 ms)\n",
		len(last.horizonHeld), msString(pct(last.horizonHeld, .5)), msString(pct(last.horizonHeld, .99)), msString(slices.Max(last.horizonHeld)))
	if len(last.launch) > 0 {
		fmt.Fprintf(w, "  of which Horizon's own code (step started → terraform apply called: event, watch, log, cloud-init upload): n %d, p50 %s, p99 %s\n",
			len(last.horizonOwn), msString(pct(last.horizonOwn, .5)), msString(pct(last.horizonOwn, .99)))
		fmt.Fprintf(w, "  and launching (apply called → the real binary forked: tfclock's exec and start, which the real Terraform's exec repeats inside its own interval): p50 %s, p99 %s; of which exec → tfclock's main p50 %s\n",
			msString(pct(last.launch, .5)), msString(pct(last.launch, .99)), msString(pct(last.launchExec, .5)))
		fmt.Fprintf(w, "  tfclock's own cost (control, n 30, wrapped − bare start of `true`): %s; the launch less its exec and start: p50 %s\n",
			wrapper, msString(pct(last.launch, .5)-wrapper.front))
	}
	fmt.Fprintf(w, "Terraform per build (mean, every command, output included): %s; %.2f processes per build (goal ≤ 3); CPU %s per build\n",
		last.tfBreakdown, last.processes, last.meanCPU.Round(time.Millisecond))
	fmt.Fprintf(w, "first build started %s after the deploy was accepted, of which the module's terraform init %s; the run finished %s after the last apply exited\n",
		last.head.Round(time.Millisecond), last.firstInit.Round(time.Millisecond), last.tail.Round(time.Millisecond))
	if last.firstInit > 0 {
		fmt.Fprintf(w, "  head: accepted → first step ready %s → its module's init began %s → init %s → first build started %s\n",
			last.headParts[0].Round(time.Millisecond), last.headParts[1].Round(time.Millisecond), last.headParts[2].Round(time.Millisecond),
			last.headParts[3].Round(time.Millisecond))
	} else {
		fmt.Fprintf(w, "  head: accepted → first step ready %s → first build started %s (no init on the way: the workers prepared the module when the version was published)\n",
			last.headParts[0].Round(time.Millisecond), last.headParts[3].Round(time.Millisecond))
	}
	fmt.Fprintf(w, "makespan ÷ (LB gate + that init, which every build waits for): %.3f (goal for the gate's ratio ≤ 1.05)\n",
		ratio(last.makespan, last.lbGate+last.firstInit))
	_ = w.Flush()
	b.ReportMetric(ratio(last.makespan, last.lbGate), "makespan/LB-gate")
	b.ReportMetric(ratio(last.makespan, last.lbGate+last.firstInit), "makespan/LB-gate+init")
	b.ReportMetric(ms(pct(last.horizonHeld, .5)), "horizon-under-gate-p50-ms")
	if len(last.horizonOwn) > 0 {
		b.ReportMetric(ms(pct(last.horizonOwn, .5)), "horizon-own-under-gate-p50-ms")
		b.ReportMetric(ms(pct(last.launch, .5)), "launch-under-gate-p50-ms")
	}
	b.ReportMetric(ratio(last.makespan, last.lbTF), "makespan/LB-terraform")
	b.ReportMetric(ms(pct(last.gaps, .5)), "handoff-p50-ms")
	b.ReportMetric(ratio(last.makespan, last.lbNominal), "makespan/LB-nominal")
	b.ReportMetric(ratio(last.makespan, last.lbCPU), "makespan/LB-cpu")
	b.ReportMetric(last.processes, "terraform-processes/build")
}

// BenchmarkEngineWorkerMemory runs 500 runs through the workers — ten one-step stacks (a
// terraform_data module) deployed, then run again, ten at a time — and compares the process's
// live heap (after two GCs, with no run in progress) after 50 runs and after 500. The API and
// the sandbox share the process; they are idle at both points. Goal: within 10 %. With
// HORIZON_BENCH_HEAP_PROFILES=dir it writes heap-50.pprof and heap-500.pprof there (compare with
// go tool pprof -base).
func BenchmarkEngineWorkerMemory(b *testing.B) {
	clock := newTFClock(b)
	e := newEngine(b, engineOpts{terraformBin: clock.bin, concurrency: benchConcurrency, heartbeat: benchHeartbeat})
	tmpl := e.publishFiles(phasesTemplate(1), map[string]string{"jobs/step/main.tf": stepModule})
	const parallel = 10
	load := loadAvg()
	type snapshot struct {
		runs       int
		heap, rss  uint64
		goroutines int
		took       time.Duration
	}
	var snaps []snapshot
	for b.Loop() {
		stacks := make([]string, parallel)
		for i := range stacks {
			stacks[i] = e.createStack(fmt.Sprintf("mem-%d", i), e.Env, tmpl, map[string]any{"j0": map[string]any{"executions": []any{map[string]any{}}}})
		}
		done := 0
		start := time.Now()
		for _, target := range []int{50, 500} {
			per := (target - done) / parallel
			var wg sync.WaitGroup
			for _, s := range stacks {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range per {
						if !e.isDeployed(s) {
							e.deployAndWait(s, 5*time.Minute)
						} else {
							e.runAgainAndWait(s, "j0", 0, 5*time.Minute)
						}
					}
				}()
			}
			wg.Wait()
			done += per * parallel
			heap, rss, g := settledMemory(b, fmt.Sprintf("heap-%d.pprof", done))
			snaps = append(snaps, snapshot{runs: done, heap: heap, rss: rss, goroutines: g, took: time.Since(start)})
		}
	}
	load += " → " + loadAvg()
	w := table()
	fmt.Fprintf(w, "\nWorker memory: runs of one step (terraform_data), %d stacks at a time, concurrency %d; load %s\n", parallel, benchConcurrency, load)
	fmt.Fprintln(w, "after runs\tlive heap\tRSS\tgoroutines\telapsed\tratio to 50 runs\tgoal")
	for _, s := range snaps {
		fmt.Fprintf(w, "%d\t%.2f MB\t%.1f MB\t%d\t%s\t%.3f× heap, %.3f× RSS\theap within 10 %%\n", s.runs, mb(s.heap), mb(s.rss), s.goroutines,
			s.took.Round(time.Second), float64(s.heap)/float64(snaps[0].heap), float64(s.rss)/float64(snaps[0].rss))
	}
	_ = w.Flush()
	last := snaps[len(snaps)-1]
	b.ReportMetric(float64(last.heap)/float64(snaps[0].heap), "heap-500/50")
	b.ReportMetric(mb(last.heap), "heap-500-MB")
}

// settledMemory waits for the work a finished run leaves in the background (gate wakers, log
// flushes: at most a few seconds), collects garbage twice and returns the live heap, the
// process's RSS and the goroutine count. It writes a heap profile when asked to.
func settledMemory(b *testing.B, profile string) (heap, rss uint64, goroutines int) {
	time.Sleep(5 * time.Second)
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if dir := os.Getenv("HORIZON_BENCH_HEAP_PROFILES"); dir != "" {
		f, err := os.Create(filepath.Join(dir, profile))
		if err != nil {
			b.Fatal(err)
		}
		_ = pprof.WriteHeapProfile(f)
		_ = f.Close()
	}
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			rss = kb * 1024
		}
	}
	return m.HeapAlloc, rss, runtime.NumGoroutine()
}

// Templates and modules of the benchmarks. REPO is replaced by the test repository's URL.

const stepModule = `variable "horizon_name" { type = string }
resource "terraform_data" "step" { input = var.horizon_name }
output "name" { value = terraform_data.step.output }
`

const buildModule = `variable "horizon_name" { type = string }
resource "terraform_data" "build" {
  input = var.horizon_name
  provisioner "local-exec" { command = "sleep 0.2" }
}
output "name" { value = terraform_data.build.output }
`

func phasesTemplate(phases int) string {
	var s strings.Builder
	fmt.Fprintf(&s, "name: bench-phases-%d\nphases:\n", phases)
	for i := range phases {
		fmt.Fprintf(&s, "  - name: p%d\n    jobs:\n      - name: j%d\n        source: { repo: REPO, branch: main, path: jobs/step }\n", i, i)
	}
	return s.String()
}

func buildsTemplate(n int) string {
	return fmt.Sprintf(`name: bench-builds
phases:
  - name: build
    jobs:
      - name: build
        source: { repo: REPO, branch: main, path: jobs/build }
        machine: true
        executions: { multiple: true, min: 1, max: %d }
`, n)
}

// publishFiles commits files to a new git repository and registers def (with REPO standing
// for the repository's URL) as a template; it returns the template's id.
func (e *engine) publishFiles(def string, files map[string]string) string {
	repo := testkit.NewGitRepo(e.t)
	repo.Commit(files)
	r := e.API.Do("POST", "/v1/templates", apitest.Req{Body: map[string]any{"definition": strings.ReplaceAll(def, "REPO", repo.URL)}})
	if r.Status != 201 {
		e.t.Fatalf("template: %d %s", r.Status, r.Body)
	}
	return r.Map()["id"].(string)
}

// lab makes an environment of the sandbox's server and a network of its own with n addresses
// (10.99.k.10 onwards: no VM is started, so they are never dialled), for one stack of n
// machines; it returns the environment's id and the addresses'.
func (e *engine) lab(k, n int) (string, []string) {
	net := e.API.Do("POST", "/v1/networks", apitest.Req{Body: map[string]any{"name": fmt.Sprintf("bench-%d", k),
		"cidr": fmt.Sprintf("10.99.%d.0/24", k), "gateway": fmt.Sprintf("10.99.%d.1", k), "bridge": "vmbr0"}})
	if net.Status != 201 {
		e.t.Fatalf("network: %d %s", net.Status, net.Body)
	}
	netID := net.Map()["id"].(string)
	var addrs []string
	for i := range n {
		a := e.API.Do("POST", "/v1/networks/"+netID+"/addresses", apitest.Req{Body: map[string]any{"name": fmt.Sprintf("vm-%d", i),
			"ip": fmt.Sprintf("10.99.%d.%d", k, 10+i)}})
		if a.Status != 201 {
			e.t.Fatalf("address: %d %s", a.Status, a.Body)
		}
		addrs = append(addrs, a.Map()["id"].(string))
	}
	env := e.API.Do("POST", "/v1/environments", apitest.Req{Body: map[string]any{"name": fmt.Sprintf("bench-%d", k),
		"network_ids": []string{netID}, "proxmox_server_ids": []string{e.Server}}})
	if env.Status != 201 {
		e.t.Fatalf("environment: %d %s", env.Status, env.Body)
	}
	return env.Map()["id"].(string), addrs
}

func (e *engine) createStack(name, env, tmpl string, jobs map[string]any) string {
	r := e.API.Do("POST", "/v1/stacks", apitest.Req{Token: e.Member, Body: map[string]any{"team_id": e.Team, "name": name,
		"environment_id": env, "template_id": tmpl, "template_version": 1, "jobs": jobs}})
	if r.Status != 201 {
		e.t.Fatalf("stack: %d %s", r.Status, r.Body)
	}
	return r.Map()["id"].(string)
}

func (e *engine) isDeployed(stack string) bool {
	var state string
	if err := e.API.DB.QueryRow(context.Background(), `SELECT state FROM stacks WHERE id = $1`, stack).Scan(&state); err != nil {
		e.t.Fatal(err)
	}
	return state == "deployed"
}

// deployAndWait deploys a stack and waits for its run to succeed; it returns the run's id.
func (e *engine) deployAndWait(stack string, within time.Duration) uuid.UUID {
	r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member})
	if r.Status != 202 {
		e.t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	return e.waitRun(uuid.MustParse(r.Map()["id"].(string)), within)
}

func (e *engine) runAgainAndWait(stack, job string, index int, within time.Duration) uuid.UUID {
	r := e.API.Do("POST", fmt.Sprintf("/v1/stacks/%s/jobs/%s/executions/%d/run-again", stack, job, index), apitest.Req{Token: e.Member})
	if r.Status != 202 {
		e.t.Fatalf("run again: %d %s", r.Status, r.Body)
	}
	return e.waitRun(uuid.MustParse(r.Map()["id"].(string)), within)
}

// waitRun polls the run's row (one indexed read every 50 ms: lighter than the API) until the
// run has succeeded.
func (e *engine) waitRun(run uuid.UUID, within time.Duration) uuid.UUID {
	deadline := time.Now().Add(within)
	for {
		var state string
		if err := e.API.DB.QueryRow(context.Background(), `SELECT state FROM runs WHERE id = $1`, run).Scan(&state); err != nil {
			e.t.Fatal(err)
		}
		switch {
		case state == "succeeded":
			return run
		case horizon.RunState(state).Terminal():
			e.t.Fatalf("run %s ended %s", run, state)
		case time.Now().After(deadline):
			e.t.Fatalf("run %s still %s after %s", run, state, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stepTimes is one step as Postgres recorded it, and the Terraform time tfclock attributed to it.
type stepTimes struct {
	id                       uuid.UUID
	stack                    uuid.UUID
	job, node                string
	index                    int
	ready, started, finished time.Time
	terraform, underGate     time.Duration
	cpu                      time.Duration // of its Terraform processes and their plugins
	applyEnd                 time.Time
	// applyCalled is when a machine build called terraform apply (its log's line saying the
	// cloud-init was uploaded, written right before), applyLaunched when tfclock's main began
	// and applyStart when tfclock started the real binary; zero for a build with no such line.
	applyCalled, applyLaunched, applyStart time.Time
	bySubcommand                           map[string]time.Duration
	calls                                  map[string]int
}

// stepsOf returns a run's steps in order of position.
func (e *engine) stepsOf(run uuid.UUID) []stepTimes {
	rows, err := e.API.DB.Query(context.Background(), `SELECT s.id, r.stack_id, s.job, COALESCE(s.node, ''), COALESCE(s.execution_index, 0),
		s.ready_at, s.started_at, s.finished_at,
		(SELECT max(l.at) FROM log_lines l WHERE l.run_id = s.run_id AND l.step_id = s.id AND l.text LIKE 'cloud-init uploaded to %')
		FROM steps s JOIN runs r ON r.id = s.run_id WHERE s.run_id = $1 ORDER BY s.position`, run)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []stepTimes
	for rows.Next() {
		var s stepTimes
		var called *time.Time
		if err := rows.Scan(&s.id, &s.stack, &s.job, &s.node, &s.index, &s.ready, &s.started, &s.finished, &called); err != nil {
			e.t.Fatal(err)
		}
		if called != nil {
			s.applyCalled = *called
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

type makespanResult struct {
	makespan, lbGate, lbTF, lbNominal time.Duration
	lbCPU, meanCPU                    time.Duration
	gaps                              []time.Duration
	overlaps, outOfOrder              int
	meanHeld, meanTF, meanAfter       time.Duration
	// horizonHeld is, per build, the gate-held time that is not a Terraform process's:
	// Horizon's part (work dir, waits for locks, cloud-init upload, database). It splits into
	// horizonOwn (step started → terraform apply called) and launch (apply called → tfclock
	// started the real binary: the exec of tfclock, the benchmark's wrapper, and its fork of
	// Terraform, whose own exec is inside Terraform's interval).
	horizonHeld, horizonOwn, launch []time.Duration
	launchExec                      []time.Duration // of launch: apply called → tfclock's main began
	head, tail                      time.Duration
	// firstInit is the terraform init of the module (its seed) that ran before the first build
	// could start: no build applies before it, so it adds to the gate's bound.
	firstInit time.Duration
	// headParts splits head: deploy accepted → first step ready (the run's first advance) →
	// the init began → it ended → the first build started (the middle two are zero when no
	// init ran on the way).
	headParts   [4]time.Duration
	tfBreakdown string
	processes   float64
	// busiest splits the makespan on the node whose builds held its gate longest (the gate's
	// bound): lead (the first run accepted → its first build started), held (its builds'
	// gate-held time, the bound), handOffs (the sum of the gaps between its builds) and trail
	// (its last build's apply ended → the last run finished); they add up to the makespan.
	busiest struct{ lead, held, handOffs, trail time.Duration }
	// gapsAt pairs each gap with when it began, from the first run accepted.
	gapsAt [][2]time.Duration
}

// makespanOf measures runs made at once: from the first accepted to the last finished.
func makespanOf(b *testing.B, e *engine, clock *tfClock, runs ...uuid.UUID) makespanResult {
	var created, finished time.Time
	if err := e.API.DB.QueryRow(context.Background(), `SELECT min(created_at), max(finished_at) FROM runs WHERE id = ANY($1)`, runs).Scan(&created, &finished); err != nil {
		b.Fatal(err)
	}
	var all []stepTimes
	for _, run := range runs {
		all = append(all, e.stepsOf(run)...)
	}
	steps := clock.attribute(b, all)
	r := makespanResult{makespan: finished.Sub(created)}
	byNode := map[string][]stepTimes{}
	firstStart, lastApply := finished, created
	for _, s := range steps {
		byNode[s.node] = append(byNode[s.node], s)
		r.meanHeld += s.applyEnd.Sub(s.started) / time.Duration(len(steps))
		r.meanTF += s.underGate / time.Duration(len(steps))
		r.horizonHeld = append(r.horizonHeld, s.applyEnd.Sub(s.started)-s.underGate)
		if !s.applyCalled.IsZero() && !s.applyStart.IsZero() {
			r.horizonOwn = append(r.horizonOwn, s.applyCalled.Sub(s.started))
			r.launch = append(r.launch, s.applyStart.Sub(s.applyCalled))
			r.launchExec = append(r.launchExec, s.applyLaunched.Sub(s.applyCalled))
		}
		r.meanAfter += s.finished.Sub(s.applyEnd) / time.Duration(len(steps))
		r.meanCPU += s.cpu / time.Duration(len(steps))
		r.lbCPU += s.cpu / time.Duration(runtime.GOMAXPROCS(0))
		if s.started.Before(firstStart) {
			firstStart = s.started
		}
		if s.applyEnd.After(lastApply) {
			lastApply = s.applyEnd
		}
	}
	r.head, r.tail = firstStart.Sub(created), finished.Sub(lastApply)
	firstReady := finished
	for _, s := range steps {
		firstReady = earlier(firstReady, s.ready)
	}
	var initStart, initEnd time.Time
	for _, run := range clock.runs(b) {
		if run.cmd == "init" && run.start.After(created) && run.end.Before(firstStart) && run.end.Sub(run.start) > r.firstInit {
			r.firstInit, initStart, initEnd = run.end.Sub(run.start), run.start, run.end
		}
	}
	r.headParts = [4]time.Duration{firstReady.Sub(created), 0, 0, firstStart.Sub(firstReady)}
	if !initStart.IsZero() {
		r.headParts = [4]time.Duration{firstReady.Sub(created), initStart.Sub(firstReady), initEnd.Sub(initStart), firstStart.Sub(initEnd)}
	}
	most := 0
	for _, ss := range byNode {
		slices.SortFunc(ss, func(a, b stepTimes) int { return a.started.Compare(b.started) })
		var held, tf time.Duration
		for i, s := range ss {
			held += s.applyEnd.Sub(s.started)
			tf += s.underGate
			if i > 0 {
				gap := s.started.Sub(ss[i-1].applyEnd)
				if gap < 0 {
					r.overlaps++
				}
				r.gaps = append(r.gaps, gap)
				r.gapsAt = append(r.gapsAt, [2]time.Duration{ss[i-1].applyEnd.Sub(created), gap})
				// The gate orders a node's line by ready time, then by task id.
				prev := ss[i-1]
				if s.ready.Before(prev.ready) || s.ready.Equal(prev.ready) && queue.StepTaskID(s.id, 1) < queue.StepTaskID(prev.id, 1) {
					r.outOfOrder++
				}
			}
		}
		if held > r.lbGate {
			last := ss[len(ss)-1].applyEnd
			r.busiest.lead, r.busiest.held, r.busiest.trail = ss[0].started.Sub(created), held, finished.Sub(last)
			r.busiest.handOffs = last.Sub(ss[0].started) - held
		}
		r.lbGate, r.lbTF = max(r.lbGate, held), max(r.lbTF, tf)
		most = max(most, len(ss))
	}
	r.lbNominal = time.Duration(most) * 200 * time.Millisecond
	r.tfBreakdown = clock.breakdown(steps)
	r.processes = processesPerStep(steps)
	return r
}

// tfClock is a tfclock binary standing in for Terraform, and its log.
type tfClock struct {
	dir, bin string
}

// newTFClock builds deploy/bench/tfclock in a temporary directory, in front of the Terraform
// binary the tests use.
func newTFClock(b *testing.B) *tfClock {
	real, err := terraform.FindBinary(context.Background(), os.Getenv("HORIZON_TERRAFORM_BIN"))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	c := &tfClock{dir: dir, bin: filepath.Join(dir, "terraform")}
	if out, err := exec.Command("go", "build", "-o", c.bin, "horizon/deploy/bench/tfclock").CombinedOutput(); err != nil {
		b.Fatalf("build tfclock: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "real"), []byte(real.Path), 0o644); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("Terraform: %s %s (through tfclock); GOMAXPROCS %d; %s\n", real.Path, real.Version, runtime.GOMAXPROCS(0), cpuModel())
	return c
}

// wrapperCost is what tfclock itself adds to each Terraform process it stands in for, as p50s
// of a control run in the benchmark's own run: n starts of `true` the way terraform-exec starts
// Terraform (os/exec: Start, then Wait) through a copy of tfclock, each after a bare start of
// `true`. front is Start called → tfclock forked the real binary, back is the real binary
// exited → Wait returned, total is the wrapped start's wall time less the bare one's. The real
// binary's own fork and exec are inside Terraform's interval (tfclock dates them), so without
// the wrapper none of this would be paid: the benchmarks print Horizon's figures with and less it.
type wrapperCost struct{ front, back, total time.Duration }

func (c *tfClock) wrapperCost(b *testing.B, n int) wrapperCost {
	bin, err := os.ReadFile(c.bin)
	if err != nil {
		b.Fatal(err)
	}
	trueBin, err := exec.LookPath("true")
	if err != nil {
		b.Fatal(err)
	}
	control := &tfClock{dir: b.TempDir()}
	control.bin = filepath.Join(control.dir, "terraform")
	if err := os.WriteFile(control.bin, bin, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(control.dir, "real"), []byte(trueBin), 0o644); err != nil {
		b.Fatal(err)
	}
	var front, back, total []time.Duration
	for range n {
		t0 := time.Now()
		if err := exec.Command(trueBin).Run(); err != nil {
			b.Fatal(err)
		}
		bare := time.Since(t0)
		t0 = time.Now()
		if err := exec.Command(control.bin, "version").Run(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		runs := control.runs(b)
		r := runs[len(runs)-1]
		front, back, total = append(front, r.start.Sub(t0)), append(back, t1.Sub(r.end)), append(total, t1.Sub(t0)-bare)
	}
	return wrapperCost{front: pct(front, .5), back: pct(back, .5), total: pct(total, .5)}
}

func (w wrapperCost) String() string {
	return fmt.Sprintf("p50 %s per process (exec and start %s, exit %s)", msString(w.total), msString(w.front), msString(w.back))
}

type tfRun struct {
	dir, cmd   string
	launched   time.Time // tfclock's main began
	start, end time.Time // the real binary's
	cpu        time.Duration
}

func (c *tfClock) runs(b *testing.B) []tfRun {
	data, err := os.ReadFile(filepath.Join(c.dir, "clock.log"))
	if err != nil {
		b.Fatal(err)
	}
	var out []tfRun
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 7 {
			b.Fatalf("tfclock line %q", line)
		}
		launched, _ := strconv.ParseInt(f[2], 10, 64)
		start, _ := strconv.ParseInt(f[3], 10, 64)
		end, _ := strconv.ParseInt(f[4], 10, 64)
		cpu, _ := strconv.ParseInt(f[6], 10, 64)
		out = append(out, tfRun{dir: f[0], cmd: f[1], launched: time.Unix(0, launched), start: time.Unix(0, start), end: time.Unix(0, end),
			cpu: time.Duration(cpu)})
	}
	return out
}

// attribute gives each step the Terraform processes it ran: those in a work dir of the step's
// workspace that started after the step was ready (a build prepares its work dir while it
// waits for its node) and before it finished, including those of attempts that prepared and
// were then handed back. underGate is their time between the step's start (its node's gate
// taken) and the end of its apply (the gate released).
func (c *tfClock) attribute(b *testing.B, steps []stepTimes) []stepTimes {
	runs := c.runs(b)
	for i := range steps {
		s := &steps[i]
		s.bySubcommand, s.calls = map[string]time.Duration{}, map[string]int{}
		ws := horizon.Workspace(s.stack, s.job, s.index)
		var mine []tfRun
		for _, r := range runs {
			// A temporary work dir is <workspace>-<random>, a kept one <workspace> (warm dirs).
			inWorkspace := strings.Contains(r.dir, "/"+ws+"-") || strings.Contains(r.dir, "/"+ws+"/")
			if inWorkspace && !r.start.Before(s.ready) && !r.start.After(s.finished) {
				mine = append(mine, r)
			}
		}
		for _, r := range mine {
			if r.cmd == "apply" && r.end.After(s.applyEnd) {
				s.applyEnd, s.applyLaunched, s.applyStart = r.end, r.launched, r.start
			}
		}
		if s.applyEnd.IsZero() {
			b.Fatalf("step %s (%s): no terraform apply found in the tfclock log", s.id, ws)
		}
		for _, r := range mine {
			d := r.end.Sub(r.start)
			s.terraform += d
			s.bySubcommand[r.cmd] += d
			s.calls[r.cmd]++
			s.cpu += r.cpu
			if from, to := later(r.start, s.started), earlier(r.end, s.applyEnd); to.After(from) {
				s.underGate += to.Sub(from)
			}
		}
	}
	return steps
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// processesPerStep is the mean number of Terraform processes a step ran.
func processesPerStep(steps []stepTimes) float64 {
	n := 0
	for _, s := range steps {
		for _, c := range s.calls {
			n += c
		}
	}
	return float64(n) / float64(len(steps))
}

// breakdown is the mean Terraform time per step by subcommand, with the mean number of calls
// when it is not one.
func (c *tfClock) breakdown(steps []stepTimes) string {
	sums, calls := map[string]time.Duration{}, map[string]int{}
	for _, s := range steps {
		for k, d := range s.bySubcommand {
			sums[k] += d
			calls[k] += s.calls[k]
		}
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(sums)) {
		part := fmt.Sprintf("%s %s", k, (sums[k] / time.Duration(len(steps))).Round(time.Millisecond))
		if calls[k] != len(steps) {
			part += fmt.Sprintf(" (%.2f calls)", float64(calls[k])/float64(len(steps)))
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// chain is the control of the transition benchmark: a bare Asynq server with the workers'
// settings, and a three-task chain over its queues.
type chain struct {
	client *asynq.Client
	queues queue.Queues
	done   chan time.Duration
}

type chainPayload struct {
	T0 int64 `json:"t0"`
}

func startChain(b *testing.B, e *engine) *chain {
	c := &chain{client: asynq.NewClientFromRedisClient(e.API.Deps.Redis), queues: queue.Names(e.API.Deps.Namespace + "-bare"), done: make(chan time.Duration, 1)}
	b.Cleanup(func() { _ = c.client.Close() })
	srv := asynq.NewServerFromRedisClient(e.API.Deps.Redis, asynq.Config{Concurrency: benchConcurrency, Queues: c.queues.Weights(),
		TaskCheckInterval: worker.TaskCheckInterval, DelayedTaskCheckInterval: worker.DelayedTaskCheckInterval,
		Logger: quietLogger{}, LogLevel: asynq.ErrorLevel})
	mux := asynq.NewServeMux()
	// a plays the step that finishes, b run:advance, c the next step; the options are those of
	// queue.NewStepRun and queue.NewRunAdvance.
	mux.HandleFunc("bare:a", func(ctx context.Context, t *asynq.Task) error {
		p, _ := json.Marshal(chainPayload{T0: time.Now().UnixNano()})
		_, err := c.client.EnqueueContext(ctx, asynq.NewTask("bare:b", p), asynq.Queue(c.queues.Control), asynq.MaxRetry(10), asynq.Timeout(time.Minute))
		return err
	})
	mux.HandleFunc("bare:b", func(ctx context.Context, t *asynq.Task) error {
		_, err := c.client.EnqueueContext(ctx, asynq.NewTask("bare:c", t.Payload()), asynq.Queue(c.queues.Build), asynq.TaskID(uuid.NewString()),
			asynq.MaxRetry(5), asynq.Timeout(queue.StepTimeout), asynq.Retention(time.Hour))
		return err
	})
	mux.HandleFunc("bare:c", func(ctx context.Context, t *asynq.Task) error {
		now := time.Now()
		var p chainPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil {
			return err
		}
		c.done <- now.Sub(time.Unix(0, p.T0))
		return nil
	})
	if err := srv.Start(mux); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Shutdown)
	return c
}

// sample runs one chain after a random pause, so that it meets the server's polling at a random
// phase, as a step that ends after a Terraform run does.
func (c *chain) sample(b *testing.B) time.Duration {
	time.Sleep(time.Duration(100+rand.IntN(400)) * time.Millisecond)
	if _, err := c.client.Enqueue(asynq.NewTask("bare:a", nil), asynq.Queue(c.queues.Build), asynq.TaskID(uuid.NewString()),
		asynq.MaxRetry(5), asynq.Timeout(queue.StepTimeout), asynq.Retention(time.Hour)); err != nil {
		b.Fatal(err)
	}
	select {
	case d := <-c.done:
		return d
	case <-time.After(30 * time.Second):
		b.Fatal("the bare chain did not finish in 30 s")
		return 0
	}
}

type quietLogger struct{}

func (quietLogger) Debug(...any)      {}
func (quietLogger) Info(...any)       {}
func (quietLogger) Warn(...any)       {}
func (quietLogger) Error(...any)      {}
func (quietLogger) Fatal(args ...any) { panic(fmt.Sprint(args...)) }

func table() *tabwriter.Writer { return tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0) }

func row(w *tabwriter.Writer, name string, ds []time.Duration, ratio, goal string) {
	fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", name, len(ds), msString(pct(ds, .5)), msString(pct(ds, .99)), msString(slices.Max(ds)), ratio, goal)
}

// pct is the nearest-rank q-quantile.
func pct(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	return s[max(0, int(math.Ceil(q*float64(len(s))))-1)]
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }
func ms(d time.Duration) float64       { return float64(d) / float64(time.Millisecond) }
func msString(d time.Duration) string  { return fmt.Sprintf("%.1f ms", ms(d)) }
func mb(n uint64) float64              { return float64(n) / (1 << 20) }

// loadAvg is the machine's load average (1, 5, 15 min), as uptime prints it.
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "model name"); ok {
			return fmt.Sprintf("%d × %s", runtime.NumCPU(), strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":")))
		}
	}
	return fmt.Sprintf("%d CPUs", runtime.NumCPU())
}
