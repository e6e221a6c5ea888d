package notify_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"horizon/shared/horizon"
	"horizon/shared/queue"
	"horizon/shared/store"
	"horizon/shared/testkit"
)

// TestSlackGetsAtMostOneMessagePerSecondPerDestination: two Slack subscriptions posting to the
// same destination, three stack changes each, delivered by a real Asynq server with room for
// all six at once. By the receiver's clock, no two messages arrive less than a second apart:
// the limit is the destination's, not the subscription's, and it holds where Slack counts it.
func TestSlackGetsAtMostOneMessagePerSecondPerDestination(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	red := e.api.NewTeam("red")
	rcv := newReceiver(t, 200)
	a, _ := e.subscribe(t, red, "slack", rcv.URL+"/services/T0/B0/x", "stack.state_changed")
	b, _ := e.subscribe(t, red, "slack", rcv.URL+"/services/T0/B0/x", "stack.state_changed")
	ctx := context.Background()
	for i := range 3 {
		if _, err := store.StackSetState(ctx, e.api.DB, horizon.StateChange{StackID: e.api.NewStack(red, "web"+string(rune('a'+i))), To: horizon.StackDeploying}); err != nil {
			t.Fatal(err)
		}
	}
	srv := asynq.NewServerFromRedisClient(e.api.Redis, asynq.Config{Concurrency: 6, Queues: map[string]int{e.h.Queues.Notify: 1},
		TaskCheckInterval: 50 * time.Millisecond, DelayedTaskCheckInterval: 100 * time.Millisecond, LogLevel: asynq.ErrorLevel})
	mux := asynq.NewServeMux()
	mux.Handle(queue.TypeWebhookDeliver, e.h)
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	testkit.Eventually(t, 60*time.Second, "the six messages were not all delivered", func() bool {
		if _, err := e.h.DispatchDue(ctx); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{a, b} {
			for _, d := range e.deliveries(t, id) {
				if d["state"] != "delivered" {
					return false
				}
			}
		}
		return true
	})
	var arrivals []time.Time
	for _, m := range rcv.messages() {
		var body map[string]string
		if err := json.Unmarshal(m.body, &body); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(body["text"], "Test message") { // enabling's test messages are sent by the API, at once
			arrivals = append(arrivals, m.at)
		}
	}
	if len(arrivals) != 6 {
		t.Fatalf("%d messages arrived, want 6", len(arrivals))
	}
	for i := 1; i < len(arrivals); i++ {
		if gap := arrivals[i].Sub(arrivals[i-1]); gap < time.Second {
			t.Errorf("messages %d and %d arrived %s apart, want at least 1 s", i-1, i, gap)
		}
	}
}
