package worker_test

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"horizon/functions/apitest"
	"horizon/shared/testkit"
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
// namespace and key, with a fast heartbeat, as a process a test can kill; it is killed when the
// test ends.
func (e *engine) workerProcess(t *testing.T) *exec.Cmd {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "workers")
	build := exec.Command("go", "build", "-o", bin, "./workers")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the workers: %v\n%s", err, out)
	}
	proc := exec.Command(bin)
	proc.Env = append(os.Environ(),
		"HORIZON_DATABASE_URL="+e.API.DB.Config().ConnString(),
		"HORIZON_REDIS_URL="+testkit.RedisURL(),
		"HORIZON_SECRET_KEY="+base64.StdEncoding.EncodeToString(e.API.SecretKey),
		"HORIZON_NAMESPACE="+e.API.Deps.Namespace,
		"HORIZON_GIT_CACHE_DIR="+t.TempDir(),
		"HORIZON_WORK_DIR="+t.TempDir(),
		"HORIZON_STEP_HEARTBEAT=1s",
		"HORIZON_RECONCILE_INTERVAL=1h",
		"HORIZON_LOG_FORMAT=text",
	)
	proc.Stdout, proc.Stderr = testLog{t}, testLog{t}
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.Process.Kill(); _ = proc.Wait() })
	return proc
}
