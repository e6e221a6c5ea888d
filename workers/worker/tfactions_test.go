package worker_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/testkit"
)

// poolModule and poolScript are the sandbox-vm example's create-pool action.
const (
	poolModule = "actions/pool/main.tf"
	poolScript = "actions/pool/pve-pool.sh"
)

// receiptOutput gives the example's create-pool module a sensitive output, to be kept sealed,
// kept out of the log, and revealed; and has its script print the Proxmox token it is given,
// which the log must mask.
func receiptOutput(t testing.TB) map[string]string {
	script := strings.Replace(labtest.ExampleFile(t, poolScript), "create)\n", "create)\n\techo \"calling PVE with $PROXMOX_VE_API_TOKEN\"\n", 1)
	if !strings.Contains(script, "calling PVE") {
		t.Fatal("the example's pool script changed: cannot make it print its token")
	}
	return map[string]string{poolScript: script, poolModule: labtest.ExampleFile(t, poolModule) + `
output "receipt" {
  value     = sha256("receipt of ${var.pool}")
  sensitive = true
}
`}
}

// hangingCreate makes the example's pool script hang when it creates a pool — every time, or,
// with a marker path, only the first time (it leaves the marker). It hangs while the Terraform
// that runs it (its shell's parent) lives: a killed or interrupted Terraform's provisioner
// processes are orphaned, and would otherwise outlive the test.
func hangingCreate(t testing.TB, marker string) map[string]string {
	wait := "\techo hanging >&2\n\ttf=$(cut -d' ' -f4 /proc/$PPID/stat)\n\twhile kill -0 \"$tf\" 2>/dev/null; do sleep 0.2; done\n\texit 1\n"
	hang := wait
	if marker != "" {
		hang = fmt.Sprintf("\tif [[ ! -e %q ]]; then\n\t\ttouch %q\n%s\tfi\n", marker, marker, wait)
	}
	script := strings.Replace(labtest.ExampleFile(t, poolScript), "create)\n", "create)\n"+hang, 1)
	if !strings.Contains(script, "hanging") {
		t.Fatal("the example's pool script changed: cannot make it hang")
	}
	return map[string]string{poolScript: script}
}

// pools returns the sandbox's resource pools: id → comment.
func (e *engine) pools() map[string]string {
	e.t.Helper()
	var list []struct {
		ID      string `json:"poolid"`
		Comment string `json:"comment"`
	}
	if err := e.proxmox().Get(context.Background(), "/pools", &list); err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range list {
		out[p.ID] = p.Comment
	}
	return out
}

// createPool runs the create-pool action and returns its run's id.
func (e *engine) createPool(stack, pool, comment string) string {
	e.t.Helper()
	r := e.API.Do("POST", "/v1/stacks/"+stack+"/actions/create-pool", apitest.Req{Token: e.Member,
		Body: map[string]any{"parameters": map[string]any{"pool": pool, "comment": comment}}})
	if r.Status != 202 {
		e.t.Fatalf("run create-pool: %d %s", r.Status, r.Body)
	}
	return r.Map()["id"].(string)
}

// runState returns the state of a run of the stack.
func (e *engine) runState(stack, run string) string {
	e.t.Helper()
	return e.API.Do("GET", "/v1/stacks/"+stack+"/runs/"+run, apitest.Req{Token: e.Member}).Map()["run"].(map[string]any)["state"].(string)
}

// instances returns the stack's action instances, newest first.
func (e *engine) instances(stack string) []map[string]any {
	e.t.Helper()
	r := e.API.Do("GET", "/v1/stacks/"+stack+"/action-instances", apitest.Req{Token: e.Member})
	if r.Status != 200 {
		e.t.Fatalf("action instances: %d %s", r.Status, r.Body)
	}
	var out []map[string]any
	for _, x := range r.Map()["items"].([]any) {
		out = append(out, x.(map[string]any))
	}
	return out
}

