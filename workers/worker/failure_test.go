package worker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/queue"
	"horizon/shared/testkit"
)

// TestCancelInterruptsAHungBuild: a VM create that never finishes (the sandbox's hang knob)
// would keep the stack busy forever; cancel interrupts Terraform, the run ends canceled, the
// stack failed, the later phase's steps canceled, and the node's gate is free again.
func TestCancelInterruptsAHungBuild(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	e.Sandbox.HangTasks("qmcreate")
	t.Cleanup(func() { e.Sandbox.ReleaseTasks("qmcreate") })
	stack := e.Draft("hang", 1)
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	testkit.Eventually(t, 2*time.Minute, "the db build did not start", func() bool {
		return e.pipeline(stack)["db[0]"]["state"] == "running" && len(e.Sandbox.Cluster("demo").VMs()) > 0
	})
	r := e.API.Do("POST", "/v1/stacks/"+stack+"/cancel", apitest.Req{Token: e.Member})
	if r.Status != 202 || r.Map()["state"] != "canceling" {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	started := time.Now()
	final := e.waitState(stack, "failed", time.Minute)
	t.Logf("cancel to failed: %s", time.Since(started).Round(time.Millisecond))
	runs := e.API.Do("GET", "/v1/stacks/"+stack+"/runs", apitest.Req{Token: e.Member}).Map()["items"].([]any)
	if runs[0].(map[string]any)["state"] != "canceled" {
		t.Fatalf("run: %v", runs[0])
	}
	cards := e.pipeline(stack)
	if cards["db[0]"]["state"] != "canceled" || cards["app[0]"]["state"] != "canceled" {
		t.Fatalf("cards: db %v, app %v", cards["db[0]"]["state"], cards["app[0]"]["state"])
	}
	if !contains(stringsOf(final["allowed_actions"]), "retry_failed") {
		t.Fatalf("a canceled stack offers %v, want a retry", final["allowed_actions"])
	}
	status, err := e.API.Deps.Gate.Status(context.Background(), queue.GateNode(mustUUID(t, e.Server), "pve1"))
	if err != nil || status.Holder != "" {
		t.Fatalf("the node gate is still held by %q (%v) after the run ended", status.Holder, err)
	}
}

// TestChangedHostKeyFailsBeforeUploading: a node whose SSH host key changed since it was
// pinned is refused during key exchange; the step fails naming both fingerprints and nothing
// reaches the node.
func TestChangedHostKeyFailsBeforeUploading(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	pinned := e.Sandbox.Cluster("demo").Node("pve1").HostKeyFingerprint()
	presented, err := e.Sandbox.Cluster("demo").RotateHostKey("pve1")
	if err != nil {
		t.Fatal(err)
	}
	stack := e.Draft("keys", 1)
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "failed", 2*time.Minute)
	card := e.pipeline(stack)["db[0]"]
	msg, _ := card["error"].(string)
	if card["state"] != "failed" || !strings.Contains(msg, pinned) || !strings.Contains(msg, presented) {
		t.Fatalf("db card: %v, want a host-key error naming %s and %s", card, pinned, presented)
	}
	if app := e.pipeline(stack)["app[0]"]; app["state"] != "held" {
		t.Fatalf("app card %v, want held (an earlier phase failed)", app["state"])
	}
	if n := len(e.Sandbox.Cluster("demo").Node("pve1").Uploads()); n != 0 {
		t.Fatalf("%d uploads reached the node with the changed key", n)
	}
	if len(e.Sandbox.Cluster("demo").VMs()) != 0 {
		t.Fatal("a VM was created though its cloud-init could not be uploaded")
	}
}

// TestReconcilerRecoversARunRedisLost: Redis loses the task between the API's commit and a
// worker's pickup; the reconciler finds the run in Postgres and the stack deploys.
func TestReconcilerRecoversARunRedisLost(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{noWorker: true})
	stack := e.Draft("lost", 1)
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	ctx := context.Background()
	// Everything Asynq holds for this installation is gone, as after a FLUSHALL.
	iter := e.API.Redis.Scan(ctx, 0, "asynq:{"+e.API.Deps.Namespace+"*", 1000).Iterator()
	deleted := 0
	for iter.Next(ctx) {
		e.API.Redis.Del(ctx, iter.Val())
		deleted++
	}
	if deleted == 0 {
		t.Fatal("no queued task was found to lose")
	}
	e.startWorker(engineOpts{})
	if err := e.worker.Reconcile.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	e.waitState(stack, "deployed", 3*time.Minute)
}

