package worker_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"

	"horizon/functions/apitest"
	"horizon/shared/queue"
	"horizon/shared/testkit"
)

// deployed drafts and deploys a sandbox-vm stack with one db and apps app VMs and waits for it.
func (e *engine) deployed(name string, apps int) string {
	e.t.Helper()
	stack := e.Draft(name, apps)
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		e.t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "deployed", 3*time.Minute)
	return stack
}

// get returns the stack's detail and its ETag.
func (e *engine) get(stack string) (map[string]any, string) {
	e.t.Helper()
	r := e.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: e.Member})
	if r.Status != 200 {
		e.t.Fatalf("get stack: %d %s", r.Status, r.Body)
	}
	return r.Map(), r.Header.Get("ETag")
}

// executions returns a job's executions from a stack's detail.
func executions(stack map[string]any, job string) []map[string]any {
	var out []map[string]any
	for _, x := range stack["jobs"].(map[string]any)[job].(map[string]any)["executions"].([]any) {
		out = append(out, x.(map[string]any))
	}
	return out
}

// editBody is a PATCH (or plan) body that keeps every execution of the stack as it is —
// the request form of what GET shows — after change has edited each (nil keeps all).
func editBody(stack map[string]any, change func(job string, ex map[string]any)) map[string]any {
	jobs := map[string]any{}
	for job := range stack["jobs"].(map[string]any) {
		var exs []any
		for _, x := range executions(stack, job) {
			req := map[string]any{}
			for _, k := range []string{"id", "parameters", "address_id", "ssh_key_id", "proxmox_server_id", "node", "pool", "iso_id",
				"nagios", "node_exporter", "startup_order"} {
				req[k] = x[k]
			}
			params := map[string]any{}
			for k, v := range x["parameters"].(map[string]any) {
				params[k] = v
			}
			req["parameters"] = params
			if change != nil {
				change(job, req)
			}
			exs = append(exs, req)
		}
		jobs[job] = map[string]any{"executions": exs}
	}
	return map[string]any{"jobs": jobs}
}

// runs returns the stack's runs, newest first.
func (e *engine) runs(stack string) []map[string]any {
	var out []map[string]any
	for _, r := range e.API.Do("GET", "/v1/stacks/"+stack+"/runs", apitest.Req{Token: e.Member}).Map()["items"].([]any) {
		out = append(out, r.(map[string]any))
	}
	return out
}

// vmsByName are the sandbox's VMs by name.
func (e *engine) vmsByName() map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, vm := range e.Sandbox.Cluster("demo").VMs() {
		out[vm.Name] = map[string]any{"vmid": vm.VMID, "node": vm.Node, "memory": vm.Config["memory"], "tags": vm.Tags, "status": vm.Status}
	}
	return out
}

// pauseControl stops the workers from advancing runs (the control queue is paused), so that a
// run stays in progress for as long as the test needs; the returned function resumes it.
func (e *engine) pauseControl() func() {
	e.t.Helper()
	in := asynq.NewInspectorFromRedisClient(e.API.Deps.Redis)
	q := e.API.Deps.Queues.Control
	if err := in.PauseQueue(q); err != nil {
		e.t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = in.UnpauseQueue(q)
			_ = in.Close()
		}
	}
	e.t.Cleanup(resume)
	return resume
}

func planEntries(plan map[string]any, key string) []string {
	var out []string
	for _, x := range plan[key].([]any) {
		m := x.(map[string]any)
		out = append(out, fmt.Sprintf("%s %s[%v]", m["action"], m["job"], m["execution"]))
	}
	return out
}

func entry(plan map[string]any, key string, i int) map[string]any {
	return plan[key].([]any)[i].(map[string]any)
}

// gateLinesEmpty fails the test unless every node's build gate is free with nobody in line: a step
// that never builds (a destroy, a skipped dependent) must not hold up a node.
func (e *engine) gateLinesEmpty() {
	e.t.Helper()
	for _, node := range []string{"pve1", "pve2", "pve3"} {
		st, err := e.API.Deps.Gate.Status(context.Background(), queue.GateNode(mustUUID(e.t, e.Server), node))
		if err != nil || st.Holder != "" || len(st.Waiters) != 0 {
			e.t.Fatalf("gate of %s: holder %q, line %v (%v); want free and empty", node, st.Holder, st.Waiters, err)
		}
	}
}

