package steps_test

import (
	"testing"

	"github.com/google/uuid"

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
