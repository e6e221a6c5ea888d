// Command bench runs Horizon's benchmarks: each drives the real code on this machine and prints
// its figures side by side with the bare library doing the same work in the same run, so that
// the ratios mean something on any hardware.
//
//	go run ./deploy/bench [api]      # API throughput and latency vs bare Fiber handlers
//	go run ./deploy/bench stack      # a stack's detail: round trips, saturation, p99 at half of it
//	go run ./deploy/bench scale      # stack list, detail and reconcile pass: 10 000 stacks vs 100
//	go run ./deploy/bench quota      # a deploy preflight with quotas on vs off, 1 000 active executions
//
// They use the local Postgres and Redis (HORIZON_BENCH_DATABASE_URL, an admin connection that
// may create databases, and HORIZON_BENCH_REDIS_URL), each in a database of its own that is
// dropped afterwards (HORIZON_BENCH_KEEP_DB=1 keeps it, e.g. for EXPLAIN). The engine benchmarks
// (phase transitions, makespan, worker memory) need the workers, the sandbox and Terraform in
// one process and are Go benchmarks in workers/worker (bench_test.go); tfclock, in front of
// Terraform there, times Terraform's processes. deploy/README.md lists every benchmark, how to
// run it and what it prints.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
)

func main() {
	which := "api"
	if len(os.Args) > 1 {
		which = os.Args[1]
	}
	benches := map[string]func(context.Context) error{
		"api":   benchAPI,
		"stack": benchStack,
		"scale": benchScale,
		"drift": benchDrift,
		"quota": benchQuota,
	}
	run, ok := benches[which]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown benchmark %q\n", which)
		os.Exit(2)
	}
	// HORIZON_BENCH_CPUPROFILE=file writes a CPU profile of the whole run (servers and load).
	if path := os.Getenv("HORIZON_BENCH_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}