// TestTerraformActionInstancesOnTheSandbox: the example's create-pool action, run twice with
// other values, makes two pools in the sandbox and leaves two instances (answers, outputs, the
// secret one sealed, out of the log and revealable); undoing the first deletes its pool only;
// undoing it again is refused; the stack's removal undoes the other instance before anything
// else is destroyed (its log says so in that order) and deletes its pool.
func TestTerraformActionInstancesOnTheSandbox(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{override: receiptOutput(t)})
	stack := e.deployed("pools", 1)
	dbIP := e.API.Do("GET", "/v1/stacks/"+stack+"/outputs", apitest.Req{Token: e.Member}).Map()["jobs"].(map[string]any)["db"].([]any)[0].(map[string]any)["outputs"].(map[string]any)["ip"].(string)

	started := time.Now()
	first := e.createPool(stack, "hz-first", "for the first team")
	e.waitState(stack, "deployed", 2*time.Minute)
	t.Logf("the first instance applied in %s", time.Since(started).Round(time.Millisecond))
	second := e.createPool(stack, "hz-second", "for the second team")
	e.waitState(stack, "deployed", 2*time.Minute)
	for _, run := range []string{first, second} {
		if s := e.runState(stack, run); s != "succeeded" {
			t.Fatalf("create-pool run %s: %s\nlog:\n%s", run, s, e.logText(stack))
		}
	}
	pools := e.pools()
	if !strings.HasPrefix(pools["hz-first"], "for the first team (pools-create-pool-1, database "+dbIP+")") ||
		!strings.HasPrefix(pools["hz-second"], "for the second team (pools-create-pool-2,") {
		t.Fatalf("the sandbox's pools: %v", pools)
	}
	ins := e.instances(stack)
	if len(ins) != 2 || ins[0]["run_id"] != second || ins[1]["run_id"] != first || ins[1]["state"] != "active" {
		t.Fatalf("the instances: %v", ins)
	}
	old := ins[1]
	if old["outputs"].(map[string]any)["pool"] != "hz-first" || old["outputs"].(map[string]any)["receipt"].(map[string]any)["secret"] != true ||
		old["inputs"].(map[string]any)["db_host"] != nil || old["parameters"].(map[string]any)["comment"] != "for the first team" {
		t.Fatalf("the first instance: %v", old)
	}
	receipt := sha256.Sum256([]byte("receipt of hz-first"))
	want := hex.EncodeToString(receipt[:])
	rv := e.API.Do("POST", "/v1/stacks/"+stack+"/runs/"+first+"/outputs/receipt/reveal", apitest.Req{Token: e.Member})
	if rv.Status != 200 || rv.Map()["value"] != want {
		t.Fatalf("reveal the receipt: %d %s", rv.Status, rv.Body)
	}
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/runs/"+first+"/outputs/receipt/reveal", apitest.Req{Token: e.Viewer}); r.Status != 403 {
		t.Fatalf("a viewer revealed: %d", r.Status)
	}
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/runs/"+first+"/outputs/pool/reveal", apitest.Req{Token: e.Member}); r.Status != 404 {
		t.Fatalf("reveal of an output that is not secret: %d", r.Status)
	}
	log := e.logText(stack)
	if strings.Contains(log, want) || strings.Contains(log, e.Sandbox.Cluster("demo").TokenSecret()) || !strings.Contains(log, "calling PVE with") {
		t.Fatalf("the secret output or the Proxmox token is in the log (or the script did not run):\n%s", log)
	}
	if card := e.runPipeline(stack, second)["create-pool[2]"]; card["kind"] != "action_apply" || card["state"] != "succeeded" {
		t.Fatalf("the action's pipeline card: %v", e.runPipeline(stack, second))
	}
	var reveals int
	if err := e.API.DB.QueryRow(t.Context(), `SELECT count(*) FROM activity WHERE action = 'stack.output.reveal' AND details->>'run_id' = $1`, first).Scan(&reveals); err != nil || reveals != 1 {
		t.Fatalf("%d reveals recorded (%v), want 1", reveals, err)
	}

	// Undo the first: its pool goes, the second's stays.
	undo := e.API.Do("DELETE", "/v1/stacks/"+stack+"/action-instances/"+old["id"].(string), apitest.Req{Token: e.Member})
	if undo.Status != 202 {
		t.Fatalf("undo: %d %s", undo.Status, undo.Body)
	}
	e.waitState(stack, "deployed", 2*time.Minute)
	if s := e.runState(stack, undo.Map()["id"].(string)); s != "succeeded" {
		t.Fatalf("the undo: %s\nlog:\n%s", s, e.logText(stack))
	}
	pools = e.pools()
	if _, ok := pools["hz-first"]; ok || pools["hz-second"] == "" {
		t.Fatalf("after the undo of the first instance, the pools: %v", pools)
	}
	if ins := e.instances(stack); len(ins) != 1 || ins[0]["run_id"] != second {
		t.Fatalf("the instances after the undo: %v", ins)
	}
	if r := e.API.Do("DELETE", "/v1/stacks/"+stack+"/action-instances/"+old["id"].(string), apitest.Req{Token: e.Member}); r.Status != 409 {
		t.Fatalf("undo twice: %d %s", r.Status, r.Body)
	}

	// The removal undoes the second instance first.
	rm := e.API.Do("DELETE", "/v1/stacks/"+stack, apitest.Req{Token: e.Member})
	if rm.Status != 202 {
		t.Fatalf("remove: %d %s", rm.Status, rm.Body)
	}
	e.waitState(stack, "removed", 3*time.Minute)
	if _, ok := e.pools()["hz-second"]; ok {
		t.Fatal("the removal left the second instance's pool")
	}
	entries, err := e.API.Deps.Redis.XRange(t.Context(), e.API.Deps.Logs.Key(mustUUID(t, rm.Map()["id"].(string))), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, en := range entries {
		if job, _ := en.Values["job"].(string); job != "" && (len(order) == 0 || order[len(order)-1] != job) {
			order = append(order, job)
		}
	}
	if len(order) != 3 || order[0] != "create-pool" {
		t.Fatalf("the removal's log, job by job: %v, want create-pool, then app and db", order)
	}
	var undone int
	if err := e.API.DB.QueryRow(t.Context(), `SELECT count(*) FROM action_instances WHERE stack_id = $1 AND ended = 'undone'`, stack).Scan(&undone); err != nil || undone != 2 {
		t.Fatalf("%d instances undone (%v), want 2", undone, err)
	}
}

