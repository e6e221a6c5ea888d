package worker_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/horizon"
	"horizon/shared/testkit"
)

// rotateKeyScript is the sandbox-vm example's action script.
const rotateKeyScript = "jobs/app/scripts/rotate-key.sh"

// actionOverride gives the example's action an input prefilled from the app job's secret
// output, and has its script print that input and its new key: both must be masked.
func actionOverride(t testing.TB) map[string]string {
	tmpl := strings.Replace(labtest.ExampleFile(t, "template.yaml"), `      db_host: "${jobs.db.outputs.ip}"
    outputs:`, `      db_host: "${jobs.db.outputs.ip}"
      old_keys: "${jobs.app.outputs.api_key}"
    outputs:`, 1)
	script := strings.Replace(labtest.ExampleFile(t, rotateKeyScript), `echo "rotated the API key`,
		`echo "the old keys were $old_keys; the new one is $(<app/api_key)"
echo "rotated the API key`, 1)
	if !strings.Contains(tmpl, "old_keys") || !strings.Contains(script, "old keys") {
		t.Fatal("the example's action changed: cannot override it")
	}
	return map[string]string{"template.yaml": tmpl, rotateKeyScript: script}
}

// actionForm returns the stack's action form rotate-api-key, its inputs by name.
func (e *engine) actionForm(stack string) (map[string]any, map[string]map[string]any) {
	e.t.Helper()
	r := e.API.Do("GET", "/v1/stacks/"+stack+"/actions", apitest.Req{Token: e.Member})
	if r.Status != 200 {
		e.t.Fatalf("actions: %d %s", r.Status, r.Body)
	}
	a := r.Map()["items"].([]any)[0].(map[string]any)
	inputs := map[string]map[string]any{}
	for _, in := range a["inputs"].([]any) {
		inputs[in.(map[string]any)["name"].(string)] = in.(map[string]any)
	}
	return a, inputs
}

func (e *engine) appVMDir(stack string, index int) string {
	e.t.Helper()
	var vmid int
	if err := e.API.DB.QueryRow(context.Background(), `SELECT vmid FROM executions WHERE stack_id = $1 AND job = 'app' AND index = $2`,
		stack, index).Scan(&vmid); err != nil {
		e.t.Fatal(err)
	}
	return e.Sandbox.Cluster("demo").VMDir(vmid)
}

