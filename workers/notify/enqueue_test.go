package notify_test

import (
	"testing"
	"time"

	"horizon/functions/apitest"
	"horizon/shared/testkit"
	"horizon/workers/worker/workertest"
)

// TestTestAndRedeliverAreSentAtOnce: a test message and a redelivery are handed to the workers
// when the request commits, not left to the outbox's sweep — the workers here run none (no
// scheduler, no test sweep), so without that hand-over neither would ever be sent.
func TestTestAndRedeliverAreSentAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	red := e.api.NewTeam("red")
	rcv := newReceiver(t, 200)
	id, _ := e.subscribe(t, red, "standard", rcv.URL, "run.finished") // its verification is the first message
	workertest.Start(t, workertest.Deps{DB: e.api.DB, Redis: e.api.Redis, Box: e.h.Box, Namespace: e.api.Deps.Namespace},
		workertest.Options{Webhooks: e.guard})

	test := e.api.Do("POST", "/v1/webhooks/"+id+"/test", apitest.Req{})
	if test.Status != 202 {
		t.Fatalf("test: %d %s", test.Status, test.Body)
	}
	delivered := func(n int) func() bool {
		return func() bool {
			ds := e.deliveries(t, id)
			return len(rcv.messages()) == n && len(ds) == n-1 && ds[0]["state"] == "delivered"
		}
	}
	testkit.Eventually(t, 2*time.Minute, "the test message was not sent without a sweep", delivered(2))

	again := e.api.Do("POST", "/v1/webhooks/"+id+"/deliveries/"+test.Map()["id"].(string)+"/redeliver", apitest.Req{})
	if again.Status != 202 {
		t.Fatalf("redeliver: %d %s", again.Status, again.Body)
	}
	testkit.Eventually(t, 2*time.Minute, "the redelivery was not sent without a sweep", delivered(3))
}