// TestCancelAHungTerraformAction: a terraform action hung in its apply is interrupted by a
// cancel: its run ends canceled, the stack returns to deployed, and the instance it left is
// failed — and can be undone, which removes what it may have made.
func TestCancelAHungTerraformAction(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{override: hangingCreate(t, "")})
	stack := e.deployed("hungtf", 1)
	run := e.createPool(stack, "hz-hung", "")
	testkit.Eventually(t, 2*time.Minute, "the action never started hanging", func() bool { return strings.Contains(e.logText(stack), "hanging") })
	started := time.Now()
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/cancel", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "deployed", time.Minute)
	t.Logf("canceled in %s", time.Since(started).Round(time.Millisecond))
	if s := e.runState(stack, run); s != "canceled" {
		t.Fatalf("the hung action's run: %s", s)
	}
	ins := e.instances(stack)
	if len(ins) != 1 || ins[0]["state"] != "failed" {
		t.Fatalf("the instance of a canceled apply: %v", ins)
	}
	undo := e.API.Do("DELETE", "/v1/stacks/"+stack+"/action-instances/"+ins[0]["id"].(string), apitest.Req{Token: e.Member})
	if undo.Status != 202 {
		t.Fatalf("undo: %d %s", undo.Status, undo.Body)
	}
	e.waitState(stack, "deployed", 2*time.Minute)
	if s := e.runState(stack, undo.Map()["id"].(string)); s != "succeeded" {
		t.Fatalf("the undo of a canceled instance: %s\nlog:\n%s", s, e.logText(stack))
	}
	if ins := e.instances(stack); len(ins) != 0 {
		t.Fatalf("instances after the undo: %v", ins)
	}
	if _, ok := e.pools()["hz-hung"]; ok {
		t.Fatal("the pool of the canceled instance is left")
	}
}

