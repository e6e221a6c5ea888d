// Command bench runs Horizon's benchmarks: each drives the real code on this machine and prints
// its figures side by side with the bare library doing the same work in the same run, so that
// the ratios mean something on any hardware.
//
//	go run ./deploy/bench [api]      # API throughput and latency vs bare Fiber handlers
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
		"api": benchAPI,
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
