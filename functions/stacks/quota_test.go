package stacks_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/horizon"
)

// quotaLab is the lab with the sandbox-vm example declaring what its machines use: cores and
// memory from their parameters, disk as a constant (db 10 GiB, app 5 GiB). Its Draft(…, 1)
// costs 2 machines, 2 vCPUs, 1536 MiB and 15 GiB.
func quotaLab(t *testing.T) *labtest.Lab {
	def := labtest.ExampleFile(t, "template.yaml")
	def = strings.Replace(def, "        nagios:\n", "        resources: { cores: { param: cores }, memory_mb: { param: memory_mb }, disk_gb: 10 }\n        nagios:\n", 1)
	def = strings.Replace(def, "        replace: add-first\n", "        replace: add-first\n        resources: { cores: { param: cores }, memory_mb: { param: memory_mb }, disk_gb: 5 }\n", 1)
	return labtest.New(t, labtest.Options{Override: map[string]string{"template.yaml": def}})
}

func putQuota(t *testing.T, e *labtest.Lab, body map[string]any) {
	t.Helper()
	if r := e.API.Do("PUT", "/v1/teams/"+e.Team+"/quotas", apitest.Req{Body: body}); r.Status != 200 {
		t.Fatalf("put quota %v: %d %s", body, r.Status, r.Body)
	}
}

// usedOf reads a dimension of the team's usage, as a viewer.
func usedOf(t *testing.T, e *labtest.Lab, dim string) (used float64, remaining any) {
	t.Helper()
	r := e.API.Do("GET", "/v1/teams/"+e.Team+"/usage", apitest.Req{Token: e.Viewer})
	if r.Status != 200 {
		t.Fatalf("usage: %d %s", r.Status, r.Body)
	}
	a := r.Map()[dim].(map[string]any)
	return a["used"].(float64), a["remaining"]
}

// refusedFor checks a 422 naming field with a message about dimension dim, and that nothing
// was written.
func refusedFor(t *testing.T, e *labtest.Lab, what string, before string, r *apitest.Response, field, dim string) {
	t.Helper()
	if r.Status != 422 {
		t.Fatalf("%s: %d %s, want 422", what, r.Status, r.Body)
	}
	found := false
	for _, fe := range r.Problem().Errors {
		found = found || fe.Field == field && strings.Contains(fe.Message, "the "+dim+" quota") && strings.Contains(fe.Message, "left")
	}
	if !found {
		t.Fatalf("%s: %s, want %s refused for the %s quota", what, r.Body, field, dim)
	}
	if e.API.State() != before {
		t.Fatalf("%s: the refused request changed the database", what)
	}
	if len(e.Sandbox.Cluster("demo").VMs()) != 0 {
		t.Fatalf("%s: the refused request touched infrastructure", what)
	}
}

func problemFields(stack map[string]any) []string {
	var out []string
	for _, p := range stack["problems"].([]any) {
		out = append(out, p.(map[string]any)["field"].(string))
	}
	return out
}

// deployedByAPI deploys a stack through the API and finishes its run as the workers would
// have (the API alone runs here).
func deployedByAPI(t *testing.T, e *labtest.Lab, stack string) {
	t.Helper()
	r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member})
	if r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	e.API.FinishRun(uuid.MustParse(r.Map()["id"].(string)), horizon.RunSucceeded)
	deployedInDB(t, e, stack)
}