// TestFailedScriptAndRetries: the second app VM's configure script fails at the pinned commit.
// The stack fails with that card's first error line while the rest succeeded; retry reruns only
// that execution (and fails again: same commit); after a fix is pushed, force retry re-pins the
// job to its branch's newest commit and the stack ends deployed with no duplicate VM.
func TestFailedScriptAndRetries(t *testing.T) {
	t.Parallel()
	broken := labtest.AppScriptWith(t, "if [ \"$HORIZON_EXECUTION\" = 1 ]; then echo 'progress: 50%' >&2; echo \"configure: the license server refused key $admin_password\" >&2; exit 3; fi\n")
	e := newEngine(t, engineOpts{override: map[string]string{labtest.AppScript: broken}})
	stack := e.Draft("flaky", 2)
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	failed := e.waitState(stack, "failed", 3*time.Minute)
	cards := e.pipeline(stack)
	if cards["app[1]"]["state"] != "failed" || cards["db[0]"]["state"] != "succeeded" || cards["app[0]"]["state"] != "succeeded" {
		t.Fatalf("cards: %v %v %v (errors %v / %v / %v)", cards["db[0]"]["state"], cards["app[0]"]["state"], cards["app[1]"]["state"],
			cards["db[0]"]["error"], cards["app[0]"]["error"], cards["app[1]"]["error"])
	}
	// The card shows why, as the script said it last on stderr, with the secret masked.
	if msg, _ := cards["app[1]"]["error"].(string); msg != "configure: the license server refused key [masked] (scripts configure exited with status 3)" {
		t.Fatalf("the failed card's error is %q, want the script's last stderr line, masked, then the exit status", msg)
	}
	if !contains(stringsOf(failed["allowed_actions"]), "force_retry") {
		t.Fatalf("actions %v", failed["allowed_actions"])
	}

	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/retry", apitest.Req{Token: e.Member, Body: map[string]any{"mode": "failed"}}); r.Status != 202 {
		t.Fatalf("retry: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "failed", 3*time.Minute)
	cards = e.pipeline(stack)
	if cards["db[0]"]["state"] != "skipped" || cards["app[0]"]["state"] != "skipped" || cards["app[1]"]["state"] != "failed" {
		t.Fatalf("retry cards: %v %v %v", cards["db[0]"]["state"], cards["app[0]"]["state"], cards["app[1]"]["state"])
	}

	fixed := e.Repo.Commit(map[string]string{labtest.AppScript: labtest.ExampleFile(t, labtest.AppScript)})
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/retry", apitest.Req{Token: e.Member, Body: map[string]any{"mode": "force"}}); r.Status != 202 {
		t.Fatalf("force retry: %d %s", r.Status, r.Body)
	}
	done := e.waitState(stack, "deployed", 3*time.Minute)
	cards = e.pipeline(stack)
	if cards["app[1]"]["state"] != "succeeded" || cards["app[0]"]["state"] != "skipped" {
		t.Fatalf("force retry cards: %v %v", cards["app[0]"]["state"], cards["app[1]"]["state"])
	}
	for _, ex := range done["jobs"].(map[string]any)["app"].(map[string]any)["executions"].([]any) {
		if c := ex.(map[string]any)["commit"]; c != fixed {
			t.Errorf("app execution pinned to %v, want the fix %s", c, fixed)
		}
	}
	if n := len(e.Sandbox.Cluster("demo").VMs()); n != 3 {
		t.Fatalf("%d VMs after the retries, want 3 (no duplicate)", n)
	}
}

func stringsOf(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestFailedModuleCardShowsTerraformsReason: a module that fails shows, on its card and in the
// history, what Terraform said went wrong (its first error diagnostic, with the last line of
// its detail), then the wrapper — not "terraform apply: exit status 1".
func TestFailedModuleCardShowsTerraformsReason(t *testing.T) {
	t.Parallel()
	broken := `resource "terraform_data" "broken" {
  provisioner "local-exec" {
    command = "echo 'db module is broken at this commit' >&2; exit 1"
  }
}
`
	outputs := `output "ip" { value = "" }
output "vm_id" { value = 0 }
output "node" { value = "" }
`
	e := newEngine(t, engineOpts{override: map[string]string{"jobs/vm/main.tf": broken, "jobs/vm/outputs.tf": outputs}})
	stack := e.Draft("broken", 1)
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "failed", 3*time.Minute)
	want := "local-exec provisioner error: db module is broken at this commit (terraform apply: exit status 1)"
	if msg, _ := e.pipeline(stack)["db[0]"]["error"].(string); msg != want {
		t.Fatalf("the failed card's error is %q, want %q", msg, want)
	}
	hist := e.API.Do("GET", "/v1/stacks/"+stack+"/history", apitest.Req{Token: e.Member}).Map()["items"].([]any)
	if last := hist[len(hist)-1].(map[string]any); last["to"] != "failed" || !strings.Contains(fmt.Sprint(last["error"]), "db module is broken at this commit") {
		t.Fatalf("the history's failure: %v", last)
	}
}

// TestModulesTrustTheClusterAsHorizonDoes: a module's tools verify the Proxmox API's
// certificate as Horizon does, with no flag to skip verification: curl (as a provider would)
// reaches the sandbox's self-signed API through the trust bundle the step gives Terraform,
// while it keeps the system's roots.
func TestModulesTrustTheClusterAsHorizonDoes(t *testing.T) {
	t.Parallel()
	trust := `resource "terraform_data" "trust" {
  provisioner "local-exec" {
    command = "curl -sS -o /dev/null \"$PROXMOX_VE_ENDPOINT/api2/json/version\""
  }
}
`
	e := newEngine(t, engineOpts{override: map[string]string{"jobs/vm/trust.tf": trust}})
	stack := e.Draft("trusting", 1)
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "deployed", 3*time.Minute)
}