// TestEditPlansAndReappliesOnlyWhatChanged: name, description and labels change without a
// Terraform run (the labels reach the VMs as Proxmox tags); a plan says exactly what saving
// an edit would do and why, and changes nothing; saving re-applies only the changed
// execution; a change upstream re-applies it and skips dependents whose inputs did not
// change; stale, unconfirmed, out-of-bounds and environment-changing edits are refused.
func TestEditPlansAndReappliesOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	stack := e.deployed("edit", 2)
	_, etag := e.get(stack)

	// Plain fields: no run, labels written as tags.
	r := e.API.Do("PATCH", "/v1/stacks/"+stack, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": etag},
		Body: map[string]any{"description": "the shop", "labels": []string{"lab", "blue"}}})
	if r.Status != 200 || r.Map()["description"] != "the shop" {
		t.Fatalf("plain edit: %d %s", r.Status, r.Body)
	}
	if n := len(e.runs(stack)); n != 1 {
		t.Fatalf("a name/description/label edit started a run: %d runs", n)
	}
	testkit.Eventually(t, time.Minute, "the new label did not reach every VM as a tag", func() bool {
		for _, vm := range e.Sandbox.Cluster("demo").VMs() {
			if !contains(vm.Tags, "blue") {
				return false
			}
		}
		return true
	})
	if stale := e.API.Do("PATCH", "/v1/stacks/"+stack, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": etag},
		Body: map[string]any{"description": "x"}}); stale.Status != 412 {
		t.Fatalf("stale If-Match: %d %s", stale.Status, stale.Body)
	}
	cur, etag := e.get(stack)
	app1 := executions(cur, "app")[1]["id"]
	raise := func(job string, id any, name string, v any) map[string]any {
		return editBody(cur, func(j string, ex map[string]any) {
			if j == job && ex["id"] == id {
				ex["parameters"].(map[string]any)[name] = v
			}
		})
	}

	// The plan of raising one app's memory: that app, nothing else.
	p := e.API.Do("POST", "/v1/stacks/"+stack+"/plan", apitest.Req{Token: e.Member, Body: raise("app", app1, "memory_mb", 1024)})
	if p.Status != 200 {
		t.Fatalf("plan: %d %s", p.Status, p.Body)
	}
	plan := p.Map()
	if got := planEntries(plan, "order"); !reflect.DeepEqual(got, []string{"reapply app[1]"}) {
		t.Fatalf("plan order %v, want only app[1] re-applied", got)
	}
	because := entry(plan, "reapply", 0)["because"].([]any)[0].(map[string]any)
	if because["kind"] != "param" || because["param"] != "memory_mb" || because["from"] != 512.0 || because["to"] != 1024.0 {
		t.Fatalf("because %v, want memory_mb 512 → 1024", because)
	}
	if plan["version"] != cur["version"] {
		t.Fatalf("plan version %v, stack version %v", plan["version"], cur["version"])
	}
	// The plan of raising the db's memory: the db, and the apps that depend on it.
	db0 := executions(cur, "db")[0]["id"]
	plan = e.API.Do("POST", "/v1/stacks/"+stack+"/plan", apitest.Req{Token: e.Member, Body: raise("db", db0, "memory_mb", 2048)}).Map()
	if got := planEntries(plan, "order"); !reflect.DeepEqual(got, []string{"reapply db[0]", "dependent app[0]", "dependent app[1]"}) {
		t.Fatalf("plan order %v", got)
	}
	dep := entry(plan, "dependents", 0)["because"].([]any)[0].(map[string]any)
	if dep["kind"] != "input" || dep["input"] != "db_host" || dep["from_job"] != "db" {
		t.Fatalf("dependent because %v, want input db_host from db", dep)
	}
	if after, _ := e.get(stack); after["version"] != cur["version"] || executions(after, "db")[0]["parameters"].(map[string]any)["memory_mb"] != nil &&
		executions(after, "db")[0]["parameters"].(map[string]any)["memory_mb"] != executions(cur, "db")[0]["parameters"].(map[string]any)["memory_mb"] {
		t.Fatalf("a plan changed the stack")
	}

	// Bad edits, each refused with its field, none changing anything.
	tooMany := editBody(cur, nil)
	apps := tooMany["jobs"].(map[string]any)["app"].(map[string]any)
	for len(apps["executions"].([]any)) < 6 {
		apps["executions"] = append(apps["executions"].([]any), e.Machine(3, nil))
	}
	none := editBody(cur, nil)
	none["jobs"].(map[string]any)["app"] = map[string]any{"executions": []any{}}
	otherEnv := map[string]any{"environment_id": e.API.Do("POST", "/v1/environments", apitest.Req{Body: map[string]any{"name": "prod"}}).Map()["id"]}
	unconfirmed := raise("app", app1, "memory_mb", 1024)
	for _, tc := range []struct {
		name   string
		body   map[string]any
		field  string
		status int
	}{
		{"more executions than max", withConfirm(tooMany), "jobs.app.executions", 422},
		{"fewer executions than min", withConfirm(none), "jobs.app.executions", 422},
		{"another environment", otherEnv, "environment_id", 422},
		{"not confirmed", unconfirmed, "confirm", 422},
		{"parameter out of bounds", withConfirm(raise("app", app1, "memory_mb", 777)), "jobs.app.executions[1].parameters.memory_mb", 422},
	} {
		res := e.API.Do("PATCH", "/v1/stacks/"+stack, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": etag}, Body: tc.body})
		if res.Status != tc.status || !contains(res.Problem().Fields(), tc.field) {
			t.Errorf("%s: %d %s, want %d naming %s", tc.name, res.Status, res.Body, tc.status, tc.field)
		}
	}
	if n := len(e.runs(stack)); n != 1 {
		t.Fatalf("a refused edit started a run: %d runs", n)
	}

	// Save: one run, app[1] alone re-applied; while it runs, no plan nor edit.
	resume := e.pauseControl()
	save := e.API.Do("PATCH", "/v1/stacks/"+stack, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": fmt.Sprintf(`"%v"`, plan["version"])},
		Body: withConfirm(raise("app", app1, "memory_mb", 1024))})
	if save.Status != 202 || save.Map()["kind"] != "reapply" {
		t.Fatalf("save: %d %s", save.Status, save.Body)
	}
	if busy := e.API.Do("POST", "/v1/stacks/"+stack+"/plan", apitest.Req{Token: e.Member, Body: raise("app", app1, "memory_mb", 2048)}); busy.Status != 409 {
		t.Fatalf("plan during a run: %d %s, want 409", busy.Status, busy.Body)
	}
	_, busyTag := e.get(stack)
	if busy := e.API.Do("PATCH", "/v1/stacks/"+stack, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": busyTag},
		Body: map[string]any{"description": "during"}}); busy.Status != 409 {
		t.Fatalf("edit during a run: %d %s, want 409", busy.Status, busy.Body)
	}
	resume()
	e.waitState(stack, "deployed", 3*time.Minute)
	// The plan was computed from a version the stack has moved past: saving it again is stale.
	if stale := e.API.Do("PATCH", "/v1/stacks/"+stack, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": fmt.Sprintf(`"%v"`, plan["version"])},
		Body: withConfirm(raise("app", app1, "memory_mb", 2048))}); stale.Status != 412 {
		t.Fatalf("saving a plan of a moved stack: %d %s, want 412", stale.Status, stale.Body)
	}
	cards := e.pipeline(stack)
	if cards["app[1]"]["state"] != "succeeded" || cards["app[0]"]["state"] != "skipped" || cards["db[0]"]["state"] != "skipped" {
		t.Fatalf("the re-apply ran %v, want app[1] alone", cards)
	}
	if reason, _ := cards["db[0]"]["reason"].(string); reason != "unchanged" {
		t.Fatalf("an untouched card says %q, want unchanged", reason)
	}
	vms := e.vmsByName()
	if vms["edit-app-1"]["memory"] != "1024" || vms["edit-app-0"]["memory"] != "512" {
		t.Fatalf("memory of app-1 %v, app-0 %v", vms["edit-app-1"]["memory"], vms["edit-app-0"]["memory"])
	}

	// The db changes; its ip does not, so the apps are skipped as unchanged.
	cur, etag = e.get(stack)
	save = e.API.Do("PATCH", "/v1/stacks/"+stack, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": etag},
		Body: withConfirm(raise("db", db0, "memory_mb", 2048))})
	if save.Status != 202 {
		t.Fatalf("save db: %d %s", save.Status, save.Body)
	}
	e.waitState(stack, "deployed", 3*time.Minute)
	cards = e.pipeline(stack)
	if cards["db[0]"]["state"] != "succeeded" || cards["app[0]"]["state"] != "skipped" || cards["app[1]"]["state"] != "skipped" {
		t.Fatalf("cards after the db edit: %v", cards)
	}
	if reason, _ := cards["app[0]"]["reason"].(string); !strings.Contains(reason, "inputs unchanged") {
		t.Fatalf("the skipped dependent says %q, want inputs unchanged", reason)
	}
	e.gateLinesEmpty()
	if vms := e.vmsByName(); vms["edit-db-0"]["memory"] != "2048" {
		t.Fatalf("db memory %v", vms["edit-db-0"]["memory"])
	}
	if n := len(e.Sandbox.Cluster("demo").VMs()); n != 3 {
		t.Fatalf("%d VMs, want 3", n)
	}

	// Duplicate: the answers, not the addresses nor the generated secrets.
	dup := e.API.Do("POST", "/v1/stacks/"+stack+"/duplicate", apitest.Req{Token: e.Member})
	if dup.Status != 201 {
		t.Fatalf("duplicate: %d %s", dup.Status, dup.Body)
	}
	copyOf := dup.Map()
	if copyOf["state"] != "draft" || copyOf["name"] != "edit-copy" || copyOf["template_version"] != cur["template_version"] ||
		copyOf["environment_id"] != cur["environment_id"] || !reflect.DeepEqual(copyOf["labels"], []any{"lab", "blue"}) {
		t.Fatalf("duplicate: %v", copyOf)
	}
	for _, ex := range executions(copyOf, "app") {
		if ex["address_id"] != nil || ex["vm_id"] != nil || ex["node"] == "" || ex["parameters"].(map[string]any)["admin_password"] != nil {
			t.Fatalf("duplicated execution %v: address and VM id must be empty, answers kept, generated secret not copied", ex)
		}
	}
	if got := executions(copyOf, "app")[1]["parameters"].(map[string]any)["memory_mb"]; got != 1024.0 {
		t.Fatalf("duplicated memory_mb %v, want 1024", got)
	}
	// The answer says what was left out, by field.
	var left []string
	for _, nc := range copyOf["not_copied"].([]any) {
		left = append(left, nc.(map[string]any)["field"].(string))
	}
	for _, want := range []string{"jobs.db.executions[0].address_id", "jobs.app.executions[0].address_id", "jobs.app.executions[1].address_id",
		"jobs.app.executions[0].parameters.admin_password"} {
		if !slices.Contains(left, want) {
			t.Errorf("not_copied %v lacks %s", left, want)
		}
	}
	if slices.Contains(left, "jobs.app.executions[0].parameters.memory_mb") {
		t.Errorf("not_copied %v names a copied answer", left)
	}
	if g := e.API.Do("GET", "/v1/stacks/"+copyOf["id"].(string), apitest.Req{Token: e.Member}).Map(); g["not_copied"] != nil {
		t.Errorf("not_copied outside the duplicate's answer: %v", g["not_copied"])
	}
	if again := e.API.Do("POST", "/v1/stacks/"+stack+"/duplicate", apitest.Req{Token: e.Member}); again.Status != 201 || again.Map()["name"] != "edit-copy-2" {
		t.Fatalf("second duplicate: %d %s, want the name edit-copy-2", again.Status, again.Body)
	}
	for _, tc := range []struct {
		name   string
		body   map[string]any
		status int
	}{
		{"a name the team has", map[string]any{"name": "edit-copy"}, 409},
		{"a team not the caller's", map[string]any{"team_id": uuid.NewString()}, 422},
		{"an unknown field", map[string]any{"labels": []string{"x"}}, 422},
	} {
		if r := e.API.Do("POST", "/v1/stacks/"+stack+"/duplicate", apitest.Req{Token: e.Member, Body: tc.body}); r.Status != tc.status {
			t.Errorf("duplicate with %s: %d %s, want %d", tc.name, r.Status, r.Body, tc.status)
		}
	}
}

