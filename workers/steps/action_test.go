package steps_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"horizon/functions/apitest/labtest"
	"horizon/shared/horizon"
)

// rotateKey is the example's script action, made to fail when asked for 9 bytes.
const rotateKey = "jobs/app/scripts/rotate-key.sh"

// TestScriptActionRunsOnTheChosenMachine: action:run runs the example's rotate-api-key on the
// second app machine only, and records its outputs; a second run whose script exits non-zero
// fails its step with the script's last words and the run with it.
func TestScriptActionRunsOnTheChosenMachine(t *testing.T) {
	t.Parallel()
	script := strings.Replace(labtest.ExampleFile(t, rotateKey), "set -euo pipefail\n",
		"set -euo pipefail\nif [[ ${key_bytes:-} == 9 ]]; then echo 'no entropy today' >&2; exit 3; fi\n", 1)
	l := newLab(t, map[string]string{rotateKey: script})
	stack := l.deployed("act", 2)

	path := "/v1/stacks/" + stack + "/actions/rotate-api-key"
	run := l.start("POST", path, map[string]any{"parameters": map[string]any{"key_bytes": 20}, "execution": 1})
	if s := l.finish(run); s != horizon.RunSucceeded {
		t.Fatalf("the action's run %s: %+v", s, l.steps(run))
	}
	steps := l.steps(run)
	if len(steps) != 1 || steps[0].Kind != horizon.StepActionScript || deref(steps[0].ExecutionIndex) != 1 {
		t.Fatalf("the action's steps %+v, want one script step on app[1]", steps)
	}
	if key, err := os.ReadFile(filepath.Join(l.appVMDir(stack, 1), "app", "api_key")); err != nil || len(key) != 40 {
		t.Fatalf("the new key on app[1]: %q %v", key, err)
	}
	if _, err := os.Stat(filepath.Join(l.appVMDir(stack, 0), "app", "rotated")); !os.IsNotExist(err) {
		t.Fatalf("the action ran on app[0] too: %v", err)
	}
	var outputs map[string]any
	if err := l.API.DB.QueryRow(t.Context(), `SELECT outputs FROM action_runs WHERE run_id = $1`, run).Scan(&outputs); err != nil {
		t.Fatal(err)
	}
	if outputs["rotated_at"] == nil {
		t.Fatalf("the action's outputs %v, want rotated_at", outputs)
	}

	failing := l.start("POST", path, map[string]any{"parameters": map[string]any{"key_bytes": 9}, "execution": 0})
	if s := l.finish(failing); s != horizon.RunFailed {
		t.Fatalf("the failing action's run ended %s", s)
	}
	if s := l.steps(failing)[0]; s.State != horizon.StepFailed || !strings.Contains(deref(s.Error), "no entropy today") {
		t.Fatalf("the failing action's step %s: %q, want failed with the script's words", s.State, deref(s.Error))
	}
}

// TestTerraformActionMakesAndUndoesItsPool: action:run applies the example's create-pool in
// the instance's own workspace (the pool appears on the sandbox, the instance is kept), and
// the undo's destroy step deletes it again.
func TestTerraformActionMakesAndUndoesItsPool(t *testing.T) {
	t.Parallel()
	l := newLab(t, nil)
	stack := l.deployed("pools", 1)
	run := l.start("POST", "/v1/stacks/"+stack+"/actions/create-pool", map[string]any{"parameters": map[string]any{"pool": "hz-one", "comment": "for tests"}})
	if s := l.finish(run); s != horizon.RunSucceeded {
		t.Fatalf("create-pool %s: %+v", s, l.steps(run))
	}
	if p := l.pools(); !strings.HasPrefix(p["hz-one"], "for tests") {
		t.Fatalf("sandbox pools %v, want hz-one", p)
	}
	var instance string
	if err := l.API.DB.QueryRow(t.Context(), `SELECT id FROM action_instances WHERE stack_id = $1`, stack).Scan(&instance); err != nil {
		t.Fatalf("the instance: %v", err)
	}
	undo := l.start("DELETE", "/v1/stacks/"+stack+"/action-instances/"+instance, nil)
	if s := l.finish(undo); s != horizon.RunSucceeded {
		t.Fatalf("undo %s: %+v", s, l.steps(undo))
	}
	if p := l.pools(); p["hz-one"] != "" {
		t.Fatalf("after the undo the sandbox still has pool hz-one: %v", p)
	}
}