// TestQuotaRefusesDeploys: each dimension's quota refuses a deploy that would pass it, with
// the dimension, the need, what is left and the field that causes it (the parameter a
// resource reads, or the execution for a machine or a constant), before anything starts; the
// draft lists the same problem beforehand. A quota narrowed to the stack's environment refuses
// it too; a deploy that fits is accepted, and a viewer reads what remains.
func TestQuotaRefusesDeploys(t *testing.T) {
	t.Parallel()
	e := quotaLab(t)
	stack := e.Draft("shop", 1)
	tests := []struct {
		dim   string
		limit int
		field string
	}{
		{"machines", 1, "jobs.db.executions[0]"},
		{"vcpus", 1, "jobs.db.executions[0].parameters.cores"},
		{"memory_mib", 1000, "jobs.db.executions[0].parameters.memory_mb"},
		{"disk_gib", 14, "jobs.db.executions[0]"},
	}
	for _, tc := range tests {
		putQuota(t, e, map[string]any{"limits": map[string]any{tc.dim: tc.limit}})
		draft := e.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: e.Member}).Map()
		if !slices.Contains(problemFields(draft), tc.field) {
			t.Fatalf("%s: the draft's problems %v lack %s", tc.dim, problemFields(draft), tc.field)
		}
		before := e.API.State()
		refusedFor(t, e, "deploy over "+tc.dim, before, e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}), tc.field, tc.dim)
	}
	// The quota of the stack's environment, the team's being ample.
	putQuota(t, e, map[string]any{"limits": map[string]any{"vcpus": 100}, "environments": map[string]any{e.Env: map[string]any{"vcpus": 1}}})
	r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member})
	refusedFor(t, e, "deploy over the environment's quota", e.API.State(), r, "jobs.db.executions[0].parameters.cores", "vcpus")
	if msg := r.Problem().Errors[0].Message; !strings.Contains(msg, "in environment lab") || !strings.Contains(msg, "needs 2 vCPUs") || !strings.Contains(msg, "1 of its 1 left") {
		t.Fatalf("the refusal says %q", msg)
	}
	// Exactly enough: accepted, and nothing remains.
	putQuota(t, e, map[string]any{"limits": map[string]any{"machines": 2, "vcpus": 2, "memory_mib": 1536, "disk_gib": 15}})
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("a deploy that fits: %d %s", r.Status, r.Body)
	}
	for dim, want := range map[string]float64{"machines": 2, "vcpus": 2, "memory_mib": 1536, "disk_gib": 15} {
		if used, left := usedOf(t, e, dim); used != want || left != 0.0 {
			t.Fatalf("%s after the deploy: used %v, remaining %v; want %v and 0", dim, used, left, want)
		}
	}
}

// TestQuotaRefusesGrowthOfADeployedStack: on a stack using all of its team's quota, an edit
// that raises a parameter a resource reads, or adds a machine, and an upgrade to a version
// whose machines use more, are refused naming the dimension and the field, with nothing
// started; the plan shows the delta and the problem. A quota lowered below what the team uses
// refuses nothing that exists: a run again and an edit that frees pass.
func TestQuotaRefusesGrowthOfADeployedStack(t *testing.T) {
	t.Parallel()
	e := quotaLab(t)
	stack := e.Draft("shop", 1)
	deployedByAPI(t, e, stack)
	putQuota(t, e, map[string]any{"limits": map[string]any{"machines": 2, "vcpus": 2, "memory_mib": 1536, "disk_gib": 15}})
	s := e.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: e.Member}).Map()
	app := s["jobs"].(map[string]any)["app"].(map[string]any)["executions"].([]any)[0].(map[string]any)["id"].(string)
	appWith := func(params map[string]any) map[string]any {
		m := e.Machine(1, map[string]any{"id": app})
		if params != nil { // null parameters are refused: left out, they stay as they are
			m["parameters"] = params
		}
		return m
	}
	edit := func(execs ...any) apitest.Req {
		return apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": fmt.Sprintf(`"%v"`, s["version"])},
			Body: map[string]any{"confirm": true, "jobs": map[string]any{"app": map[string]any{"executions": execs}}}}
	}
	path := "/v1/stacks/" + stack
	before := e.API.State()
	refusedFor(t, e, "more cores", before, e.API.Do("PATCH", path, edit(appWith(map[string]any{"cores": 2}))), "jobs.app.executions[0].parameters.cores", "vcpus")
	refusedFor(t, e, "more memory", before, e.API.Do("PATCH", path, edit(appWith(map[string]any{"memory_mb": 1024}))), "jobs.app.executions[0].parameters.memory_mb", "memory_mib")
	refusedFor(t, e, "one more machine", before, e.API.Do("PATCH", path, edit(appWith(nil), e.Machine(2, nil))), "jobs.app.executions[1]", "machines")
	putQuota(t, e, map[string]any{"limits": map[string]any{"machines": 3, "vcpus": 3, "memory_mib": 3000, "disk_gib": 15}})
	before = e.API.State()
	r := e.API.Do("PATCH", path, edit(appWith(nil), e.Machine(2, nil)))
	refusedFor(t, e, "one more machine's disk", before, r, "jobs.app.executions[1]", "disk_gib")
	if n := len(r.Problem().Errors); n != 1 {
		t.Fatalf("only the disk is short, got %s", r.Body)
	}

	// The plan shows what the edit adds and the problem, and changes nothing.
	plan := e.API.Do("POST", path+"/plan", apitest.Req{Token: e.Member, Body: map[string]any{"jobs": map[string]any{"app": map[string]any{"executions": []any{appWith(nil), e.Machine(2, nil)}}}}})
	res := plan.Map()["resources"].(map[string]any)
	if plan.Status != 200 || res["machines"].(float64) != 1 || res["vcpus"].(float64) != 1 || res["memory_mib"].(float64) != 512 || res["disk_gib"].(float64) != 5 ||
		!slices.Contains(problemFields(plan.Map()), "jobs.app.executions[1]") {
		t.Fatalf("plan: %d %s", plan.Status, plan.Body)
	}

	// Version 2 gives app machines 50 GiB of disk: the upgrade is refused on disk.
	v1 := e.API.Do("GET", "/v1/templates/"+e.Tmpl+"/versions/1", apitest.Req{}).Map()
	def := v1["definition"].(map[string]any)
	for _, ph := range def["phases"].([]any) {
		for _, j := range ph.(map[string]any)["jobs"].([]any) {
			if j := j.(map[string]any); j["name"] == "app" {
				j["resources"].(map[string]any)["disk_gb"] = 50
			}
		}
	}
	if v := e.API.Do("POST", "/v1/templates/"+e.Tmpl+"/versions", apitest.Req{Body: map[string]any{"definition": def}}); v.Status != 201 {
		t.Fatalf("version 2: %d %s", v.Status, v.Body)
	}
	before = e.API.State()
	refusedFor(t, e, "upgrade", before, e.API.Do("POST", path+"/upgrade-template", apitest.Req{Body: map[string]any{"version": 2}}), "jobs.app.executions[0]", "disk_gib")

	// Lowered below what the team uses: nothing that exists is refused.
	putQuota(t, e, map[string]any{"limits": map[string]any{"vcpus": 1}})
	if used, left := usedOf(t, e, "vcpus"); used != 2 || left != 0.0 {
		t.Fatalf("over a lowered quota: used %v, remaining %v", used, left)
	}
	again := e.API.Do("POST", path+"/jobs/app/executions/0/run-again", apitest.Req{Token: e.Member})
	if again.Status != 202 {
		t.Fatalf("run again over a lowered quota: %d %s", again.Status, again.Body)
	}
	e.API.FinishRun(uuid.MustParse(again.Map()["id"].(string)), horizon.RunSucceeded)
	if _, err := e.API.DB.Exec(t.Context(), `UPDATE stacks SET state = 'deployed' WHERE id = $1`, stack); err != nil {
		t.Fatal(err)
	}
	s = e.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: e.Member}).Map()
	if r := e.API.Do("PATCH", path, edit(appWith(map[string]any{"memory_mb": 512}))); r.Status != 200 && r.Status != 202 {
		t.Fatalf("an edit that grows nothing over a lowered quota: %d %s", r.Status, r.Body)
	}
}