func withConfirm(body map[string]any) map[string]any {
	body["confirm"] = true
	return body
}

// attachedTo returns the execution an address is attached to, or "" when it is free.
func (e *engine) attachedTo(address string) string {
	e.t.Helper()
	var exec string
	err := e.API.DB.QueryRow(context.Background(), `SELECT coalesce((SELECT execution_id::text FROM address_attachments WHERE address_id = $1), '')`,
		address).Scan(&exec)
	if err != nil {
		e.t.Fatal(err)
	}
	return exec
}

// workspaces lists the Terraform workspaces of a stack that hold state.
func (e *engine) workspaces(stack string) []string {
	e.t.Helper()
	rows, err := e.API.DB.Query(context.Background(), `SELECT workspace FROM terraform_states WHERE workspace LIKE $1 AND state IS NOT NULL ORDER BY workspace`, "s"+stack+"-%")
	if err != nil {
		e.t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		e.t.Fatal(err)
	}
	return names
}

// TestEditAddsRemovesAndReplacesExecutions: one save removes an app VM (its cleanup script
// first, then its VM, workspace and address) and adds two (built, scripts run). The plan
// shows the order the job's replace policy gives: app is add-first, so the new machines are
// built before the old one goes; db is remove-first.
func TestEditAddsRemovesAndReplacesExecutions(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	stack := e.deployed("grow", 1)
	cur, etag := e.get(stack)
	oldApp := executions(cur, "app")[0]
	body := editBody(cur, nil)
	body["jobs"].(map[string]any)["app"] = map[string]any{"executions": []any{e.Machine(2, nil), e.Machine(3, map[string]any{"node": "pve2"})}}

	plan := e.API.Do("POST", "/v1/stacks/"+stack+"/plan", apitest.Req{Token: e.Member, Body: body}).Map()
	if got := planEntries(plan, "order"); !reflect.DeepEqual(got, []string{"create app[1]", "create app[2]", "destroy app[0]"}) {
		t.Fatalf("add-first plan order %v", got)
	}
	if cleanup := entry(plan, "destroy", 0)["cleanup"]; !reflect.DeepEqual(cleanup, []any{"deregister"}) {
		t.Fatalf("destroy cleanup %v, want [deregister]", cleanup)
	}
	addrs := plan["addresses"].(map[string]any)
	if !reflect.DeepEqual(addrs["attach"], []any{e.Addrs[2], e.Addrs[3]}) || !reflect.DeepEqual(addrs["free"], []any{e.Addrs[1]}) {
		t.Fatalf("addresses %v, want attach %v free %v", addrs, e.Addrs[2:4], e.Addrs[1])
	}
	// Replacing the db, which is remove-first: the old one goes before the new one is built,
	// and the apps that read its address run again after.
	dbSwap := editBody(cur, nil)
	dbSwap["jobs"].(map[string]any)["db"] = map[string]any{"executions": []any{e.Machine(4, nil)}}
	swap := e.API.Do("POST", "/v1/stacks/"+stack+"/plan", apitest.Req{Token: e.Member, Body: dbSwap}).Map()
	if got := planEntries(swap, "order"); !reflect.DeepEqual(got, []string{"destroy db[0]", "create db[1]", "dependent app[0]"}) {
		t.Fatalf("remove-first plan order %v", got)
	}

	if r := e.API.Do("PATCH", "/v1/stacks/"+stack, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": etag}, Body: withConfirm(body)}); r.Status != 202 {
		t.Fatalf("save: %d %s", r.Status, r.Body)
	}
	done := e.waitState(stack, "deployed", 3*time.Minute)
	vms := e.vmsByName()
	if len(vms) != 3 || vms["grow-app-0"] != nil || vms["grow-app-1"] == nil || vms["grow-app-2"] == nil || vms["grow-db-0"] == nil {
		t.Fatalf("VMs after the save: %v", vms)
	}
	if got := e.attachedTo(e.Addrs[1]); got != "" {
		t.Fatalf("the removed app's address is still attached to %s", got)
	}
	apps := executions(done, "app")
	if len(apps) != 2 || e.attachedTo(e.Addrs[2]) != apps[0]["id"] || e.attachedTo(e.Addrs[3]) != apps[1]["id"] {
		t.Fatalf("new apps %v and their addresses", apps)
	}
	ws := e.workspaces(stack)
	if contains(ws, fmt.Sprintf("s%s-app-0", stack)) || len(ws) != 3 {
		t.Fatalf("workspaces %v: the removed app's must be gone, three left", ws)
	}
	log := e.logText(stack)
	cleanup, destroyed := strings.Index(log, "deregistering from"), strings.Index(log, "destroyed; workspace")
	if cleanup < 0 || destroyed < 0 || cleanup > destroyed {
		t.Fatalf("the cleanup script must run before the destroy:\n%s", log)
	}
	outs := e.API.Do("GET", "/v1/stacks/"+stack+"/outputs", apitest.Req{Token: e.Member}).Map()["jobs"].(map[string]any)["app"].([]any)
	for _, o := range outs {
		if o.(map[string]any)["outputs"].(map[string]any)["app_url"] == nil {
			t.Fatalf("a new app ran no script: %v", o)
		}
	}
	var state string
	if err := e.API.DB.QueryRow(context.Background(), `SELECT state FROM executions WHERE id = $1`, oldApp["id"]).Scan(&state); err != nil || state != "removed" {
		t.Fatalf("the old app execution is %q (%v), want removed", state, err)
	}
}

