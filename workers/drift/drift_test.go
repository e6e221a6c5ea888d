package drift_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/deploy/sandbox/estate"
	"horizon/deploy/sandbox/pve"
	"horizon/deploy/sandbox/pve/pvetest"
	"horizon/shared/drift"
	"horizon/shared/proxmox"
	"horizon/shared/secrets"
	"horizon/shared/store"
	"horizon/shared/testkit"
	driftcheck "horizon/workers/drift"
)

// fixture is n deployed stacks of one VM each on the in-process sandbox (deploy/sandbox/estate)
// and a checker of the server.
type fixture struct {
	t       *testing.T
	db      *pgxpool.Pool
	api     *proxmox.Client
	cluster *pve.Cluster
	server  uuid.UUID
	checker *driftcheck.Checker
	stacks  []uuid.UUID
	vmids   []int
	nodes   []string
}

func newEstate(t *testing.T, n int) *fixture {
	t.Helper()
	ctx := context.Background()
	sb := pvetest.Start(t, func(c *pve.Config) { c.TaskDuration = 0 })
	e := &fixture{t: t, db: testkit.DB(t), cluster: sb.Cluster("demo")}
	key := make([]byte, secrets.KeySize)
	_, _ = rand.Read(key)
	box, err := secrets.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	prefix := testkit.LoopbackNet(t) // started VMs serve SSH on their addresses
	built, err := estate.Build(ctx, e.db, box, []*pve.Cluster{e.cluster}, estate.Options{Stacks: n,
		IPConfig: func(i int) string { return fmt.Sprintf("ip=%s.%d/24,gw=%s.1", prefix, 10+i, prefix) }})
	if err != nil {
		t.Fatal(err)
	}
	e.api, e.server, e.stacks = built.APIs[0], built.Servers[0], built.Stacks
	for _, m := range built.Machines {
		e.vmids, e.nodes = append(e.vmids, m.VMID), append(e.nodes, m.Node)
	}
	// Task start times have a resolution of a second, and a task of the record's second is
	// taken for Horizon's own (drift.Mentions): what the tests do behind Horizon's back starts
	// in a later second, as an operator's would.
	time.Sleep(1100 * time.Millisecond)
	e.checker = &driftcheck.Checker{DB: e.db, Box: box}
	return e
}

// task runs a PVE call that answers a task and waits for the task to succeed.
func (e *fixture) task(method, path string, body map[string]any) {
	e.t.Helper()
	ctx := context.Background()
	var upid string
	var err error
	switch method {
	case "POST":
		err = e.api.Post(ctx, path, body, &upid)
	case "DELETE":
		err = e.api.Delete(ctx, path, &upid)
	default:
		e.t.Fatalf("task %s: unsupported method", method)
	}
	if err == nil {
		err = e.api.WaitTask(ctx, upid, 5*time.Millisecond)
	}
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
}

// put edits a VM's config synchronously, as the web UI's hardware and options panels do.
func (e *fixture) put(i int, body map[string]any) {
	e.t.Helper()
	if err := e.api.Put(context.Background(), fmt.Sprintf("/nodes/%s/qemu/%d/config", e.nodes[i], e.vmids[i]), body, nil); err != nil {
		e.t.Fatal(err)
	}
}

func (e *fixture) vmPath(i int) string {
	return fmt.Sprintf("/nodes/%s/qemu/%d", e.nodes[i], e.vmids[i])
}

// check runs one check of the server and returns the findings it left open.
func (e *fixture) check() (driftcheck.Result, []store.DriftFinding) {
	e.t.Helper()
	ctx := context.Background()
	res, err := e.checker.Check(ctx, e.server, nil)
	if err != nil || res.Failed != nil || res.Skipped {
		e.t.Fatalf("check: %v, failed %v, skipped %v", err, res.Failed, res.Skipped)
	}
	var open []store.DriftFinding
	for _, s := range e.stacks {
		fs, err := store.DriftFindingsOfStack(ctx, e.db, s)
		if err != nil {
			e.t.Fatal(err)
		}
		open = append(open, fs...)
	}
	return res, open
}

// TestHealthyEstateNoFalseAlarm: 20 stacks checked 100 times raise no finding, while operators
// take snapshots and edit notes (which change the configs' digests and no setting of
// Horizon's); the rolling sweep reads every config meanwhile. Then one memory change is found,
// once: the checks were able to find something.
func TestHealthyEstateNoFalseAlarm(t *testing.T) {
	t.Parallel()
	e := newEstate(t, 20)
	reads := 0
	for i := range 100 {
		switch i % 10 {
		case 3:
			e.task("POST", e.vmPath(i%20)+"/snapshot", map[string]any{"snapname": fmt.Sprintf("s%d", i)})
		case 7:
			e.put((i+5)%20, map[string]any{"description": fmt.Sprintf("checked by Bob, round %d", i)})
		}
		res, open := e.check()
		reads += res.ConfigReads
		if res.Machines != 20 || len(open) > 0 || res.Findings > 0 {
			t.Fatalf("check %d of a healthy estate: %d machines, %d findings: %+v", i+1, res.Machines, res.Findings, open)
		}
	}
	if reads < 20 {
		t.Errorf("100 checks read %d configs: the sweep did not cover the 20 machines", reads)
	}
	e.put(11, map[string]any{"memory": 1024})
	_, open := e.check()
	if len(open) != 1 || open[0].Path != "memory" || open[0].Kind != drift.Changed || open[0].StackID != e.stacks[11] {
		t.Fatalf("a memory change behind Horizon's back: %+v", open)
	}
}