// TestWorkerKilledDuringATerraformAction: the worker process applying a terraform action is
// killed (SIGKILL); another worker takes the step over, the apply ends, the stack is deployed
// again (not stuck busy) with one active instance, and the sandbox holds its pool once.
func TestWorkerKilledDuringATerraformAction(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "hung-once")
	e := newEngine(t, engineOpts{override: hangingCreate(t, marker)})
	stack := e.deployed("killtf", 1)
	e.worker.Shutdown()

	proc := e.workerProcess(t)

	run := e.createPool(stack, "hz-phoenix", "")
	testkit.Eventually(t, 2*time.Minute, "the action did not get going in the worker process", func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()
	killed := time.Now()

	e.startWorker(engineOpts{})
	testkit.Eventually(t, 3*time.Minute, "the killed action was not taken over", func() bool {
		if err := e.worker.Reconcile.Pass(context.Background()); err != nil {
			t.Logf("reconcile: %v", err)
		}
		return e.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: e.Member}).Map()["state"] == "deployed"
	})
	t.Logf("kill to deployed: %s", time.Since(killed).Round(time.Second))
	if s := e.runState(stack, run); s != "succeeded" {
		t.Fatalf("the action's run after the takeover: %s\nlog:\n%s", s, e.logText(stack))
	}
	if ins := e.instances(stack); len(ins) != 1 || ins[0]["state"] != "active" {
		t.Fatalf("the instances after the takeover: %v", ins)
	}
	if _, ok := e.pools()["hz-phoenix"]; !ok {
		t.Fatal("the action's pool is missing after the takeover")
	}
	var attempt int
	if err := e.API.DB.QueryRow(t.Context(), `SELECT attempt FROM steps WHERE run_id = $1`, uuid.MustParse(run)).Scan(&attempt); err != nil || attempt < 2 {
		t.Fatalf("the action's step attempt is %d (%v), want a new attempt after the kill", attempt, err)
	}
}

// TestUpgradeKeepsActionInstancesUndoable: version 2 of the template drops the create-pool
// action and its module. The instance made under version 1 stays, with its version, after the
// upgrade, and its undo runs version 1's code: the pool goes.
func TestUpgradeKeepsActionInstancesUndoable(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	stack := e.deployed("keep", 1)
	run := e.createPool(stack, "hz-kept", "made under version 1")
	e.waitState(stack, "deployed", 2*time.Minute)
	if s := e.runState(stack, run); s != "succeeded" {
		t.Fatalf("create-pool: %s\nlog:\n%s", s, e.logText(stack))
	}

	def := e.API.Do("GET", "/v1/templates/"+e.Tmpl+"/versions/1", apitest.Req{}).Map()["definition"].(map[string]any)
	def["actions"] = []any{}
	e.Repo.Commit(map[string]string{poolModule: "", poolScript: ""})
	if v := e.API.Do("POST", "/v1/templates/"+e.Tmpl+"/versions", apitest.Req{Body: map[string]any{"definition": def}}); v.Status != 201 {
		t.Fatalf("version 2: %d %s", v.Status, v.Body)
	}
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/upgrade-template", apitest.Req{Body: map[string]any{"version": 2}}); r.Status != 202 {
		t.Fatalf("upgrade: %d %s", r.Status, r.Body)
	}
	if done := e.waitState(stack, "deployed", 3*time.Minute); done["template_version"] != 2.0 {
		t.Fatalf("after the upgrade: version %v", done["template_version"])
	}
	if n := len(e.API.Do("GET", "/v1/stacks/"+stack+"/actions", apitest.Req{Token: e.Member}).Map()["items"].([]any)); n != 0 {
		t.Fatalf("version 2 offers %d actions, want none", n)
	}
	ins := e.instances(stack)
	if len(ins) != 1 || ins[0]["template_version"] != 1.0 || ins[0]["state"] != "active" {
		t.Fatalf("the instance after the upgrade: %v", ins)
	}
	undo := e.API.Do("DELETE", "/v1/stacks/"+stack+"/action-instances/"+ins[0]["id"].(string), apitest.Req{Token: e.Member})
	if undo.Status != 202 {
		t.Fatalf("undo: %d %s", undo.Status, undo.Body)
	}
	e.waitState(stack, "deployed", 2*time.Minute)
	if s := e.runState(stack, undo.Map()["id"].(string)); s != "succeeded" {
		t.Fatalf("the undo with version 1's code: %s\nlog:\n%s", s, e.logText(stack))
	}
	if _, ok := e.pools()["hz-kept"]; ok {
		t.Fatal("the pool of the instance made under version 1 is left")
	}
}

