package isos_test

import (
	"strings"
	"testing"
	"time"

	"horizon/functions/apitest"
	"horizon/shared/horizon"
	"horizon/shared/proxmox"
	"horizon/shared/secrets"
	"horizon/shared/store"
)

// TestISOStagesBuildOnceAndRemove runs an ISO build stage by stage through iso:stage: the
// template VM and its clone exist and the ISO is built. The worker running vm-create is taken
// to die after Proxmox made the VM but before the step was recorded: the new attempt the
// reconciler gives it finds the VM it built and makes no second one. The removal's stage then
// deletes both VMs.
func TestISOStagesBuildOnceAndRemove(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	iso, run := l.build(l.spec(9000))
	crashed := false
	for q := l.k.Queued(run); len(q) > 0; q = l.k.Queued(run) {
		for _, s := range q {
			if err := l.k.Step(s); err != nil {
				t.Fatalf("%s: %v", s.Kind, err)
			}
			if s.Kind != horizon.StepISOVMCreate || crashed {
				continue
			}
			crashed = true
			l.k.Crash(s)
			again, err := store.StepRequeueStale(t.Context(), l.API.DB, s.ID, s.Attempt, time.Now().Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if err := l.k.Step(again); err != nil {
				t.Fatalf("vm-create again: %v", err)
			}
			if got := l.k.StepNow(s.ID); got.State != horizon.StepSkipped || !strings.Contains(deref(got.Reason), "exists") {
				t.Fatalf("vm-create's second attempt: %s (%q, %q), want skipped: the VM exists", got.State, deref(got.Reason), deref(got.Error))
			}
		}
	}
	if !crashed {
		t.Fatal("the build queued no vm-create")
	}
	if s := l.k.Finish(run); s != horizon.RunSucceeded {
		t.Fatalf("the build ended %s: %+v", s, l.k.Steps(run))
	}
	if st := l.isoState(iso); st != "built" {
		t.Fatalf("the ISO is %s, want built", st)
	}
	if vms := l.Sandbox.Cluster("demo").VMs(); len(vms) != 2 {
		t.Fatalf("sandbox VMs %+v, want the template and its clone", vms)
	}
	if tpl, clone := l.vm(9000), l.vm(9101); tpl == nil || !tpl.Template || clone == nil || clone.Name != "web-1" {
		t.Fatalf("template %+v, clone %+v", tpl, clone)
	}

	if r := l.API.Do("DELETE", "/v1/isos/"+iso, apitest.Req{}); r.Status != 202 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if s := l.k.Finish(l.latestRun(iso)); s != horizon.RunSucceeded {
		t.Fatalf("the removal ended %s", s)
	}
	if st := l.isoState(iso); st != "removed" {
		t.Fatalf("the ISO is %s, want removed", st)
	}
	if vms := l.Sandbox.Cluster("demo").VMs(); len(vms) != 0 {
		t.Fatalf("VMs %+v survived the removal", vms)
	}
}

// TestISOPreflightRefusesATakenVMID: the spec's VM id belongs to a VM the ISO did not build;
// the preflight fails naming it, nothing is built or touched, and the ISO ends failed.
func TestISOPreflightRefusesATakenVMID(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	c := l.Sandbox.Cluster("demo")
	pc, err := proxmox.New(proxmox.Config{URL: c.URL(), TokenID: c.TokenID(), TokenSecret: secrets.Value(c.TokenSecret()), Fingerprint: c.CertFingerprint()})
	if err != nil {
		t.Fatal(err)
	}
	var upid string
	if err := pc.Post(t.Context(), "/nodes/pve1/qemu", map[string]any{"vmid": 9000, "name": "someone-else"}, &upid); err != nil {
		t.Fatalf("make VM 9000: %v", err)
	}
	if err := pc.WaitTask(t.Context(), upid, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	iso, run := l.build(l.spec(9000))
	if s := l.k.Finish(run); s != horizon.RunFailed {
		t.Fatalf("the build ended %s", s)
	}
	for _, s := range l.k.Steps(run) {
		switch {
		case s.Kind == horizon.StepISOPreflight:
			if s.State != horizon.StepFailed || !strings.Contains(deref(s.Error), `taken by VM "someone-else"`) {
				t.Errorf("preflight %s: %q, want failed naming the VM", s.State, deref(s.Error))
			}
		case s.State != horizon.StepHeld:
			t.Errorf("stage %s is %s, want held behind the preflight", s.Kind, s.State)
		}
	}
	if st := l.isoState(iso); st != "failed" {
		t.Fatalf("the ISO is %s, want failed", st)
	}
	if vm := l.vm(9000); vm == nil || vm.Name != "someone-else" || vm.Template {
		t.Fatalf("VM 9000 is now %+v", vm)
	}
	if len(c.VMs()) != 1 {
		t.Fatalf("sandbox VMs %+v", c.VMs())
	}
}
