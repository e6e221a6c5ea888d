package worker_test

import (
	"strings"
	"testing"
	"time"

	"horizon/functions/apitest"
)

// TestDeployBuildsTheStack deploys a database VM and two app VMs (a later phase, wired to the
// database's output, with a generated secret, scripts and a secret script output) on the
// sandbox, and checks what a user relies on: the stack ends deployed, the VMs exist with their
// names and tags and run, outputs are grouped by job with secrets hidden, the pipeline and the
// history show what happened.
func TestDeployBuildsTheStack(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	stack := e.Draft("shop", 2)
	d := e.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: e.Member}).Map()
	if len(d["problems"].([]any)) != 0 {
		t.Fatalf("a complete draft has problems: %v", d["problems"])
	}
	r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member, Headers: map[string]string{"Idempotency-Key": "deploy-1"}})
	if r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	run := r.Map()
	again := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member, Headers: map[string]string{"Idempotency-Key": "deploy-1"}})
	if again.Status != 202 || again.Map()["id"] != run["id"] {
		t.Fatalf("a retried deploy with the same key: %d %s, want the same run", again.Status, again.Body)
	}
	if busy := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); busy.Status != 409 {
		t.Fatalf("a second deploy while the first runs: %d, want 409", busy.Status)
	}

	final := e.waitState(stack, "deployed", 3*time.Minute)
	if acts := final["allowed_actions"].([]any); len(acts) == 0 || final["current_run"] != nil {
		t.Fatalf("deployed stack: actions %v, current run %v", acts, final["current_run"])
	}
	vms := e.Sandbox.Cluster("demo").VMs()
	if len(vms) != 3 {
		t.Fatalf("sandbox has %d VMs, want 3: %+v", len(vms), vms)
	}
	names := map[string]bool{}
	for _, vm := range vms {
		names[vm.Name] = true
		if vm.Status != "running" || !contains(vm.Tags, "lab") || !contains(vm.Tags, "horizon") || vm.Pool != "dev" {
			t.Errorf("VM %s: status %s, tags %v, pool %s", vm.Name, vm.Status, vm.Tags, vm.Pool)
		}
	}
	for _, n := range []string{"shop-db-0", "shop-app-0", "shop-app-1"} {
		if !names[n] {
			t.Errorf("no VM named %s (have %v)", n, names)
		}
	}

	outs := e.API.Do("GET", "/v1/stacks/"+stack+"/outputs", apitest.Req{Token: e.Member}).Map()["jobs"].(map[string]any)
	app0 := outs["app"].([]any)[0].(map[string]any)["outputs"].(map[string]any)
	if app0["app_url"] == nil || app0["api_key"].(map[string]any)["secret"] != true || app0["ip"] == nil {
		t.Fatalf("app outputs: %v", app0)
	}
	if db := outs["db"].([]any)[0].(map[string]any)["outputs"].(map[string]any); db["ip"] == nil || db["vm_id"] == nil {
		t.Fatalf("db outputs: %v", db)
	}
	rev := e.API.Do("POST", "/v1/stacks/"+stack+"/outputs/app/0/api_key/reveal", apitest.Req{Token: e.Member})
	if rev.Status != 200 || rev.Map()["value"] == "" || rev.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("reveal: %d %s", rev.Status, rev.Body)
	}
	var reveals int
	if err := e.API.DB.QueryRow(t.Context(), `SELECT count(*) FROM activity WHERE action = 'stack.output.reveal'`).Scan(&reveals); err != nil || reveals != 1 {
		t.Fatalf("reveals recorded: %d (%v)", reveals, err)
	}

	cards := e.pipeline(stack)
	for _, k := range []string{"db[0]", "app[0]", "app[1]"} {
		if cards[k]["state"] != "succeeded" {
			t.Errorf("card %s: %v", k, cards[k])
		}
	}
	hist := e.API.Do("GET", "/v1/stacks/"+stack+"/history", apitest.Req{Token: e.Member}).Map()["items"].([]any)
	var path []string
	for _, h := range hist {
		h := h.(map[string]any)
		path = append(path, h["to"].(string))
		// Who acted is named, so a reader needs no access to the users list; the end of the
		// run is Horizon's doing, not the user's who started it: no actor.
		if h["to"] == "deployed" {
			if h["actor_id"] != nil || h["actor_name"] != nil || h["run_id"] == nil {
				t.Errorf("the run's end is credited to %v (%v), run %v; want no actor and the run", h["actor_name"], h["actor_id"], h["run_id"])
			}
			continue
		}
		var name string
		if err := e.API.DB.QueryRow(t.Context(), `SELECT name FROM users WHERE id = $1`, h["actor_id"]).Scan(&name); err != nil || h["actor_name"] != name {
			t.Errorf("history entry %v: actor_name %v, the user is %q (%v)", h["to"], h["actor_name"], name, err)
		}
	}
	if strings.Join(path, ">") != "draft>deploying>deployed" {
		t.Fatalf("history %v", path)
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