// TestForceRetryRepinsTerraformActions: a deployed stack fails (its app's script breaks on a
// run again); a failed stack whose machines exist is still offered its actions. A commit is
// pushed to the create-pool action's branch: a plain retry leaves the action pinned where its
// template version pinned it (the action, run on the failed stack, applies the old code), a
// force retry re-pins it to the new commit (shown on the stack) and its next run applies the
// new code, while the instance made before keeps its own commit.
func TestForceRetryRepinsTerraformActions(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "break-app")
	broken := labtest.AppScriptWith(t, fmt.Sprintf("if [[ -e %q ]]; then echo 'configure: broken on purpose' >&2; exit 3; fi\n", marker))
	e := newEngine(t, engineOpts{override: map[string]string{labtest.AppScript: broken}})
	stack := e.deployed("repin", 1)
	version := e.API.Do("GET", "/v1/templates/"+e.Tmpl+"/versions/1", apitest.Req{}).Map()
	pinned, _ := version["commits"].(map[string]any)["actions"].(map[string]any)["create-pool"].(string)
	if detail, _ := e.get(stack); pinned == "" || detail["action_commits"].(map[string]any)["create-pool"] != pinned {
		t.Fatalf("the stack's action commits %v, want the version's %q", detail["action_commits"], pinned)
	}

	// The stack fails; it was deployed, so its actions may still run.
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/jobs/app/executions/0/run-again", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("run again: %d %s", r.Status, r.Body)
	}
	failed := e.waitState(stack, "failed", 3*time.Minute)
	if actions := stringsOf(failed["allowed_actions"]); !contains(actions, "run_action") || !contains(actions, "force_retry") {
		t.Fatalf("a failed stack that was deployed offers %v", actions)
	}

	v2 := strings.Replace(labtest.ExampleFile(t, poolModule), `(${var.horizon_name}, database`, `(v2 ${var.horizon_name}, database`, 1)
	if !strings.Contains(v2, "(v2 ") {
		t.Fatal("the example's pool module changed: cannot mark its new code")
	}
	fixed := e.Repo.Commit(map[string]string{poolModule: v2})

	// A plain retry (the app still broken) pins nothing new: the action applies the old code.
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/retry", apitest.Req{Token: e.Member, Body: map[string]any{"mode": "failed"}}); r.Status != 202 {
		t.Fatalf("retry: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "failed", 3*time.Minute)
	before := e.createPool(stack, "hz-before", "plain")
	if after := e.waitState(stack, "failed", 2*time.Minute); after["action_commits"].(map[string]any)["create-pool"] != pinned {
		t.Fatalf("after a plain retry the action is pinned to %v, want %s", after["action_commits"], pinned)
	}
	if s := e.runState(stack, before); s != "succeeded" {
		t.Fatalf("create-pool on the failed stack: %s\nlog:\n%s", s, e.logText(stack))
	}
	if c := e.pools()["hz-before"]; !strings.HasPrefix(c, "plain (repin-create-pool-1,") {
		t.Fatalf("the pool made after a plain retry: %q, want the old code's comment", c)
	}

	// A force retry (the app fixed) re-pins the action to its branch's head.
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/retry", apitest.Req{Token: e.Member, Body: map[string]any{"mode": "force"}}); r.Status != 202 {
		t.Fatalf("force retry: %d %s", r.Status, r.Body)
	}
	if done := e.waitState(stack, "deployed", 3*time.Minute); done["action_commits"].(map[string]any)["create-pool"] != fixed {
		t.Fatalf("after a force retry the action is pinned to %v, want %s", done["action_commits"], fixed)
	}
	after := e.createPool(stack, "hz-after", "forced")
	e.waitState(stack, "deployed", 2*time.Minute)
	if s := e.runState(stack, after); s != "succeeded" {
		t.Fatalf("create-pool after the force retry: %s\nlog:\n%s", s, e.logText(stack))
	}
	if c := e.pools()["hz-after"]; !strings.HasPrefix(c, "forced (v2 repin-create-pool-2,") {
		t.Fatalf("the pool made after a force retry: %q, want the new code's comment", c)
	}
	ins := e.instances(stack)
	if len(ins) != 2 || ins[0]["commit"] != fixed || ins[1]["commit"] != pinned {
		t.Fatalf("the instances' commits: %v / %v, want %s / %s", ins[0]["commit"], ins[1]["commit"], fixed, pinned)
	}
}
