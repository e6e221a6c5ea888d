package worker_test

import (
	"testing"
	"time"

	"horizon/functions/apitest"
)

// TestRunAgainAndStartupOrder: a deployed stack's card can run again with the same answers (one
// step, the stack returns to deployed); the startup order lists every VM with its boot number
// first, those without one last, with the state Proxmox reports.
func TestRunAgainAndStartupOrder(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	r := e.API.Do("POST", "/v1/stacks", apitest.Req{Token: e.Member, Body: map[string]any{"team_id": e.Team, "name": "boot",
		"environment_id": e.Env, "template_id": e.Tmpl, "template_version": 1,
		"jobs": map[string]any{"db": map[string]any{"executions": []any{e.Machine(0, map[string]any{"startup_order": 1})}},
			"app": map[string]any{"executions": []any{e.Machine(1, nil), e.Machine(2, map[string]any{"startup_order": 5, "node": "pve2"})}}}}})
	stack := r.Map()["id"].(string)
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "deployed", 3*time.Minute)

	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/jobs/app/executions/7/run-again", apitest.Req{Token: e.Member}); r.Status != 404 {
		t.Fatalf("run again of a missing execution: %d, want 404", r.Status)
	}
	again := e.API.Do("POST", "/v1/stacks/"+stack+"/jobs/app/executions/1/run-again", apitest.Req{Token: e.Member})
	if again.Status != 202 || again.Map()["kind"] != "run_again" {
		t.Fatalf("run again: %d %s", again.Status, again.Body)
	}
	if busy := e.API.Do("POST", "/v1/stacks/"+stack+"/jobs/app/executions/0/run-again", apitest.Req{Token: e.Member}); busy.Status != 409 {
		t.Fatalf("run again while a run is in progress: %d, want 409", busy.Status)
	}
	e.waitState(stack, "deployed", 3*time.Minute)
	cards := e.pipeline(stack)
	if len(cards) != 1 || cards["app[1]"]["state"] != "succeeded" {
		t.Fatalf("the run-again pipeline: %v", cards)
	}

	items := e.API.Do("GET", "/v1/startup", apitest.Req{Token: e.Member}).Map()["items"].([]any)
	var order []string
	for _, it := range items {
		m := it.(map[string]any)
		order = append(order, m["job"].(string)+"/"+m["node"].(string))
		if m["state"] != "running" {
			t.Errorf("%v: state %v, want running", m["job"], m["state"])
		}
	}
	if len(order) != 3 || order[0] != "db/pve1" || order[1] != "app/pve2" || order[2] != "app/pve1" {
		t.Fatalf("startup order %v, want db (1), app on pve2 (5), then app without a number", order)
	}
}