// TestEditFinishesAFailedStack: a stack whose deploy failed in its first phase (so its apps
// were held) is edited; the run that applies the edit also builds what failed and what was
// held, and the stack ends deployed.
func TestEditFinishesAFailedStack(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	e.Sandbox.FailNext("POST /nodes/{node}/qemu", 1, 500, "unable to create VM: out of disk space")
	stack := e.Draft("mend", 1)
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "failed", 3*time.Minute)
	if cards := e.pipeline(stack); cards["db[0]"]["state"] != "failed" || cards["app[0]"]["state"] != "held" {
		t.Fatalf("cards %v", cards)
	}
	cur, etag := e.get(stack)
	appID := executions(cur, "app")[0]["id"]
	body := withConfirm(editBody(cur, func(job string, ex map[string]any) {
		if ex["id"] == appID {
			ex["parameters"].(map[string]any)["cores"] = 2
		}
	}))
	plan := e.API.Do("POST", "/v1/stacks/"+stack+"/plan", apitest.Req{Token: e.Member, Body: body}).Map()
	if got := planEntries(plan, "order"); !reflect.DeepEqual(got, []string{"reapply db[0]", "reapply app[0]"}) {
		t.Fatalf("plan %v, want the failed db finished and the held app built", got)
	}
	if k := entry(plan, "reapply", 0)["because"].([]any)[0].(map[string]any)["kind"]; k != "unfinished" {
		t.Fatalf("db because %v, want unfinished", k)
	}
	if r := e.API.Do("PATCH", "/v1/stacks/"+stack, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": etag}, Body: body}); r.Status != 202 {
		t.Fatalf("save: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "deployed", 3*time.Minute)
	vms := e.vmsByName()
	if len(vms) != 2 || vms["mend-app-0"] == nil {
		t.Fatalf("VMs %v", vms)
	}
	if cores := e.Sandbox.Cluster("demo").VMs(); len(cores) == 2 {
		for _, vm := range cores {
			if vm.Name == "mend-app-0" && vm.Config["cores"] != "2" {
				t.Fatalf("app cores %v, want 2", vm.Config["cores"])
			}
		}
	}
}

// TestRemoveAStackWhoseFirstBuildFailed: the first deploy fails in its first phase (the db's VM
// cannot be created), so its app was never built; removing the stack ends removed, with no VM
// left. The app's removal must not run Terraform: its module wants the db's outputs as inputs,
// and a db that was never built has none ("module variables without a value: db_host").
func TestRemoveAStackWhoseFirstBuildFailed(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	e.Sandbox.FailNext("POST /nodes/{node}/qemu", 1, 500, "unable to create VM: out of disk space")
	stack := e.Draft("stillborn", 1)
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "failed", 3*time.Minute)
	if r := e.API.Do("DELETE", "/v1/stacks/"+stack, apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("remove: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "removed", 3*time.Minute)
	if vms := e.vmsByName(); len(vms) != 0 {
		t.Fatalf("VMs left after the removal: %v", vms)
	}
}

// TestUpgradeTemplateDestroysRemovedJobsWithTheirOwnCode: version 2 of the template drops the
// app job and its code. The plan previews the upgrade; members may not upgrade; a version of
// another template is refused; the upgrade destroys the apps first with version 1's code (their
// cleanup runs), then re-pins the db to version 2's commit.
func TestUpgradeTemplateDestroysRemovedJobsWithTheirOwnCode(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	stack := e.deployed("lift", 1)
	cur, etag := e.get(stack)

	def := e.API.Do("GET", "/v1/templates/"+e.Tmpl+"/versions/1", apitest.Req{}).Map()["definition"].(map[string]any)
	def["phases"] = def["phases"].([]any)[:1]
	def["actions"] = []any{}
	commit := e.Repo.Commit(map[string]string{"jobs/app/main.tf": "", "jobs/app/scripts/deregister.sh": "exit 1\n"})
	if v := e.API.Do("POST", "/v1/templates/"+e.Tmpl+"/versions", apitest.Req{Body: map[string]any{"definition": def}}); v.Status != 201 {
		t.Fatalf("version 2: %d %s", v.Status, v.Body)
	}
	other := e.API.Do("POST", "/v1/templates", apitest.Req{Body: map[string]any{"definition": map[string]any{"name": "other", "phases": def["phases"]}}})
	if other.Status != 201 {
		t.Fatalf("other template: %d %s", other.Status, other.Body)
	}

	plan := e.API.Do("POST", "/v1/stacks/"+stack+"/plan", apitest.Req{Token: e.Member, Body: map[string]any{"template_version": 2}}).Map()
	if got := planEntries(plan, "order"); len(got) == 0 || got[0] != "destroy app[0]" {
		t.Fatalf("upgrade plan %v, want the app destroyed first", got)
	}
	if k := entry(plan, "destroy", 0)["because"].([]any)[0].(map[string]any)["kind"]; k != "removed_from_template" {
		t.Fatalf("destroy because %v", k)
	}
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/upgrade-template", apitest.Req{Token: e.Member, Body: map[string]any{"version": 2}}); r.Status != 403 {
		t.Fatalf("a member upgrades: %d", r.Status)
	}
	for _, tc := range []struct {
		name string
		body map[string]any
	}{
		{"another template's version", map[string]any{"version": 1, "template_id": other.Map()["id"]}},
		{"a version that does not exist", map[string]any{"version": 9}},
		{"the current version", map[string]any{"version": 1}},
	} {
		if r := e.API.Do("POST", "/v1/stacks/"+stack+"/upgrade-template", apitest.Req{Body: tc.body}); r.Status != 422 {
			t.Errorf("%s: %d %s, want 422", tc.name, r.Status, r.Body)
		}
	}
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/upgrade-template", apitest.Req{Headers: map[string]string{"If-Match": etag},
		Body: map[string]any{"version": 2}}); r.Status != 202 || r.Map()["kind"] != "upgrade" {
		t.Fatalf("upgrade: %d %s", r.Status, r.Body)
	}
	done := e.waitState(stack, "deployed", 3*time.Minute)
	if _, hasApp := done["jobs"].(map[string]any)["app"]; done["template_version"] != 2.0 || hasApp {
		t.Fatalf("after the upgrade: version %v, jobs %v", done["template_version"], done["jobs"])
	}
	if db := executions(done, "db")[0]; db["commit"] != commit {
		t.Fatalf("db pinned to %v, want version 2's %s", db["commit"], commit)
	}
	vms := e.vmsByName()
	if len(vms) != 1 || vms["lift-db-0"] == nil {
		t.Fatalf("VMs %v, want the db alone", vms)
	}
	if log := e.logText(stack); !strings.Contains(log, "deregistering from") {
		t.Fatalf("the removed app's cleanup (version 1's code) did not run:\n%s", log)
	}
	_ = cur
}

