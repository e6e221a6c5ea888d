package worker_test

import (
	"strings"
	"testing"
	"time"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
)

// TestQuotaUsageThroughRealRuns: with the workers running, a first build that fails (the
// node's host key changed) leaves the stack failed and still counted — it could be retried
// without a check —; a deploy that succeeds counts its machines, their cores and memory read
// from their answers, within a quota it fills exactly; its removal frees them once it ended;
// a force-remove frees the failed stack's at once.
func TestQuotaUsageThroughRealRuns(t *testing.T) {
	t.Parallel()
	def := labtest.ExampleFile(t, "template.yaml")
	def = strings.Replace(def, "        nagios:\n", "        resources: { cores: { param: cores }, memory_mb: { param: memory_mb }, disk_gb: 10 }\n        nagios:\n", 1)
	def = strings.Replace(def, "        replace: add-first\n", "        replace: add-first\n        resources: { cores: { param: cores }, memory_mb: { param: memory_mb }, disk_gb: 5 }\n", 1)
	e := newEngine(t, engineOpts{override: map[string]string{"template.yaml": def}})
	if r := e.API.Do("PUT", "/v1/teams/"+e.Team+"/quotas", apitest.Req{Body: map[string]any{"limits": map[string]any{"machines": 4}}}); r.Status != 200 {
		t.Fatalf("quota: %d %s", r.Status, r.Body)
	}
	used := func(dim string) float64 {
		t.Helper()
		r := e.API.Do("GET", "/v1/teams/"+e.Team+"/usage", apitest.Req{Token: e.Viewer})
		return r.Map()[dim].(map[string]any)["used"].(float64)
	}

	if _, err := e.Sandbox.Cluster("demo").RotateHostKey("pve1"); err != nil {
		t.Fatal(err)
	}
	failed := e.Draft("broken", 1)
	if r := e.API.Do("POST", "/v1/stacks/"+failed+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	e.waitState(failed, "failed", 2*time.Minute)
	if n := used("machines"); n != 2 {
		t.Fatalf("after a failed first build: %v machines, want 2", n)
	}
	// On healthy nodes: a deploy that fits counts what its machines' answers say.
	r := e.API.Do("POST", "/v1/stacks", apitest.Req{Token: e.Member, Body: map[string]any{"team_id": e.Team, "name": "good",
		"environment_id": e.Env, "template_id": e.Tmpl, "template_version": 1,
		"jobs": map[string]any{"db": map[string]any{"executions": []any{e.Machine(2, map[string]any{"node": "pve2", "parameters": map[string]any{"cores": 3}})}},
			"app": map[string]any{"executions": []any{e.Machine(3, map[string]any{"node": "pve3"})}}}}})
	if r.Status != 201 {
		t.Fatalf("draft: %d %s", r.Status, r.Body)
	}
	good := r.Map()["id"].(string)
	if r := e.API.Do("POST", "/v1/stacks/"+good+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	e.waitState(good, "deployed", 3*time.Minute)
	if m, c, mem := used("machines"), used("vcpus"), used("memory_mib"); m != 4 || c != 6 || mem != 3072 {
		t.Fatalf("with the deployed stack: %v machines, %v vCPUs, %v MiB; want 4, 6, 3072", m, c, mem)
	}
	// Its removal frees its machines once it ended.
	if r := e.API.Do("DELETE", "/v1/stacks/"+good, apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("remove: %d %s", r.Status, r.Body)
	}
	e.waitState(good, "removed", 3*time.Minute)
	if m, c := used("machines"), used("vcpus"); m != 2 || c != 2 {
		t.Fatalf("after the removal: %v machines, %v vCPUs; want the failed stack's 2 and 2", m, c)
	}
	// A force-remove frees the failed stack's at once.
	if r := e.API.Do("POST", "/v1/stacks/"+failed+"/force-remove", apitest.Req{Body: map[string]any{"confirm": true}}); r.Status != 200 {
		t.Fatalf("force-remove: %d %s", r.Status, r.Body)
	}
	if m := used("machines"); m != 0 {
		t.Fatalf("after the force-remove: %v machines, want 0", m)
	}
}
