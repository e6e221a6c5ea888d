package steps_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/horizon"
	"horizon/shared/proxmox"
	"horizon/shared/secrets"
	"horizon/workers/worker/workertest"
)

// lab is the seed of these tests: the lab (API, sandbox, the sandbox-vm template) and the
// workers' handlers, not started: each test runs the deliveries it is about itself.
type lab struct {
	*labtest.Lab
	k *workertest.Kinds
}

func newLab(t *testing.T, override map[string]string) *lab {
	t.Helper()
	l, k := kindsLab(t, labtest.Options{Override: override})
	return &lab{Lab: l, k: k}
}

// start posts path (a deploy, a removal, an action) as the member and returns the run it made.
func (l *lab) start(method, path string, body any) uuid.UUID {
	l.T.Helper()
	r := l.API.Do(method, path, apitest.Req{Token: l.Member, Body: body})
	if r.Status != 202 {
		l.T.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
	}
	m := r.Map()
	if run, ok := m["run"].(map[string]any); ok {
		m = run
	}
	id, err := uuid.Parse(m["id"].(string))
	if err != nil {
		l.T.Fatal(err)
	}
	return id
}

func (l *lab) steps(run uuid.UUID) []horizon.Step    { return l.k.Steps(run) }
func (l *lab) queued(run uuid.UUID) []horizon.Step   { return l.k.Queued(run) }
func (l *lab) finish(run uuid.UUID) horizon.RunState { return l.k.Finish(run) }
func (l *lab) step(id uuid.UUID) horizon.Step        { return l.k.StepNow(id) }

// deployed drafts a stack of a db and apps app machines and runs its deploy to the end.
func (l *lab) deployed(name string, apps int) string {
	l.T.Helper()
	stack := l.Draft(name, apps)
	if s := l.finish(l.start("POST", "/v1/stacks/"+stack+"/deploy", nil)); s != horizon.RunSucceeded {
		l.T.Fatalf("deploy %s: %s", name, s)
	}
	return stack
}

// deleteVM stops and deletes a VM on the sandbox, as an operator would by hand.
func (l *lab) deleteVM(node string, vmid int) {
	l.T.Helper()
	pc := l.proxmox()
	ctx := l.T.Context()
	path := fmt.Sprintf("/nodes/%s/qemu/%d", node, vmid)
	var upid string
	if err := pc.Post(ctx, path+"/status/stop", map[string]any{}, &upid); err != nil {
		l.T.Fatalf("stop VM %d: %v", vmid, err)
	}
	if err := pc.WaitTask(ctx, upid, 10*time.Millisecond); err != nil {
		l.T.Fatal(err)
	}
	if err := pc.Delete(ctx, path, &upid); err != nil {
		l.T.Fatalf("delete VM %d: %v", vmid, err)
	}
	if err := pc.WaitTask(ctx, upid, 10*time.Millisecond); err != nil {
		l.T.Fatal(err)
	}
}

// createVM creates and starts a VM on the sandbox through its API, tagged as Horizon tags its
// machines: what an apply interrupted after Proxmox made the VM leaves.
func (l *lab) createVM(node string, vmid int, name string) {
	l.T.Helper()
	pc := l.proxmox()
	ctx := l.T.Context()
	var upid string
	if err := pc.Post(ctx, fmt.Sprintf("/nodes/%s/qemu", node), map[string]any{"vmid": vmid, "name": name, "tags": "horizon",
		"memory": 512, "cores": 1}, &upid); err != nil {
		l.T.Fatalf("create VM %d: %v", vmid, err)
	}
	if err := pc.WaitTask(ctx, upid, 10*time.Millisecond); err != nil {
		l.T.Fatal(err)
	}
	if err := pc.Post(ctx, fmt.Sprintf("/nodes/%s/qemu/%d/status/start", node, vmid), map[string]any{}, &upid); err != nil {
		l.T.Fatalf("start VM %d: %v", vmid, err)
	}
	if err := pc.WaitTask(ctx, upid, 10*time.Millisecond); err != nil {
		l.T.Fatal(err)
	}
}

// proxmox is a client of the sandbox cluster "demo", for acting on it as an operator would.
func (l *lab) proxmox() *proxmox.Client {
	l.T.Helper()
	c := l.Sandbox.Cluster("demo")
	pc, err := proxmox.New(proxmox.Config{URL: c.URL(), TokenID: c.TokenID(), TokenSecret: secrets.Value(c.TokenSecret()), Fingerprint: c.CertFingerprint()})
	if err != nil {
		l.T.Fatal(err)
	}
	return pc
}

// pools returns the sandbox's resource pools: id → comment.
func (l *lab) pools() map[string]string {
	l.T.Helper()
	var list []struct {
		ID      string `json:"poolid"`
		Comment string `json:"comment"`
	}
	if err := l.proxmox().Get(l.T.Context(), "/pools", &list); err != nil {
		l.T.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range list {
		out[p.ID] = p.Comment
	}
	return out
}

// appVMDir is the sandbox's directory of the app[index] machine of stack.
func (l *lab) appVMDir(stack string, index int) string {
	l.T.Helper()
	var vmid int
	if err := l.API.DB.QueryRow(l.T.Context(), `SELECT vmid FROM executions WHERE stack_id = $1 AND job = 'app' AND index = $2`,
		stack, index).Scan(&vmid); err != nil {
		l.T.Fatal(err)
	}
	return l.Sandbox.Cluster("demo").VMDir(vmid)
}
