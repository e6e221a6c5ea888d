package steps_test

import (
	"slices"
	"testing"

	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// TestDestroyRemovesTheMachines: a removal's destroy steps delete the stack's VMs, the app's
// after its cleanup script ran, and free its executions; a VM an operator deleted by hand
// meanwhile is not an error (destroy is idempotent).
func TestDestroyRemovesTheMachines(t *testing.T) {
	t.Parallel()
	l := newLab(t, nil)
	stack := l.deployed("shop", 1)
	vms := l.Sandbox.Cluster("demo").VMs()
	if len(vms) != 2 {
		t.Fatalf("deployed VMs %+v, want 2", vms)
	}
	for _, vm := range vms {
		if vm.Name == "shop-db-0" {
			l.deleteVM(vm.Node, vm.VMID)
		}
	}
	run := l.start("DELETE", "/v1/stacks/"+stack, nil)
	if s := l.finish(run); s != horizon.RunSucceeded {
		t.Fatalf("removal %s: steps %+v", s, l.steps(run))
	}
	var destroys int
	for _, s := range l.steps(run) {
		if s.Kind == horizon.StepDestroy {
			destroys++
			if s.State != horizon.StepSucceeded {
				t.Errorf("destroy of %s: %s (%v)", s.Job, s.State, deref(s.Error))
			}
		}
	}
	if destroys != 2 {
		t.Fatalf("%d destroy steps, want 2", destroys)
	}
	if vms := l.Sandbox.Cluster("demo").VMs(); len(vms) != 0 {
		t.Fatalf("after the removal the sandbox has %+v", vms)
	}
	execs, err := store.ExecutionsOfStack(t.Context(), l.API.DB, uuid.MustParse(stack), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range execs {
		if e.State == horizon.ExecutionActive {
			t.Errorf("execution %s[%d] still active", e.Job, e.Index)
		}
	}
}

// TestRemovalDeletesAVMTheStateNeverRecorded: a worker killed in the middle of the db's first
// apply (SIGKILL: Terraform dies with it, before it saved any state) leaves the VM Proxmox had
// made, with the execution's VM id and name, and an empty workspace; the deploy is then
// canceled, so no later attempt adopts the VM. The removal must still delete it: Terraform
// cannot destroy what its state does not record, so Horizon does — and only that VM: one with
// the execution's VM id and another name is not the execution's and stays, as do the others.
func TestRemovalDeletesAVMTheStateNeverRecorded(t *testing.T) {
	t.Parallel()
	l := newLab(t, nil)
	l.createVM("pve2", 990, "not-horizons")
	for _, c := range []struct {
		stack string
		name  func(horizon.Execution) string
		stays bool
	}{
		{"shop", func(e horizon.Execution) string { return *e.VMName }, false},
		{"other", func(horizon.Execution) string { return "someone-elses" }, true},
	} {
		stack := l.Draft(c.stack, 1)
		run := l.start("POST", "/v1/stacks/"+stack+"/deploy", nil)
		q := l.queued(run)
		if len(q) != 1 || q[0].Job != "db" {
			t.Fatalf("%s: queued %+v, want the db's apply", c.stack, q)
		}
		exec, err := store.ExecutionGet(t.Context(), l.API.DB, *q[0].ExecutionID)
		if err != nil {
			t.Fatal(err)
		}
		if exec.VMID == nil || exec.Node == nil || exec.VMName == nil {
			t.Fatalf("%s: the deploy placed the db at vmid %v node %v name %v", c.stack, exec.VMID, exec.Node, exec.VMName)
		}
		// What the killed apply left: the VM, made and started, and no Terraform state.
		l.createVM(*exec.Node, *exec.VMID, c.name(exec))
		if r := l.API.Do("POST", "/v1/stacks/"+stack+"/cancel", apitest.Req{Token: l.Member}); r.Status != 202 {
			t.Fatalf("%s: cancel: %d %s", c.stack, r.Status, r.Body)
		}
		if s := l.finish(run); s != horizon.RunCanceled {
			t.Fatalf("%s: deploy %s, want canceled: steps %+v", c.stack, s, l.steps(run))
		}
		removal := l.start("DELETE", "/v1/stacks/"+stack, nil)
		if s := l.finish(removal); s != horizon.RunSucceeded {
			t.Fatalf("%s: removal %s: steps %+v", c.stack, s, l.steps(removal))
		}
		want := []int{990}
		if c.stays {
			want = append(want, *exec.VMID)
		}
		var have []int
		for _, vm := range l.Sandbox.Cluster("demo").VMs() {
			have = append(have, vm.VMID)
		}
		slices.Sort(have)
		slices.Sort(want)
		if !slices.Equal(have, want) {
			t.Fatalf("%s: after the removal the sandbox has VMs %v, want %v", c.stack, have, want)
		}
		if c.stays { // out of the way of the next case
			l.deleteVM(*exec.Node, *exec.VMID)
		}
	}
}