// TestQuotaRaceForTheLastSlot: ten deploys racing for a quota with room for one stack:
// exactly one is accepted, the others are refused naming the quota, and the team uses one
// stack's worth.
func TestQuotaRaceForTheLastSlot(t *testing.T) {
	t.Parallel()
	e := quotaLab(t)
	netID := e.API.Do("GET", "/v1/networks", apitest.Req{}).Map()["items"].([]any)[0].(map[string]any)["id"].(string)
	first := e.API.Do("GET", "/v1/networks/"+netID+"/addresses", apitest.Req{}).Map()["items"].([]any)[0].(map[string]any)["ip"].(string)
	prefix := first[:strings.LastIndex(first, ".")]
	addrs := slices.Clone(e.Addrs)
	for i := 20; i < 30; i++ {
		a := e.API.Do("POST", "/v1/networks/"+netID+"/addresses", apitest.Req{Body: map[string]any{"name": fmt.Sprintf("vm-%d", i), "ip": fmt.Sprintf("%s.%d", prefix, i)}})
		if a.Status != 201 {
			t.Fatalf("address: %d %s", a.Status, a.Body)
		}
		addrs = append(addrs, a.Map()["id"].(string))
	}
	machine := func(addr string) map[string]any {
		return map[string]any{"address_id": addr, "ssh_key_id": e.Key, "proxmox_server_id": e.Server, "node": "pve1", "pool": "dev"}
	}
	var stacks []string
	for i := range 10 {
		r := e.API.Do("POST", "/v1/stacks", apitest.Req{Token: e.Member, Body: map[string]any{"team_id": e.Team, "name": fmt.Sprintf("racer-%d", i),
			"environment_id": e.Env, "template_id": e.Tmpl, "template_version": 1,
			"jobs": map[string]any{"db": map[string]any{"executions": []any{machine(addrs[2*i])}}, "app": map[string]any{"executions": []any{machine(addrs[2*i+1])}}}}})
		if r.Status != 201 {
			t.Fatalf("draft %d: %d %s", i, r.Status, r.Body)
		}
		stacks = append(stacks, r.Map()["id"].(string))
	}
	putQuota(t, e, map[string]any{"limits": map[string]any{"machines": 3}})
	results := make([]*apitest.Response, len(stacks))
	var wg sync.WaitGroup
	for i, id := range stacks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = e.API.Do("POST", "/v1/stacks/"+id+"/deploy", apitest.Req{Token: e.Member})
		}()
	}
	wg.Wait()
	accepted := 0
	for i, r := range results {
		switch {
		case r.Status == 202:
			accepted++
		case r.Status == 422 && strings.Contains(string(r.Body), "machines quota"):
		default:
			t.Errorf("deploy %d: %d %s", i, r.Status, r.Body)
		}
	}
	if accepted != 1 {
		t.Fatalf("%d deploys accepted, want exactly 1", accepted)
	}
	var runs int
	if err := e.API.DB.QueryRow(t.Context(), `SELECT count(*) FROM runs`).Scan(&runs); err != nil || runs != 1 {
		t.Fatalf("%d runs written (%v), want 1", runs, err)
	}
	if used, left := usedOf(t, e, "machines"); used != 2 || left != 1.0 {
		t.Fatalf("after the race: used %v, remaining %v; want 2 and 1", used, left)
	}
}

