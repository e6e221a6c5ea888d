package notify_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"horizon/shared/horizon"
	"horizon/shared/testkit"
)

// BenchmarkWebhooks measures, in one run against a receiver on loopback that answers at once:
//
//   - a deploy's latency (accepted → its run finished) with 40 enabled subscriptions to its run
//     results vs none, in alternating rounds of single deploys: the ratio of the
//     medians (goal ≤ 1.05) — deliveries are made after the run's commit and sent by their own
//     workers, so they should add nothing a deploy waits for;
//   - deliveries per second: 25 runs ending back to back with the 40 subscriptions make 1 000
//     deliveries, from the first delivery made to the last answered; beside it the bare rate,
//     1 000 signed POSTs of a message of the same size sent by net/http with the workers'
//     delivery concurrency (20) to the same receiver.
//
// 40 is the most subscriptions one event can reach: a team may have 20 (HCP's limit, which
// Horizon keeps), and admins 20 global ones.
//
//	go test ./workers/notify -run '^$' -bench Webhooks -benchtime 1x
func BenchmarkWebhooks(b *testing.B) {
	lab := newDeployLab(b, 0)
	var mu sync.Mutex
	var got int
	var size int
	dest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got++
		size = max(size, len(body))
		mu.Unlock()
	}))
	b.Cleanup(dest.Close)
	const subs, rounds, burst = 40, 10, 25
	for i := range subs {
		lab.subscribe(b, fmt.Sprintf("bot-%d", i), fmt.Sprintf("%s/hook/%d", dest.URL, i), i%2 == 0)
	}
	ctx := context.Background()
	enable := func(on bool) {
		if _, err := lab.API.DB.Exec(ctx, `UPDATE webhooks SET enabled = $1`, on); err != nil {
			b.Fatal(err)
		}
	}
	latency := func(run string) time.Duration {
		var d time.Duration
		if err := lab.API.DB.QueryRow(ctx, `SELECT finished_at - created_at FROM runs WHERE id = $1`, run).Scan(&d); err != nil {
			b.Fatal(err)
		}
		return d
	}
	load := loadAvg()
	var with, without []time.Duration
	var rate, bare float64
	for b.Loop() {
		for i := range rounds * 2 {
			on := i%2 == 0
			enable(on)
			run := lab.deploy(b, lab.stacks(b, fmt.Sprintf("latency-%d", i), 1), 5*time.Minute)[0]
			if on {
				with = append(with, latency(run))
			} else {
				without = append(without, latency(run))
			}
		}
		// Let the deliveries of the latency rounds drain before the burst is timed.
		drain(b, lab)
		enable(true)
		// The burst's events are made as fast as runs can end (their rows written as a run's end
		// writes them), so that the rate measured is the deliveries', not the deploys'.
		stack := lab.API.NewStack(uuid.MustParse(lab.Team), "burst")
		var since time.Time
		if err := lab.API.DB.QueryRow(ctx, `SELECT now()`).Scan(&since); err != nil {
			b.Fatal(err)
		}
		for range burst {
			lab.API.FinishRun(lab.API.NewRun(stack), horizon.RunSucceeded)
		}
		drain(b, lab)
		var n int
		var span time.Duration
		if err := lab.API.DB.QueryRow(ctx, `SELECT count(*), max(last_at) - min(created_at) FROM webhook_deliveries WHERE created_at >= $1`,
			since).Scan(&n, &span); err != nil {
			b.Fatal(err)
		}
		if n != subs*burst {
			b.Fatalf("%d deliveries of the burst, want %d", n, subs*burst)
		}
		rate = float64(n) / span.Seconds()
		bare = bareRate(b, dest.URL, subs*burst, size)
	}
	w := os.Stdout
	fmt.Fprintf(w, "\nWebhooks: %d subscriptions to a loopback receiver; load %s → %s\n", subs, load, loadAvg())
	fmt.Fprintf(w, "deploy latency (accepted → finished), %d single deploys each way: with p50 %s, without p50 %s: ratio %.3f (goal ≤ 1.05); p90 %s vs %s\n",
		rounds, pct(with, .5), pct(without, .5), float64(pct(with, .5))/float64(pct(without, .5)), pct(with, .9), pct(without, .9))
	fmt.Fprintf(w, "deliveries: %d in %.0f/s (made → answered); bare signed POSTs at the same concurrency %.0f/s: ratio %.2f\n",
		subs*burst, rate, bare, rate/bare)
	b.ReportMetric(float64(pct(with, .5))/float64(pct(without, .5)), "deploy-latency-ratio")
	b.ReportMetric(rate, "deliveries/s")
}

// drain waits until no delivery is pending.
func drain(b *testing.B, lab *deployLab) {
	testkit.Eventually(b, 5*time.Minute, "deliveries still pending", func() bool {
		var pending int
		_ = lab.API.DB.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'`).Scan(&pending)
		return pending == 0
	})
}

// bareRate sends n signed POSTs of size bytes to url, 20 at a time, with net/http alone, and
// returns how many it sent per second.
func bareRate(b *testing.B, url string, n, size int) float64 {
	body := bytes.Repeat([]byte("x"), size)
	key := []byte("a-secret-of-thirty-two-bytes-len")
	work := make(chan int, n)
	for i := range n {
		work <- i
	}
	close(work)
	start := time.Now()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for i := range work {
				id, ts := fmt.Sprintf("msg_%d", i), fmt.Sprint(time.Now().Unix())
				mac := hmac.New(sha256.New, key)
				mac.Write([]byte(id + "." + ts + "." + string(body)))
				req, _ := http.NewRequest("POST", url+"/bare", bytes.NewReader(body))
				req.Header.Set("webhook-id", id)
				req.Header.Set("webhook-timestamp", ts)
				req.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// pct is the nearest-rank q-quantile.
func pct(ds []time.Duration, q float64) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	return s[max(0, int(float64(len(s))*q+0.999999)-1)]
}

func loadAvg() string {
	data, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(data))[:3], " ")
}
