package worker_test

import (
	"sync"
	"testing"
	"time"

	"horizon/functions/apitest"
	"horizon/shared/testkit"
)

// TestBuildsOnOneNodeWaitTheirTurn: while one stack's VM builds on pve1 (held there by the
// sandbox's hang knob), another stack's build for pve1 waits, and its card says for what —
// node, holder, place in line — instead of looking hung. Released, both finish.
func TestBuildsOnOneNodeWaitTheirTurn(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	first, second := e.draftOn("first", 0, "pve1"), e.draftOn("second", 2, "pve1")
	e.Sandbox.HangTasks("qmcreate")
	released := false
	release := func() {
		if !released {
			e.Sandbox.ReleaseTasks("qmcreate")
			released = true
		}
	}
	t.Cleanup(release)
	if r := e.API.Do("POST", "/v1/stacks/"+first+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy first: %d %s", r.Status, r.Body)
	}
	testkit.Eventually(t, time.Minute, "the first build did not start", func() bool {
		return e.pipeline(first)["db[0]"]["state"] == "running"
	})
	if r := e.API.Do("POST", "/v1/stacks/"+second+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy second: %d %s", r.Status, r.Body)
	}
	var card map[string]any
	testkit.Eventually(t, time.Minute, "the second build does not say what it waits for", func() bool {
		card = e.pipeline(second)["db[0]"]
		w, _ := card["waiting_on"].(map[string]any)
		// run:advance commits the step queued before it registers the step in the node's line:
		// until then the card has no position.
		return card["state"] == "queued" && w != nil && w["holder"] != nil && w["holder"].(map[string]any)["stack"] != nil &&
			w["position"] != 0.0
	})
	w := card["waiting_on"].(map[string]any)
	if w["node"] != "pve1" || w["position"] != 1.0 || w["holder"].(map[string]any)["stack"] != first {
		t.Fatalf("waiting_on %v, want pve1, first in line, held by the first stack", w)
	}
	release()
	e.waitState(first, "deployed", 3*time.Minute)
	done := e.waitState(second, "deployed", 3*time.Minute)
	if gw := e.pipeline(second)["db[0]"]["gate_wait_ms"].(float64); gw <= 0 {
		t.Fatalf("the second build's gate wait is %v ms, want the time it waited; stack %v", gw, done["state"])
	}
	if n := len(e.Sandbox.Cluster("demo").VMs()); n != 4 {
		t.Fatalf("%d VMs, want 4", n)
	}
}

// TestConcurrentDeploysStartOneRun: two deploys of one stack at the same instant, with
// different Idempotency-Keys: one starts the run, the other is refused with 409.
func TestConcurrentDeploysStartOneRun(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{noWorker: true})
	for round := 0; round < 5; round++ {
		stack := e.draftOn("twins"+string(rune('a'+round)), 2*round, "pve1")
		var wg sync.WaitGroup
		statuses := make([]int, 2)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member,
					Headers: map[string]string{"Idempotency-Key": stack + string(rune('0'+i))}}).Status
			}()
		}
		wg.Wait()
		if !(statuses[0] == 202 && statuses[1] == 409 || statuses[0] == 409 && statuses[1] == 202) {
			t.Fatalf("round %d: statuses %v, want one 202 and one 409", round, statuses)
		}
		var runs int
		if err := e.API.DB.QueryRow(t.Context(), `SELECT count(*) FROM runs WHERE stack_id = $1`, stack).Scan(&runs); err != nil || runs != 1 {
			t.Fatalf("round %d: %d runs (%v), want 1", round, runs, err)
		}
	}
}

// draftOn creates a one-db, one-app draft whose machines use address addr and addr+1 on node.
func (e *engine) draftOn(name string, addr int, node string) string {
	t := e.t
	t.Helper()
	r := e.API.Do("POST", "/v1/stacks", apitest.Req{Token: e.Member, Body: map[string]any{"team_id": e.Team, "name": name,
		"environment_id": e.Env, "template_id": e.Tmpl, "template_version": 1,
		"jobs": map[string]any{"db": map[string]any{"executions": []any{e.Machine(addr, map[string]any{"node": node})}},
			"app": map[string]any{"executions": []any{e.Machine(addr+1, map[string]any{"node": node})}}}}})
	if r.Status != 201 {
		t.Fatalf("draft: %d %s", r.Status, r.Body)
	}
	return r.Map()["id"].(string)
}
