package notify_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"horizon/shared/horizon"
	"horizon/shared/notify"
	"horizon/shared/testkit"
	"horizon/workers/worker/workertest"
)

// holder is a destination on loopback that, while holding, keeps every request open until it
// is released or the sender goes away; it counts the messages it answered 200, by path (one per
// subscription) and webhook-id (the event).
type holder struct {
	*httptest.Server
	holding atomic.Bool
	held    atomic.Int64 // requests waiting now
	release chan struct{}
	mu      sync.Mutex
	got     map[string]int
}

func newHolder(t *testing.T) *holder {
	t.Helper()
	h := &holder{release: make(chan struct{}), got: map[string]int{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if h.holding.Load() {
			h.held.Add(1)
			select {
			case <-h.release:
				h.held.Add(-1)
			case <-req.Context().Done(): // the sender died: nothing was answered
				h.held.Add(-1)
				return
			}
		}
		h.mu.Lock()
		h.got[req.URL.Path+" "+req.Header.Get("webhook-id")]++
		h.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(func() { h.Release(); h.Close() })
	return h
}

// Release answers every held request and stops holding.
func (h *holder) Release() {
	if h.holding.Swap(false) {
		close(h.release)
	}
}

// answered returns how many times the message of key ("path webhook-id") was answered.
func (h *holder) answered(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got[key]
}

// TestWorkerKilledWithDeliveriesPendingLosesNone: a workers process is killed (SIGKILL) while
// it holds deliveries in flight, with more claimed and queued behind them; a second process
// is started. Every event reaches every subscription at least once, and every delivery ends
// delivered: none is lost with the dead process. The lease is a few seconds
// (HORIZON_WEBHOOK_LEASE), so the claims the dead process held lapse within the test.
func TestWorkerKilledWithDeliveriesPendingLosesNone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	red := e.api.NewTeam("red")
	dest := newHolder(t)
	const subs, events = 3, 40
	paths := map[string]string{} // subscription id → its destination's path
	for i := range subs {
		path := fmt.Sprintf("/hooks/%d", i)
		id, _ := e.subscribe(t, red, "standard", dest.URL+path, "run.finished")
		paths[id] = path
	}
	stack := e.api.NewStack(red, "web")
	for range events {
		e.api.FinishRun(e.api.NewRun(stack), horizon.RunSucceeded)
	}
	want := map[string]bool{} // "path webhook-id" of every delivery the events made
	rows, err := e.api.DB.Query(context.Background(), `SELECT webhook_id, event_id FROM webhook_deliveries WHERE event_type = $1`,
		string(notify.RunFinished))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var hook, event string
		if err := rows.Scan(&hook, &event); err != nil {
			t.Fatal(err)
		}
		want[paths[hook]+" msg_"+event] = true // a standard message's webhook-id
	}
	if rows.Err() != nil || len(want) != subs*events {
		t.Fatalf("%d deliveries made (%v), want %d", len(want), rows.Err(), subs*events)
	}

	dest.holding.Store(true)
	bin := workertest.Build(t)
	cfg := workertest.ProcessConfig{DatabaseURL: e.api.DB.Config().ConnString(), Namespace: e.api.Deps.Namespace, SecretKey: e.api.SecretKey,
		Env: []string{"HORIZON_WEBHOOK_ALLOW_CIDRS=" + netip.MustParsePrefix("127.0.0.1/32").String(),
			"HORIZON_WEBHOOK_TIMEOUT=10s", "HORIZON_WEBHOOK_LEASE=15s"}}
	first := workertest.Process(t, bin, cfg)
	testkit.Eventually(t, 3*time.Minute, "the first workers process did not get deliveries going", func() bool {
		return dest.held.Load() >= 5
	})
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	killed := time.Now()
	var pending int
	if err := e.api.DB.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'`).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed with %d deliveries pending", pending)
	if pending == 0 {
		t.Fatal("nothing was pending when the process died")
	}
	dest.Release()

	workertest.Process(t, bin, cfg)
	var missing, open int
	testkit.Eventually(t, 5*time.Minute, "deliveries were lost with the killed process", func() bool {
		missing = 0
		for key := range want {
			if dest.answered(key) == 0 {
				missing++
			}
		}
		if err := e.api.DB.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries WHERE state <> 'delivered'`).Scan(&open); err != nil {
			t.Fatal(err)
		}
		if missing+open > 0 {
			t.Logf("%d messages not received yet, %d deliveries not delivered", missing, open)
		}
		return missing+open == 0
	})
	t.Logf("kill to every delivery answered: %s", time.Since(killed).Round(time.Second))
}
