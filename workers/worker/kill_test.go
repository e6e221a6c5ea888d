package worker_test

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"horizon/functions/apitest"
	"horizon/shared/testkit"
	"horizon/workers/worker/workertest"
)

// TestWorkerKilledMidApplyIsReplaced: the worker process building the database VM is killed
// (SIGKILL) in the middle of its apply. Another worker takes the step over (the reconciler gives
// the silent step a new attempt once the dead one's node gate lease expires), the stack ends
// deployed, and the sandbox holds each VM once.
func TestWorkerKilledMidApplyIsReplaced(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{noWorker: true})
	e.Sandbox.HangTasks("qmcreate")
	proc := e.workerProcess(t)

	stack := e.Draft("phoenix", 1)
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	testkit.Eventually(t, 2*time.Minute, "the db apply did not get going in the worker process", func() bool {
		return e.pipeline(stack)["db[0]"]["state"] == "running" && len(e.Sandbox.Cluster("demo").VMs()) == 1
	})
	if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()
	killed := time.Now()
	e.Sandbox.ReleaseTasks("qmcreate")

	e.startWorker(engineOpts{})
	testkit.Eventually(t, 3*time.Minute, "the killed step was not taken over", func() bool {
		if err := e.worker.Reconcile.Pass(context.Background()); err != nil {
			t.Logf("reconcile: %v", err)
		}
		return e.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: e.Member}).Map()["state"] == "deployed"
	})
	t.Logf("kill to deployed: %s", time.Since(killed).Round(time.Second))
	t.Logf("log:\n%s", e.logText(stack))
	if n := len(e.Sandbox.Cluster("demo").VMs()); n != 2 {
		t.Fatalf("%d VMs after the takeover, want 2 (no duplicate)", n)
	}
	if attempt := e.pipeline(stack)["db[0]"]["attempt"].(float64); attempt < 2 {
		t.Fatalf("the db step's attempt is %v, want a new attempt after the kill", attempt)
	}
}

// workerProcess builds the workers binary and starts it on the engine's database, Redis
// namespace and key (workertest.Process), as a process a test can kill.
func (e *engine) workerProcess(t *testing.T) *exec.Cmd {
	t.Helper()
	return workertest.Process(t, workertest.Build(t), workertest.ProcessConfig{DatabaseURL: e.API.DB.Config().ConnString(),
		Namespace: e.API.Deps.Namespace, SecretKey: e.API.SecretKey})
}
