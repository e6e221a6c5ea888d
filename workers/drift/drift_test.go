package drift_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/deploy/sandbox/pve"
	"horizon/deploy/sandbox/pve/pvetest"
	"horizon/shared/drift"
	"horizon/shared/horizon"
	"horizon/shared/proxmox"
	"horizon/shared/secrets"
	"horizon/shared/store"
	"horizon/shared/testkit"
	driftcheck "horizon/workers/drift"
)

// estate is n deployed stacks of one VM each on the in-process sandbox, recorded as an apply
// records them (shared/drift.CaptureRecord's fields), and a checker of the server.
type estate struct {
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

func newEstate(t *testing.T, n int) *estate {
	t.Helper()
	ctx := context.Background()
	sb := pvetest.Start(t, func(c *pve.Config) { c.TaskDuration = 0 })
	e := &estate{t: t, db: testkit.DB(t), cluster: sb.Cluster("demo")}
	key := make([]byte, secrets.KeySize)
	_, _ = rand.Read(key)
	box, err := secrets.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	c := e.cluster
	e.api, err = proxmox.New(proxmox.Config{URL: c.URL(), TokenID: c.TokenID(), TokenSecret: secrets.Value(c.TokenSecret()), Fingerprint: c.CertFingerprint()})
	if err != nil {
		t.Fatal(err)
	}
	var team, env uuid.UUID
	if err := e.db.QueryRow(ctx, `INSERT INTO teams (name) VALUES ('ops') RETURNING id`).Scan(&team); err != nil {
		t.Fatal(err)
	}
	if err := e.db.QueryRow(ctx, `INSERT INTO environments (name) VALUES ('lab') RETURNING id`).Scan(&env); err != nil {
		t.Fatal(err)
	}
	tmpl, _, err := store.TemplateCreate(ctx, e.db, horizon.Template{Name: "vm", Active: true},
		horizon.TemplateVersion{Definition: []byte(`{"name":"vm","phases":[]}`), DefinitionHash: "drift", JobCommits: map[string]string{}, Modules: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.QueryRow(ctx, `INSERT INTO proxmox_servers (name, api_url, token_id, token_secret, tls_fingerprint, ssh_user, ssh_private_key, ssh_public_key)
		VALUES ('demo', $1, $2, $3, $4, 'root', '\x00', '') RETURNING id`, c.URL(), c.TokenID(),
		box.SealString(horizon.PurposeProxmoxTokenSecret, c.TokenSecret()), c.CertFingerprint()).Scan(&e.server); err != nil {
		t.Fatal(err)
	}
	prefix := testkit.LoopbackNet(t) // started VMs serve SSH on their addresses
	for i := range n {
		var stack, exec uuid.UUID
		if err := e.db.QueryRow(ctx, `INSERT INTO stacks (team_id, name, environment_id, template_id, template_version, state, deployed_at)
			VALUES ($1, $2, $3, $4, 1, 'deployed', now()) RETURNING id`, team, fmt.Sprintf("stack-%d", i), env, tmpl.ID).Scan(&stack); err != nil {
			t.Fatal(err)
		}
		if err := e.db.QueryRow(ctx, `INSERT INTO executions (stack_id, job, index, commit) VALUES ($1, 'vm', 0, 'c') RETURNING id`, stack).Scan(&exec); err != nil {
			t.Fatal(err)
		}
		vmid, node, name := 100+i, fmt.Sprintf("pve%d", 1+i%3), fmt.Sprintf("vm-%d", i)
		e.task("POST", "/nodes/"+node+"/qemu", map[string]any{"vmid": vmid, "name": name, "memory": 512, "cores": 1,
			"net0": "virtio,bridge=vmbr0", "tags": "horizon", "scsi0": "local-lvm:1", "ipconfig0": fmt.Sprintf("ip=%s.%d/24,gw=%s.1", prefix, 10+i, prefix),
			"start": 1, "pool": "dev"})
		rec, err := drift.CaptureRecord(ctx, e.api, drift.Record{ExecutionID: exec, StackID: stack, ServerID: e.server, VMID: vmid, Node: node, Name: name,
			Tags: []string{"horizon"}, Pool: "dev", Status: "running"})
		if err != nil {
			t.Fatal(err)
		}
		if err := store.VMRecordPut(ctx, e.db, rec, nil); err != nil {
			t.Fatal(err)
		}
		e.stacks, e.vmids, e.nodes = append(e.stacks, stack), append(e.vmids, vmid), append(e.nodes, node)
	}
	// Task start times have a resolution of a second, and a task of the record's second is
	// taken for Horizon's own (drift.Mentions): what the tests do behind Horizon's back starts
	// in a later second, as an operator's would.
	time.Sleep(1100 * time.Millisecond)
	e.checker = &driftcheck.Checker{DB: e.db, Box: box}
	return e
}

// task runs a PVE call that answers a task and waits for the task to succeed.
func (e *estate) task(method, path string, body map[string]any) {
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
func (e *estate) put(i int, body map[string]any) {
	e.t.Helper()
	if err := e.api.Put(context.Background(), fmt.Sprintf("/nodes/%s/qemu/%d/config", e.nodes[i], e.vmids[i]), body, nil); err != nil {
		e.t.Fatal(err)
	}
}

func (e *estate) vmPath(i int) string {
	return fmt.Sprintf("/nodes/%s/qemu/%d", e.nodes[i], e.vmids[i])
}

// check runs one check of the server and returns the findings it left open.
func (e *estate) check() (driftcheck.Result, []store.DriftFinding) {
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