// TestConfigOnlyEditFoundByNextCheck: a synchronous config edit (PUT …/config, no task) of keys
// the cluster listing does not reflect — a NIC's bridge, onboot, a cloud-init key — is found
// by the first check after it, on every machine it touched.
func TestConfigOnlyEditFoundByNextCheck(t *testing.T) {
	t.Parallel()
	e := newEstate(t, 20)
	for i := range 3 {
		if _, open := e.check(); len(open) != 0 {
			t.Fatalf("check %d of a healthy estate: %+v", i+1, open)
		}
	}
	e.put(4, map[string]any{"net0": "virtio,bridge=vmbr1"})
	e.put(12, map[string]any{"onboot": 0})
	e.put(17, map[string]any{"ipconfig0": "ip=dhcp"})
	_, open := e.check()
	got := map[uuid.UUID][]string{}
	for _, f := range open {
		got[f.StackID] = append(got[f.StackID], f.Path)
		slices.Sort(got[f.StackID])
	}
	want := map[uuid.UUID][]string{e.stacks[4]: {"net0.bridge"}, e.stacks[12]: {"onboot"}, e.stacks[17]: {"ipconfig0.gw", "ipconfig0.ip"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the first check after config-only edits found %v, want %v", got, want)
	}
}

// TestRollbackFoundWhereItChangesHorizonsKeys: a snapshot rollback is a finding exactly where
// it makes the machine differ from what Horizon set — none when it goes back to Horizon's
// settings (even across a notes edit), the changed key when the snapshot held another value,
// the stopped status when the rollback leaves the VM off — and deleting snapshots is none.
func TestRollbackFoundWhereItChangesHorizonsKeys(t *testing.T) {
	t.Parallel()
	e := newEstate(t, 1)
	vm := e.vmPath(0)
	e.task("POST", vm+"/snapshot", map[string]any{"snapname": "asbuilt"})
	e.put(0, map[string]any{"description": "before Bob's upgrade"})
	if _, open := e.check(); len(open) != 0 {
		t.Fatalf("a snapshot and a notes edit: %+v", open)
	}

	e.put(0, map[string]any{"memory": 2048})
	if _, open := e.check(); len(open) != 1 || open[0].Path != "memory" {
		t.Fatalf("a memory change: %+v", open)
	}
	e.task("POST", vm+"/snapshot/asbuilt/rollback", map[string]any{"start": 1})
	if _, open := e.check(); len(open) != 0 {
		t.Fatalf("a rollback to Horizon's settings left findings: %+v", open)
	}

	// A snapshot of other settings, Horizon's put back, then a rollback to the snapshot: the
	// one key it changes is found, and the rollback named as the change.
	e.put(0, map[string]any{"memory": 4096, "cores": 2})
	e.task("POST", vm+"/snapshot", map[string]any{"snapname": "bigger"})
	e.put(0, map[string]any{"memory": 512, "cores": 1})
	if _, open := e.check(); len(open) != 0 {
		t.Fatalf("settings put back: %+v", open)
	}
	e.put(0, map[string]any{"cores": 1, "description": "notes after the snapshot"}) // a no-op and a notes edit
	e.task("POST", vm+"/snapshot/bigger/rollback", map[string]any{"start": 1})
	_, open := e.check()
	got := map[string]store.DriftFinding{}
	for _, f := range open {
		got[f.Path] = f
	}
	if len(open) != 2 || got["memory"].Kind != drift.Changed || fmt.Sprint(got["memory"].Actual) != "4096" ||
		got["cores"].Kind != drift.Changed || fmt.Sprint(got["cores"].Actual) != "2" {
		t.Fatalf("a rollback to other settings: want memory and cores changed, got %+v", open)
	}
	if by := got["memory"].ChangedBy; by == nil || *by != e.cluster.TokenID() {
		t.Errorf("the rollback was not named as the change: changed by %v", by)
	}

	// Without start, PVE leaves a rolled-back VM stopped: only the status differs.
	e.task("POST", vm+"/snapshot/asbuilt/rollback", nil)
	if _, open := e.check(); len(open) != 1 || open[0].Path != "status" || open[0].Kind != drift.Stopped {
		t.Fatalf("a rollback without start: want status stopped only, got %+v", open)
	}
	e.task("POST", vm+"/status/start", nil)
	e.task("DELETE", vm+"/snapshot/bigger", nil)
	e.task("DELETE", vm+"/snapshot/asbuilt", nil)
	if _, open := e.check(); len(open) != 0 {
		t.Fatalf("snapshots deleted: %+v", open)
	}
}