// TestQuotaUsageFollowsTheStack: a draft counts nothing; a deploy counts from its start; a
// failed first build keeps counting (its machines may exist); a removal counts until its
// destroys end; a force-remove frees at once. Another team's stacks never count.
func TestQuotaUsageFollowsTheStack(t *testing.T) {
	t.Parallel()
	e := quotaLab(t)
	ctx := t.Context()
	a := e.Draft("a", 1)
	if used, _ := usedOf(t, e, "vcpus"); used != 0 {
		t.Fatalf("a draft counts %v vCPUs", used)
	}
	dep := e.API.Do("POST", "/v1/stacks/"+a+"/deploy", apitest.Req{Token: e.Member})
	if dep.Status != 202 {
		t.Fatalf("deploy: %d %s", dep.Status, dep.Body)
	}
	if used, _ := usedOf(t, e, "memory_mib"); used != 1536 {
		t.Fatalf("a deploying stack counts %v MiB, want 1536", used)
	}
	// Its first build fails, as the workers record it.
	e.API.FinishRun(uuid.MustParse(dep.Map()["id"].(string)), horizon.RunFailed)
	if _, err := e.API.DB.Exec(ctx, `UPDATE stacks SET state = 'failed' WHERE id = $1`, a); err != nil {
		t.Fatal(err)
	}
	if used, _ := usedOf(t, e, "machines"); used != 2 {
		t.Fatalf("a failed first build counts %v machines, want 2", used)
	}
	fr := e.API.Do("POST", "/v1/stacks/"+a+"/force-remove", apitest.Req{Body: map[string]any{"confirm": true}})
	if fr.Status != 200 {
		t.Fatalf("force-remove: %d %s", fr.Status, fr.Body)
	}
	if used, _ := usedOf(t, e, "machines"); used != 0 {
		t.Fatalf("after a force-remove: %v machines, want 0", used)
	}

	b := e.Draft("b", 1)
	deployedByAPI(t, e, b)
	rm := e.API.Do("DELETE", "/v1/stacks/"+b, apitest.Req{Token: e.Member})
	if rm.Status != 202 {
		t.Fatalf("remove: %d %s", rm.Status, rm.Body)
	}
	if used, _ := usedOf(t, e, "disk_gib"); used != 15 {
		t.Fatalf("a removal in progress counts %v GiB, want 15", used)
	}
	// The workers destroy the app machine first: it is freed at once, the db still counts.
	if _, err := e.API.DB.Exec(ctx, `UPDATE executions SET state = 'removed' WHERE stack_id = $1 AND job = 'app'`, b); err != nil {
		t.Fatal(err)
	}
	if used, _ := usedOf(t, e, "disk_gib"); used != 10 {
		t.Fatalf("after the app's destroy: %v GiB, want 10", used)
	}

	// Another team's stacks are not this team's usage.
	other := e.API.NewTeam("other")
	if r := e.API.Do("GET", "/v1/teams/"+other.String()+"/usage", apitest.Req{}); r.Status != 200 || r.Map()["disk_gib"].(map[string]any)["used"].(float64) != 0 {
		t.Fatalf("another team's usage: %d %s", r.Status, r.Body)
	}
}