// TestRemoveAndForceRemove: removing a deployed stack destroys its VMs (cleanup first),
// frees its addresses, VM ids, Terraform state and logs, and keeps its activity. A removal
// that fails leaves the stack failed: deploy and edits are refused, retry finishes the
// removal. Force-remove (admins, failed stacks) lists what it leaves behind, then unlinks the
// stack without destroying anything, and its manifest can be downloaded.
func TestRemoveAndForceRemove(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	gone := e.deployed("gone", 1)
	if r := e.API.Do("DELETE", "/v1/stacks/"+gone, apitest.Req{Token: e.Member}); r.Status != 202 || r.Map()["kind"] != "remove" {
		t.Fatalf("remove: %d %s", r.Status, r.Body)
	}
	e.waitState(gone, "removed", 3*time.Minute)
	if vms := e.vmsByName(); len(vms) != 0 {
		t.Fatalf("VMs left: %v", vms)
	}
	// A snippet holds its machine's SSH host private key: it goes with the machine.
	if left := e.snippets(); len(left) != 0 {
		t.Fatalf("cloud-init snippets left on the nodes: %v", left)
	}
	e.gateLinesEmpty()
	for _, a := range e.Addrs[:2] {
		if got := e.attachedTo(a); got != "" {
			t.Fatalf("address %s still attached to %s", a, got)
		}
	}
	var ids, lines, activity int
	ctx := context.Background()
	_ = e.API.DB.QueryRow(ctx, `SELECT count(*) FROM vm_ids v JOIN executions x ON x.id = v.execution_id WHERE x.stack_id = $1`, gone).Scan(&ids)
	_ = e.API.DB.QueryRow(ctx, `SELECT count(*) FROM log_lines WHERE stack_id = $1`, gone).Scan(&lines)
	_ = e.API.DB.QueryRow(ctx, `SELECT count(*) FROM activity WHERE object_id = $1`, gone).Scan(&activity)
	if ids != 0 || lines != 0 || len(e.workspaces(gone)) != 0 || activity < 3 {
		t.Fatalf("after removal: %d VM ids, %d log lines, workspaces %v, %d activity records", ids, lines, e.workspaces(gone), activity)
	}
	if r := e.API.Do("POST", "/v1/stacks/"+gone+"/force-remove", apitest.Req{}); r.Status != 409 {
		t.Fatalf("force-remove of a removed stack: %d", r.Status)
	}

	// A removal that fails: the sandbox refuses to delete VMs.
	stuck := e.deployed("stuck", 1)
	if r := e.API.Do("POST", "/v1/stacks/"+stuck+"/force-remove", apitest.Req{Body: map[string]any{"confirm": true}}); r.Status != 409 {
		t.Fatalf("force-remove of a deployed stack: %d %s, want 409", r.Status, r.Body)
	}
	e.Sandbox.FailNext("DELETE /nodes/{node}/qemu/{vmid}", 100, 500, "VM is in use by a backup job")
	if r := e.API.Do("DELETE", "/v1/stacks/"+stuck, apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("remove: %d %s", r.Status, r.Body)
	}
	failed := e.waitState(stuck, "failed", 3*time.Minute)
	if acts := stringsOf(failed["allowed_actions"]); !reflect.DeepEqual(acts, []string{"retry_failed", "remove"}) {
		t.Fatalf("a failed removal offers %v to a member", acts)
	}
	if r := e.API.Do("POST", "/v1/stacks/"+stuck+"/deploy", apitest.Req{Token: e.Member}); r.Status != 409 {
		t.Fatalf("deploy after a failed removal: %d, want 409", r.Status)
	}
	if r := e.API.Do("POST", "/v1/stacks/"+stuck+"/plan", apitest.Req{Token: e.Member, Body: map[string]any{}}); r.Status != 409 {
		t.Fatalf("plan after a failed removal: %d, want 409", r.Status)
	}
	if r := e.API.Do("POST", "/v1/stacks/"+stuck+"/force-remove", apitest.Req{Token: e.Member}); r.Status != 403 {
		t.Fatalf("a member force-removes: %d, want 403", r.Status)
	}
	preview := e.API.Do("POST", "/v1/stacks/"+stuck+"/force-remove", apitest.Req{})
	if preview.Status != 200 || preview.Map()["confirmed"] != false {
		t.Fatalf("force-remove preview: %d %s", preview.Status, preview.Body)
	}
	m := preview.Map()["manifest"].(map[string]any)
	if len(m["vms"].([]any)) != 2 || len(m["addresses"].([]any)) != 2 || len(m["workspaces"].([]any)) != 2 {
		t.Fatalf("manifest %v: want both VMs (id, node), both addresses and both workspaces", m)
	}
	if s, _ := e.get(stuck); s["state"] != "failed" {
		t.Fatalf("a preview changed the stack: %v", s["state"])
	}

	// Retry finishes the removal once the sandbox deletes VMs again.
	e.Sandbox.FailNext("DELETE /nodes/{node}/qemu/{vmid}", 0, 0, "")
	if r := e.API.Do("POST", "/v1/stacks/"+stuck+"/retry", apitest.Req{Token: e.Member}); r.Status != 202 || r.Map()["kind"] != "remove" {
		t.Fatalf("retry of a failed removal: %d %s", r.Status, r.Body)
	}
	e.waitState(stuck, "removed", 3*time.Minute)

	// Force-remove: a stack that failed to deploy, unlinked with its VMs left in place.
	broken := e.deployed("broken", 1)
	e.Sandbox.FailNext("DELETE /nodes/{node}/qemu/{vmid}", 100, 500, "VM is in use by a backup job")
	e.API.Do("DELETE", "/v1/stacks/"+broken, apitest.Req{Token: e.Member})
	e.waitState(broken, "failed", 3*time.Minute)
	before := len(e.Sandbox.Cluster("demo").VMs())
	r := e.API.Do("POST", "/v1/stacks/"+broken+"/force-remove", apitest.Req{Body: map[string]any{"confirm": true}})
	if r.Status != 200 || r.Map()["confirmed"] != true {
		t.Fatalf("force-remove: %d %s", r.Status, r.Body)
	}
	if s, _ := e.get(broken); s["state"] != "removed" {
		t.Fatalf("force-removed stack is %v", s["state"])
	}
	if n := len(e.Sandbox.Cluster("demo").VMs()); n != before || n == 0 {
		t.Fatalf("force-remove destroyed VMs: %d before, %d after", before, n)
	}
	for _, a := range e.Addrs[:2] {
		if got := e.attachedTo(a); got != "" {
			t.Fatalf("address %s still attached after force-remove", a)
		}
	}
	dl := e.API.Do("GET", "/v1/stacks/"+broken+"/abandon-manifest", apitest.Req{})
	if dl.Status != 200 || !strings.Contains(dl.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("manifest download: %d %v", dl.Status, dl.Header)
	}
	vm := dl.Map()["vms"].([]any)[0].(map[string]any)
	if vm["vm_id"] == nil || vm["node"] == "" || vm["pool"] != "dev" || len(vm["tags"].([]any)) == 0 {
		t.Fatalf("manifest VM %v: want id, node, pool and tags", vm)
	}
	if r := e.API.Do("GET", "/v1/stacks/"+gone+"/abandon-manifest", apitest.Req{}); r.Status != 404 {
		t.Fatalf("manifest of a stack removed normally: %d, want 404", r.Status)
	}
}