// TestScriptActionOnTheChosenMachine: the example's rotate-api-key action, run on the second of
// two app machines, writes its new key there (not on the first) and returns its outputs, kept
// with the run (the secret one sealed, masked in the log like the secret prefill the worker
// resolved); the run shows in the pipeline and the runs and the stack returns to deployed; a
// viewer cannot run it, nor anyone while a run is in progress; its prefills follow the stack's
// outputs after a re-apply changes them.
func TestScriptActionOnTheChosenMachine(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{override: actionOverride(t)})
	stack := e.deployed("act", 2)

	form, inputs := e.actionForm(stack)
	dbIP := e.API.Do("GET", "/v1/stacks/"+stack+"/outputs", apitest.Req{Token: e.Member}).Map()["jobs"].(map[string]any)["db"].([]any)[0].(map[string]any)["outputs"].(map[string]any)["ip"]
	if inputs["db_host"]["value"] != dbIP || inputs["old_keys"]["secret"] != true || inputs["old_keys"]["value"] != nil || form["execution"] != nil {
		t.Fatalf("the form: %v", form)
	}
	path := "/v1/stacks/" + stack + "/actions/rotate-api-key"
	body := map[string]any{"parameters": map[string]any{"key_bytes": 20}, "execution": 1}
	if r := e.API.Do("POST", path, apitest.Req{Token: e.Viewer, Body: body}); r.Status != 403 {
		t.Fatalf("a viewer ran the action: %d %s", r.Status, r.Body)
	}
	started := time.Now()
	run := e.API.Do("POST", path, apitest.Req{Token: e.Member, Body: body})
	if run.Status != 202 || run.Map()["kind"] != "action" {
		t.Fatalf("run the action: %d %s", run.Status, run.Body)
	}
	runID := run.Map()["id"].(string)
	if busy := e.API.Do("POST", path, apitest.Req{Token: e.Member, Body: body}); busy.Status != 409 {
		t.Fatalf("an action while a run is in progress: %d, want 409", busy.Status)
	}
	e.waitState(stack, "deployed", 2*time.Minute)
	t.Logf("the action ran in %s", time.Since(started).Round(time.Millisecond))

	got := e.API.Do("GET", "/v1/stacks/"+stack+"/runs/"+runID, apitest.Req{Token: e.Member}).Map()
	if got["run"].(map[string]any)["state"] != "succeeded" {
		t.Fatalf("the action's run: %v\nlog:\n%s", got, e.logText(stack))
	}
	cards := e.runPipeline(stack, runID)
	if len(cards) != 1 || cards["app[1]"]["kind"] != "action_script" || cards["app[1]"]["state"] != "succeeded" {
		t.Fatalf("the action's pipeline: %v", cards)
	}
	// The stack's own pipeline stays its jobs', with their Run again buttons.
	if c := e.pipeline(stack)["app[1]"]; c["kind"] != "apply" {
		t.Fatalf("the stack's pipeline shows the action's run: %v", e.pipeline(stack))
	}
	runs := e.API.Do("GET", "/v1/stacks/"+stack+"/runs", apitest.Req{Token: e.Member}).Map()["items"].([]any)
	if runs[0].(map[string]any)["id"] != runID {
		t.Fatalf("the action's run is not the stack's latest: %v", runs)
	}
	history := e.API.Do("GET", "/v1/stacks/"+stack+"/runs?kind=action", apitest.Req{Token: e.Member}).Map()["items"].([]any)
	if len(history) != 1 {
		t.Fatalf("the action history: %v", history)
	}
	done := history[0].(map[string]any)["action"].(map[string]any)
	if done["execution"] != 1.0 || done["outputs"].(map[string]any)["rotated_at"] == nil ||
		done["outputs"].(map[string]any)["api_key"].(map[string]any)["secret"] != true {
		t.Fatalf("the action in the history: %v", done)
	}

	// The file is on the second machine only, and its key is the secret output kept.
	key, err := os.ReadFile(filepath.Join(e.appVMDir(stack, 1), "app", "api_key"))
	if err != nil || len(key) != 40 {
		t.Fatalf("the new key on app[1]: %q %v", key, err)
	}
	if _, err := os.Stat(filepath.Join(e.appVMDir(stack, 0), "app", "rotated")); !os.IsNotExist(err) {
		t.Fatalf("the action ran on app[0] too: %v", err)
	}
	var outputs map[string]any
	var sealed []byte
	if err := e.API.DB.QueryRow(t.Context(), `SELECT outputs, secret_outputs FROM action_runs WHERE run_id = $1`, runID).Scan(&outputs, &sealed); err != nil {
		t.Fatal(err)
	}
	opened, err := e.API.Deps.Box.Open(horizon.PurposeActionOutputs, sealed)
	if err != nil {
		t.Fatal(err)
	}
	var secret map[string]string
	_ = json.Unmarshal(opened, &secret)
	if outputs["rotated_at"] == nil || secret["api_key"] != string(key) {
		t.Fatalf("the action's outputs: %v, secret %v (file %s)", outputs, secret, key)
	}

	// Neither the new key nor the old ones (the secret prefill) reach the log.
	log := e.logText(stack)
	var oldKeys []string
	rows, err := e.API.DB.Query(t.Context(), `SELECT secret_outputs FROM executions WHERE stack_id = $1 AND job = 'app'`, stack)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s []byte
		_ = rows.Scan(&s)
		b, err := e.API.Deps.Box.Open(horizon.PurposeSecretOutputs, s)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]string
		_ = json.Unmarshal(b, &m)
		oldKeys = append(oldKeys, m["api_key"])
	}
	rows.Close()
	if !strings.Contains(log, "rotated the API key of") || !strings.Contains(log, "the old keys were") {
		t.Fatalf("the action's log:\n%s", log)
	}
	for _, s := range append(oldKeys, string(key)) {
		if s == "" || strings.Contains(log, s) {
			t.Fatalf("a secret %q is in the log (or empty):\n%s", s, log)
		}
	}

	// A re-apply that moves the database moves the prefill.
	detail, etag := e.get(stack)
	edit := editBody(detail, func(job string, ex map[string]any) {
		if job == "db" {
			ex["address_id"] = e.Addrs[5]
		}
	})
	edit["confirm"] = true
	if r := e.API.Do("PATCH", "/v1/stacks/"+stack, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": etag}, Body: edit}); r.Status != 202 {
		t.Fatalf("move the database: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "deployed", 3*time.Minute)
	_, after := e.actionForm(stack)
	movedIP := e.API.Do("GET", "/v1/stacks/"+stack+"/outputs", apitest.Req{Token: e.Member}).Map()["jobs"].(map[string]any)["db"].([]any)[0].(map[string]any)["outputs"].(map[string]any)["ip"]
	if movedIP == dbIP || after["db_host"]["value"] != movedIP {
		t.Fatalf("the prefill did not follow the database: %v, its ip now %v, was %v", after["db_host"], movedIP, dbIP)
	}
}

// TestCancelAHungAction: an action whose script hangs is interrupted by a cancel, like a job's
// scripts: its run ends canceled and the stack returns to deployed.
func TestCancelAHungAction(t *testing.T) {
	t.Parallel()
	hung := strings.Replace(labtest.ExampleFile(t, rotateKeyScript), "set -euo pipefail\n", "set -euo pipefail\necho hanging\nsleep 600\n", 1)
	e := newEngine(t, engineOpts{override: map[string]string{rotateKeyScript: hung}})
	stack := e.deployed("hung", 1)
	run := e.API.Do("POST", "/v1/stacks/"+stack+"/actions/rotate-api-key", apitest.Req{Token: e.Member})
	if run.Status != 202 {
		t.Fatalf("run the action on the one machine, preselected: %d %s", run.Status, run.Body)
	}
	runID := run.Map()["id"].(string)
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(e.logText(stack), "hanging") {
		if time.Now().After(deadline) {
			t.Fatalf("the action never started:\n%s", e.logText(stack))
		}
		time.Sleep(100 * time.Millisecond)
	}
	started := time.Now()
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/cancel", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "deployed", time.Minute)
	t.Logf("canceled in %s", time.Since(started).Round(time.Millisecond))
	got := e.API.Do("GET", "/v1/stacks/"+stack+"/runs/"+runID, apitest.Req{Token: e.Member}).Map()
	if got["run"].(map[string]any)["state"] != "canceled" {
		t.Fatalf("the hung action's run: %v", got["run"])
	}
}

// TestWorkerKilledDuringAScriptAction: the worker process running a script action is killed
// (SIGKILL) while the script runs; the machine hangs the script up with the connection, another
// worker takes the step over in a new attempt, the script runs to its end there, and the run
// succeeds with its outputs — the stack is deployed again, not stuck busy.
func TestWorkerKilledDuringAScriptAction(t *testing.T) {
	t.Parallel()
	hangsOnce := strings.Replace(labtest.ExampleFile(t, rotateKeyScript), "set -euo pipefail\n",
		"set -euo pipefail\nif [ ! -e hung-once ]; then touch hung-once; echo hanging; sleep 600; fi\n", 1)
	e := newEngine(t, engineOpts{override: map[string]string{rotateKeyScript: hangsOnce}})
	stack := e.deployed("killsh", 1)
	e.worker.Shutdown()
	proc := e.workerProcess(t)

	r := e.API.Do("POST", "/v1/stacks/"+stack+"/actions/rotate-api-key", apitest.Req{Token: e.Member})
	if r.Status != 202 {
		t.Fatalf("run the action: %d %s", r.Status, r.Body)
	}
	run := r.Map()["id"].(string)
	testkit.Eventually(t, 2*time.Minute, "the script did not start in the worker process", func() bool {
		return strings.Contains(e.logText(stack), "hanging")
	})
	if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()

	e.startWorker(engineOpts{})
	testkit.Eventually(t, 3*time.Minute, "the killed action was not taken over", func() bool {
		if err := e.worker.Reconcile.Pass(context.Background()); err != nil {
			t.Logf("reconcile: %v", err)
		}
		return e.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: e.Member}).Map()["state"] == "deployed"
	})
	if s := e.runState(stack, run); s != "succeeded" {
		t.Fatalf("the action's run after the takeover: %s\nlog:\n%s", s, e.logText(stack))
	}
	var attempt int
	if err := e.API.DB.QueryRow(t.Context(), `SELECT attempt FROM steps WHERE run_id = $1`, uuid.MustParse(run)).Scan(&attempt); err != nil || attempt < 2 {
		t.Fatalf("the action's step attempt is %d (%v), want a new attempt after the kill", attempt, err)
	}
	history := e.API.Do("GET", "/v1/stacks/"+stack+"/runs?kind=action", apitest.Req{Token: e.Member}).Map()["items"].([]any)
	if done := history[0].(map[string]any)["action"].(map[string]any); len(history) != 1 || done["outputs"].(map[string]any)["rotated_at"] == nil {
		t.Fatalf("the action's outputs after the takeover: %v", history)
	}
	key, err := os.ReadFile(filepath.Join(e.appVMDir(stack, 0), "app", "api_key"))
	if err != nil || len(key) != 2*16 {
		t.Fatalf("the key the taken-over script wrote: %q, %v", key, err)
	}
}
