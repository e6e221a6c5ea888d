package notify_test

import (
	"context"
	"testing"
	"time"

	"horizon/functions/apitest"
	"horizon/shared/testkit"
)

// TestDeploysDoNotWaitForASlowDestination: a team subscribed to run results at a destination
// that holds every request (the slowest destination there is), already holding one, deploys 20
// stacks at once. Every deploy ends while the destination has answered nothing: neither a
// deploy's run nor its end waits for a delivery. Once released, every run's result is delivered.
func TestDeploysDoNotWaitForASlowDestination(t *testing.T) {
	t.Parallel()
	// An attempt may last 90 s (under the lease), so that what reaches the destination stays held.
	lab := newDeployLab(t, 90*time.Second)
	dest := newHolder(t)
	hook := lab.subscribe(t, "bot", dest.URL+"/hook", false)
	dest.holding.Store(true)
	verified := dest.answeredAll() // the test message enabling the subscription sends
	// A test message reaches the destination and is held before the deploys start: the
	// destination is slow for the whole of them, whenever their own deliveries are attempted.
	if r := lab.API.Do("POST", "/v1/webhooks/"+hook+"/test", apitest.Req{Token: lab.Member}); r.Status != 202 {
		t.Fatalf("test message: %d %s", r.Status, r.Body)
	}
	testkit.Eventually(t, time.Minute, "the test message did not reach the destination", func() bool { return dest.held.Load() > 0 })

	const n = 20
	lab.deploy(t, lab.stacks(t, "notified", n), 10*time.Minute)
	if got := dest.answeredAll() - verified; got != 0 {
		t.Fatalf("the destination answered %d messages while it held them all", got)
	}

	dest.Release()
	// One run per deploy, one run.finished event per run, one delivery per event.
	var delivered int
	testkit.Eventually(t, 5*time.Minute, "the held run results were not delivered once released", func() bool {
		_ = lab.API.DB.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries WHERE state = 'delivered' AND event_type = 'run.finished'`).Scan(&delivered)
		return delivered == n && dest.answeredAll()-verified >= n
	})
}

// answeredAll is how many messages the destination answered, all subscriptions and events.
func (h *holder) answeredAll() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	sum := 0
	for _, n := range h.got {
		sum += n
	}
	return sum
}