// TestEditsRoundTrip: an execution sent back exactly as GET shows it is accepted (its
// read-only fields equal to the current ones) and changes nothing; one sent as its id and the
// field to change changes that field only; a read-only field that differs is refused naming
// it; an execution the edit adds gets the answers that have one option, as at creation.
func TestEditsRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	stack := e.deployed("trip", 1)
	d, etag := e.get(stack)
	asShown := map[string]any{"jobs": map[string]any{}, "confirm": true}
	for job, j := range d["jobs"].(map[string]any) {
		asShown["jobs"].(map[string]any)[job] = j
	}
	r := e.API.Do("PATCH", "/v1/stacks/"+stack, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": etag}, Body: asShown})
	if r.Status != 200 {
		t.Fatalf("the stack sent back as GET shows it: %d %s, want 200 (nothing to apply)", r.Status, r.Body)
	}
	d, etag = e.get(stack)
	app := executions(d, "app")[0]

	wrong := map[string]any{"jobs": map[string]any{"app": map[string]any{"executions": []any{map[string]any{"id": app["id"], "vm_id": 4242}}}}, "confirm": true}
	r = e.API.Do("PATCH", "/v1/stacks/"+stack, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": etag}, Body: wrong})
	if r.Status != 422 || !strings.Contains(strings.Join(r.Problem().Fields(), " "), "jobs.app.executions[0].vm_id") {
		t.Fatalf("a changed vm_id: %d %s, want 422 naming it", r.Status, r.Body)
	}

	// Only the id and one parameter; and a new execution with only what has several options.
	partial := map[string]any{"confirm": true, "jobs": map[string]any{"app": map[string]any{"executions": []any{
		map[string]any{"id": app["id"], "parameters": map[string]any{"cores": 2}},
		map[string]any{"address_id": e.Addrs[5], "node": "pve2", "pool": "dev"},
	}}}}
	r = e.API.Do("PATCH", "/v1/stacks/"+stack, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": etag}, Body: partial})
	if r.Status != 202 {
		t.Fatalf("a partial edit: %d %s", r.Status, r.Body)
	}
	d = e.waitState(stack, "deployed", 3*time.Minute)
	apps := executions(d, "app")
	if len(apps) != 2 {
		t.Fatalf("apps after the edit: %v", apps)
	}
	kept, added := apps[0], apps[1]
	params := kept["parameters"].(map[string]any)
	if params["cores"] != float64(2) || kept["address_id"] != app["address_id"] || kept["node"] != app["node"] || kept["ssh_key_id"] != app["ssh_key_id"] ||
		params["admin_password"] == nil {
		t.Fatalf("app[0] after changing its cores only: %v (before: %v)", kept, app)
	}
	if added["ssh_key_id"] != e.Key || added["proxmox_server_id"] != e.Server {
		t.Fatalf("the added execution's single-option answers were not preselected: %v", added)
	}
}
