package steps_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"horizon/functions/apitest"
	"horizon/shared/gate"
	"horizon/shared/horizon"
	"horizon/shared/queue"
	"horizon/shared/store"
)

// TestApplyBuildsTheMachineOnce runs the database's apply of a deploy: the VM exists on the
// sandbox under the stack's name, the execution records it, the step succeeded and moved its
// run on itself (the next phase queued, no run:advance delivered). A worker that died after the apply but before recording it is
// replaced by a new attempt (the reconciler's requeue), which adopts the VM: still one VM.
func TestApplyBuildsTheMachineOnce(t *testing.T) {
	t.Parallel()
	l := newLab(t, nil)
	stack := l.Draft("shop", 1)
	run := l.start("POST", "/v1/stacks/"+stack+"/deploy", nil)
	q := l.queued(run)
	if len(q) != 1 || q[0].Job != "db" || q[0].Kind != horizon.StepApply {
		t.Fatalf("queued %+v, want the db's apply", q)
	}
	if err := l.k.Step(q[0]); err != nil {
		t.Fatal(err)
	}
	if s := l.step(q[0].ID); s.State != horizon.StepSucceeded {
		t.Fatalf("step %s (%v), want succeeded", s.State, s.Error)
	}
	var next []string
	for _, s := range l.k.Steps(run) {
		if s.State == horizon.StepQueued {
			next = append(next, s.Job)
		}
	}
	if len(next) == 0 || slices.Contains(next, "db") {
		t.Fatalf("queued after the db's apply: %v, want the next phase's steps", next)
	}
	vms := l.Sandbox.Cluster("demo").VMs()
	if len(vms) != 1 || vms[0].Name != "shop-db-0" || vms[0].Status != "running" {
		t.Fatalf("sandbox VMs %+v, want shop-db-0 running", vms)
	}
	exec, err := store.ExecutionGet(t.Context(), l.API.DB, *q[0].ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	if exec.VMID == nil || *exec.VMID != vms[0].VMID || exec.Outputs["ip"] == nil {
		t.Fatalf("execution vmid %v outputs %v, want VM %d and its ip", exec.VMID, exec.Outputs, vms[0].VMID)
	}

	// The crash: the step is still running as far as Postgres knows, and silent.
	l.k.Crash(q[0])
	again, err := store.StepRequeueStale(t.Context(), l.API.DB, q[0].ID, q[0].Attempt, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.k.Step(again); err != nil {
		t.Fatal(err)
	}
	if s := l.step(q[0].ID); s.State != horizon.StepSucceeded || s.Attempt != q[0].Attempt+1 {
		t.Fatalf("second attempt: step %s attempt %d (%v), want succeeded at %d", s.State, s.Attempt, s.Error, q[0].Attempt+1)
	}
	if after := l.Sandbox.Cluster("demo").VMs(); len(after) != 1 || after[0].VMID != vms[0].VMID {
		t.Fatalf("after the second attempt the sandbox has %+v, want VM %d alone", after, vms[0].VMID)
	}
	// The first attempt, delivered once more, is stale: it changes nothing.
	if err := l.k.Step(q[0]); err != nil {
		t.Fatal(err)
	}
	if s := l.step(q[0].ID); s.State != horizon.StepSucceeded || s.Attempt != q[0].Attempt+1 {
		t.Fatalf("a stale delivery moved the step to %s attempt %d", s.State, s.Attempt)
	}
}

// TestApplyThatFailsRecordsItsError: Proxmox refuses the VM (not a transient refusal: no retry); the step fails with the first
// line of the error (the attempt's work failed: nothing for Asynq to retry), builds nothing,
// and the run it hands back to ends failed with the step's error.
func TestApplyThatFailsRecordsItsError(t *testing.T) {
	t.Parallel()
	l := newLab(t, nil)
	stack := l.Draft("shop", 1)
	run := l.start("POST", "/v1/stacks/"+stack+"/deploy", nil)
	q := l.queued(run)
	l.Sandbox.FailNext("POST /nodes/{node}/qemu", 1, 500, "storage 'local-lvm' has not enough free space")
	if err := l.k.Step(q[0]); err != nil {
		t.Fatalf("a failed apply was handed back to Asynq: %v", err)
	}
	s := l.step(q[0].ID)
	if s.State != horizon.StepFailed || s.Error == nil || !strings.Contains(*s.Error, "local-lvm") {
		t.Fatalf("step %s error %v, want failed naming the full storage", s.State, deref(s.Error))
	}
	if vms := l.Sandbox.Cluster("demo").VMs(); len(vms) != 0 {
		t.Fatalf("the failed apply left VMs %+v", vms)
	}
	if q := l.queued(run); len(q) != 0 {
		t.Fatalf("after the failure the run queued %+v", q)
	}
	r, err := store.RunGet(t.Context(), l.API.DB, run)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != horizon.RunFailed || r.Error == nil || !strings.Contains(*r.Error, "local-lvm") {
		t.Fatalf("run %s error %v, want failed with the step's error", r.State, deref(r.Error))
	}
}

// TestApplyWithADeletedKeyFailsWithoutBuilding: the member deleted the SSH key the machine was
// to get between the deploy and its step; the step fails at once, saying so, and builds nothing.
func TestApplyWithADeletedKeyFailsWithoutBuilding(t *testing.T) {
	t.Parallel()
	l := newLab(t, nil)
	stack := l.Draft("shop", 1)
	run := l.start("POST", "/v1/stacks/"+stack+"/deploy", nil)
	q := l.queued(run)
	if r := l.API.Do("DELETE", "/v1/ssh-keys/"+l.Key, apitest.Req{Token: l.Member}); r.Status != 204 {
		t.Fatalf("delete the key: %d %s", r.Status, r.Body)
	}
	if err := l.k.Step(q[0]); err != nil {
		t.Fatal(err)
	}
	if s := l.step(q[0].ID); s.State != horizon.StepFailed || s.Error == nil || !strings.Contains(*s.Error, "SSH key") {
		t.Fatalf("step %s error %v, want failed naming the SSH key", s.State, deref(s.Error))
	}
	if vms := l.Sandbox.Cluster("demo").VMs(); len(vms) != 0 {
		t.Fatalf("VMs %+v built without their key", vms)
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// TestApplyReconnectsWhenTheNodeDroppedTheWaitingConnection: while the db's apply waits for its
// node's build gate (another build holds it), it prepares: the module initialised, the
// cloud-init rendered and a connection to the node open. The node drops that connection (a
// network blip, an idle timeout) before the gate is free — once the handshake is over, while
// the snippets directory is made or after: the apply connects again under the gate, uploads,
// and builds the one machine.
func TestApplyReconnectsWhenTheNodeDroppedTheWaitingConnection(t *testing.T) {
	t.Parallel()
	l := newLab(t, nil)
	stack := l.Draft("shop", 1)
	run := l.start("POST", "/v1/stacks/"+stack+"/deploy", nil)
	db := l.steps(run)[0]
	node := l.Sandbox.Cluster("demo").Node(*db.Node)
	g, err := gate.New(l.API.Redis, gate.Config{Prefix: l.API.Deps.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	// Another build holds the node before the db's apply is queued (and so in line behind it).
	other, err := g.Acquire(t.Context(), queue.GateNode(*db.ServerID, *db.Node), "another-build", 0)
	if err != nil {
		t.Fatal(err)
	}
	q := l.queued(run)
	if len(q) != 1 || q[0].ID != db.ID {
		t.Fatalf("queued %+v, want the db's apply", q)
	}
	// An attempt waits for the gate a couple of seconds, then is handed back (and delivered
	// again): one whose preparation had not opened its connection by then is delivered again.
	var done chan error
	for try := 1; done == nil; try++ {
		d := make(chan error, 1)
		go func() { d <- l.k.Step(q[0]) }()
	wait:
		for {
			select {
			case err := <-d:
				if try == 10 {
					t.Fatalf("the apply never had its connection open while it waited for the gate (last try: %v)", err)
				}
				break wait
			case <-time.After(10 * time.Millisecond):
				if node.SSHConnections() > 0 {
					done = d
					break wait
				}
			}
		}
	}
	node.DropSSHConnections()
	if _, err := other.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the apply was handed back: %v", err)
	}
	if s := l.step(q[0].ID); s.State != horizon.StepSucceeded {
		t.Fatalf("step %s (%v), want succeeded", s.State, deref(s.Error))
	}
	if vms := l.Sandbox.Cluster("demo").VMs(); len(vms) != 1 {
		t.Fatalf("sandbox VMs %+v, want the db's alone", vms)
	}
}
