package main

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// request builds the i-th request of a load run.
type request func(i int64, req *fasthttp.Request)

// result is what one load run measured.
type result struct {
	rps      float64
	n        int64 // requests answered
	p50, p99 time.Duration
	errors   int64
}

func (r result) String() string {
	return fmt.Sprintf("%8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  errors %d", r.rps,
		float64(r.p50.Microseconds())/1000, float64(r.p99.Microseconds())/1000, r.errors)
}

// closedLoop keeps conns requests in flight for d and measures throughput and latency.
func closedLoop(addr string, conns int, d time.Duration, build request) result {
	client := &fasthttp.HostClient{Addr: addr, MaxConns: conns}
	var n atomic.Int64
	var errs atomic.Int64
	lat := make([][]time.Duration, conns)
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(res)
			for time.Now().Before(deadline) {
				i := n.Add(1)
				req.Reset()
				build(i, req)
				req.SetHost(addr) // after build: SetRequestURI with a bare path clears the host
				t0 := time.Now()
				if err := client.Do(req, res); err != nil || res.StatusCode() >= 300 {
					if errs.Add(1) == 1 {
						fmt.Printf("  first error: %v %d %.200s\n", err, res.StatusCode(), res.Body())
					}
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}(w)
	}
	wg.Wait()
	return summarize(lat, time.Since(start), errs.Load())
}

// openLoop sends rate requests per second for d, on a schedule that does not wait for answers
// (so queueing shows in the latency), from a fixed pool of senders, and measures latency from
// each request's scheduled time.
func openLoop(addr string, rate float64, d time.Duration, build request) result {
	client := &fasthttp.HostClient{Addr: addr, MaxConns: 1024, MaxConnWaitTimeout: 5 * time.Second}
	const senders = 256
	due := make(chan time.Time, senders)
	var errs atomic.Int64
	lat := make([][]time.Duration, senders)
	var n atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < senders; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(res)
			for at := range due {
				req.Reset()
				build(n.Add(1), req)
				req.SetHost(addr)
				if err := client.Do(req, res); err != nil || res.StatusCode() >= 300 {
					errs.Add(1)
				}
				lat[w] = append(lat[w], time.Since(at))
			}
		}(w)
	}
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	for next := start; next.Sub(start) < d; next = next.Add(interval) {
		if wait := time.Until(next); wait > 0 {
			time.Sleep(wait)
		}
		due <- next
	}
	close(due)
	wg.Wait()
	return summarize(lat, time.Since(start), errs.Load())
}

func summarize(per [][]time.Duration, elapsed time.Duration, errs int64) result {
	var all []time.Duration
	for _, l := range per {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	r := result{rps: float64(len(all)) / elapsed.Seconds(), n: int64(len(all)), errors: errs}
	if len(all) > 0 {
		r.p50 = all[len(all)/2]
		r.p99 = all[len(all)*99/100]
	}
	return r
}
