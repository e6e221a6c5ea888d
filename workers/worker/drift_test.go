package worker_test

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"horizon/deploy/sandbox/pve"
	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/proxmox"
	"horizon/shared/secrets"
	"horizon/shared/store"
)

// operatorToken is the sandbox token of an operator who changes VMs in Proxmox's own UI.
const operatorToken = "alice@pve!ui"

// convergingVM overrides the sandbox-vm example's machine module so that every apply makes the
// VM what the module says, as a Proxmox provider does: the VM is migrated back to its node,
// re-created when gone, started, and reconfigured at every apply; it gets a 1 GiB disk.
func convergingVM(t testing.TB) map[string]string {
	tf := labtest.ExampleFile(t, "jobs/vm/main.tf")
	sh := labtest.ExampleFile(t, "jobs/vm/pve-vm.sh")
	replace := func(s, old, new string) string {
		t.Helper()
		if !strings.Contains(s, old) {
			t.Fatalf("the example module changed: %q not found", old)
		}
		return strings.Replace(s, old, new, 1)
	}
	tf = replace(tf, "triggers_replace = local.identity\n  input            = local.identity",
		"triggers_replace = merge(local.identity, { always = timestamp() })\n  input            = local.identity")
	tf = replace(tf, "triggers_replace = merge(local.identity, local.config)", "triggers_replace = merge(local.identity, local.config, { always = timestamp() })")
	sh = replace(sh, `		[[ $name == "$VM_NAME" ]] || die`, `		: || die`)
	sh = replace(sh, `pve POST "/nodes/$VM_NODE/qemu" --data-urlencode "vmid=$VM_ID" "${ARGS[@]}"`,
		`pve POST "/nodes/$VM_NODE/qemu" --data-urlencode "vmid=$VM_ID" "${ARGS[@]}" --data-urlencode "scsi0=local-lvm:1"`)
	sh = replace(sh, "create() {\n", `create() {
	home
`)
	sh = replace(sh, "create() {\n", `home() {
	pve GET "/nodes"
	local n
	for n in $(grep -o '"node":"[^"]*"' <<<"$BODY" | cut -d'"' -f4); do
		[[ $n == "$VM_NODE" ]] && continue
		pve GET "/nodes/$n/qemu/$VM_ID/status/current"
		[[ $STATUS == 200 ]] || continue
		log "VM $VM_ID is on $n: migrating it back to $VM_NODE"
		pve POST "/nodes/$n/qemu/$VM_ID/migrate" --data-urlencode "target=$VM_NODE" --data-urlencode online=1 --data-urlencode with-local-disks=1
		[[ $STATUS == 200 ]] || die "migrate VM $VM_ID back: $REASON"
		VM_NODE=$n wait_task "$(field data)" "migrate VM $VM_ID"
		return
	done
}

create() {
`)
	return map[string]string{"jobs/vm/main.tf": tf, "jobs/vm/pve-vm.sh": sh}
}

// operator is a client of the sandbox acting as alice in Proxmox's UI.
func (e *engine) operator() *proxmox.Client {
	c := e.Sandbox.Cluster("demo")
	pc, err := proxmox.New(proxmox.Config{URL: c.URL(), TokenID: operatorToken, TokenSecret: secrets.Value("alice-secret"), Fingerprint: c.CertFingerprint()})
	if err != nil {
		e.t.Fatal(err)
	}
	return pc
}

// asOperator runs one call as the operator, waiting for its task when it starts one.
func (e *engine) asOperator(method, path string, form url.Values) {
	e.t.Helper()
	op, ctx := e.operator(), context.Background()
	data := map[string]string{}
	for k, v := range form {
		data[k] = v[0]
	}
	var upid string
	var err error
	switch method {
	case "POST":
		err = op.Post(ctx, path, data, &upid)
	case "PUT":
		err = op.Put(ctx, path, data, &upid)
	case "DELETE":
		err = op.Delete(ctx, path, &upid)
	}
	if err == nil && strings.HasPrefix(upid, "UPID:") {
		err = op.WaitTask(ctx, upid, 20*time.Millisecond)
	}
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
}

type machine struct {
	vmid int
	node string
}

// machines are the stack's recorded machines by "job[index]".
func (e *engine) machines(stack string) map[string]machine {
	e.t.Helper()
	rows, err := e.API.DB.Query(context.Background(), `SELECT e.job, e.index, r.vmid, r.node FROM vm_records r
		JOIN executions e ON e.id = r.execution_id WHERE r.stack_id = $1`, stack)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]machine{}
	for rows.Next() {
		var job string
		var idx int
		var m machine
		if err := rows.Scan(&job, &idx, &m.vmid, &m.node); err != nil {
			e.t.Fatal(err)
		}
		out[fmt.Sprintf("%s[%d]", job, idx)] = m
	}
	return out
}

// findings are the stack's drift findings as "job[i] path kind", sorted, and the detail's drift.
func (e *engine) findings(stack string) ([]string, map[string]any) {
	e.t.Helper()
	d, _ := e.get(stack)
	drift := d["drift"].(map[string]any)
	var out []string
	for _, f := range drift["findings"].([]any) {
		m := f.(map[string]any)
		s := fmt.Sprintf("%s[%v] %s %s", m["job"], m["execution"], m["path"], m["kind"])
		if m["accepted"] != nil {
			s += " accepted"
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out, drift
}

// check runs one drift check of the lab's server and fails the test on Horizon's own error.
func (e *engine) check(also ...uuid.UUID) (int, error) {
	e.t.Helper()
	res, err := e.worker.Drift.Check(context.Background(), mustUUID(e.t, e.Server), also)
	if err != nil {
		e.t.Fatalf("drift check: %v", err)
	}
	if res.Skipped {
		e.t.Fatal("drift check skipped: no other check runs")
	}
	return res.Findings, res.Failed
}

// driftEvents are the states of the drift events of the stack on the events stream, in order.
func (e *engine) driftEvents(stack string) []string {
	e.t.Helper()
	msgs, err := e.API.Deps.Redis.XRange(context.Background(), e.API.Deps.Namespace+":events", "-", "+").Result()
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		for _, v := range m.Values {
			if s, ok := v.(string); ok && strings.Contains(s, `"type":"drift"`) && strings.Contains(s, stack) {
				if strings.Contains(s, `"state":"found"`) {
					out = append(out, "found")
				} else {
					out = append(out, "cleared")
				}
			}
		}
	}
	return out
}

// subscribeToDrift subscribes a bot of the stack's team to the drift events, so that they reach
// the webhooks' outbox (nothing is written there for events no subscription wants). Its
// destination is never reached: the test reads the outbox, not a receiver.
func (e *engine) subscribeToDrift() {
	e.t.Helper()
	team := mustUUID(e.t, e.Team)
	_, err := store.WebhookCreate(context.Background(), e.API.DB, horizon.Webhook{TeamID: &team, Name: "drift bot", Kind: "standard",
		URLSealed: []byte("never opened"), URLShown: "https://bot.invalid/…", Enabled: true, SecretSealed: []byte("never opened"),
		Events: []string{"stack.drift.found", "stack.drift.cleared"}})
	if err != nil {
		e.t.Fatal(err)
	}
}

// driftOutbox are the drift events of the stack in the webhooks' outbox, in order, as
// driftEvents names them.
func (e *engine) driftOutbox(stack string) []string {
	e.t.Helper()
	rows, err := e.API.DB.Query(context.Background(), `SELECT type FROM webhook_events WHERE data->>'stack_id' = $1
		AND type LIKE 'stack.drift.%' ORDER BY created_at, id`, stack)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var typ string
		if err := rows.Scan(&typ); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, strings.TrimPrefix(typ, "stack.drift."))
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// TestDriftOnTheSandbox: a deployed stack is checked many times without a finding, through a
// snapshot and a notes edit; then every kind of change made behind Horizon's back through the
// PVE API is found with its kind, property and who made it, announced, and cleared by a
// re-apply — except a disk resize, which PVE cannot undo, and which an operator accepts; a VM
// deleted and recreated under its id is "replaced"; a server that does not answer raises
// nothing; two checks of one server do not run at once.
func TestDriftOnTheSandbox(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{override: convergingVM(t), sandbox: func(c *pve.Config) {
		c.Clusters[0].Tokens = append(c.Clusters[0].Tokens, pve.TokenConfig{ID: operatorToken, Secret: "alice-secret"})
	}})
	e.subscribeToDrift()
	stack := e.deployed("drifty", 3)
	vms := e.machines(stack)
	if len(vms) != 4 {
		t.Fatalf("recorded machines %v, want db and three apps", vms)
	}
	cfg := func(key string) string { m := vms[key]; return fmt.Sprintf("/nodes/%s/qemu/%d", m.node, m.vmid) }

	// A snapshot and a notes edit change PVE's digest, not what Horizon set.
	for key := range vms {
		e.asOperator("POST", cfg(key)+"/snapshot", url.Values{"snapname": {"before"}})
		e.asOperator("PUT", cfg(key)+"/config", url.Values{"description": {"rebooted by Bob"}})
	}
	for i := 0; i < 30; i++ {
		if n, failed := e.check(); n != 0 || failed != nil {
			got, _ := e.findings(stack)
			t.Fatalf("check %d of a healthy stack: %d findings %v, failure %v", i, n, got, failed)
		}
	}
	if _, d := e.findings(stack); d["drifted"] != false || d["checked_at"] == nil {
		t.Fatalf("healthy stack's drift: %v", d)
	}

	// Every kind of change, through the PVE API, as alice.
	e.asOperator("POST", cfg("db[0]")+"/status/stop", nil)
	e.asOperator("PUT", cfg("db[0]")+"/config", url.Values{"tags": {"prod;mine"}})
	e.asOperator("PUT", cfg("app[0]")+"/config", url.Values{"memory": {"2048"}})
	e.asOperator("PUT", cfg("app[0]")+"/resize", url.Values{"disk": {"scsi0"}, "size": {"+1G"}})
	e.asOperator("PUT", cfg("app[1]")+"/config", url.Values{"name": {"renamed"}})
	e.asOperator("POST", cfg("app[1]")+"/migrate", url.Values{"target": {"pve3"}, "online": {"1"}, "with-local-disks": {"1"}})
	e.asOperator("POST", cfg("app[2]")+"/status/stop", nil)
	e.asOperator("DELETE", cfg("app[2]")+"?purge=1", nil)
	if _, failed := e.check(); failed != nil {
		t.Fatal(failed)
	}
	got, d := e.findings(stack)
	want := []string{"app[0] memory changed", "app[0] scsi0.size changed", "app[1] name changed", "app[1] node moved",
		"app[2]  missing", "db[0] status stopped", "db[0] tags changed"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || d["drifted"] != true {
		t.Fatalf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, f := range d["findings"].([]any) {
		m := f.(map[string]any)
		if p := m["path"]; p == "node" || p == "status" || p == "scsi0.size" || p == "" {
			if m["changed_by"] != operatorToken {
				t.Errorf("%s[%v] %s: changed by %v, want %s from the task log", m["job"], m["execution"], m["path"], m["changed_by"], operatorToken)
			}
		}
		if m["path"] == "memory" && (m["expected"] != "512" || m["actual"] != "2048") {
			t.Errorf("memory: %v → %v, want 512 → 2048", m["expected"], m["actual"])
		}
	}
	list := e.API.Do("GET", "/v1/stacks?drifted=true", apitest.Req{Token: e.Member}).Map()["items"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["id"] != stack || list[0].(map[string]any)["drifted"] != true {
		t.Fatalf("?drifted=true: %v", list)
	}
	if ev := e.driftEvents(stack); strings.Join(ev, ",") != "found" {
		t.Fatalf("drift events %v, want found", ev)
	}
	if ev := e.driftOutbox(stack); strings.Join(ev, ",") != "found" {
		t.Fatalf("drift events in the webhooks' outbox %v, want found", ev)
	}

	// A re-apply fixes what Terraform can: all but the disk PVE cannot shrink.
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/retry", apitest.Req{Token: e.Member, Body: map[string]any{"mode": "all"}}); r.Status != 202 {
		t.Fatalf("re-apply: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "deployed", 3*time.Minute)
	if _, failed := e.check(); failed != nil {
		t.Fatal(failed)
	}
	got, d = e.findings(stack)
	if strings.Join(got, ",") != "app[0] scsi0.size changed" {
		t.Fatalf("after the re-apply: %v, want only the resized disk", got)
	}

	// The operator accepts it: unknown → 404, stale → 412, then accepted.
	f := d["findings"].([]any)[0].(map[string]any)
	path := fmt.Sprintf("/v1/stacks/%s/drift/findings/%s/accept", stack, f["id"])
	body := map[string]any{"reason": "the app needs the space"}
	if r := e.API.Do("POST", fmt.Sprintf("/v1/stacks/%s/drift/findings/%s/accept", stack, uuid.New()), apitest.Req{Token: e.Member, Body: body}); r.Status != 404 {
		t.Fatalf("accept an unknown finding: %d, want 404", r.Status)
	}
	stale := fmt.Sprintf(`"%v"`, f["version"].(float64)+7)
	if r := e.API.Do("POST", path, apitest.Req{Token: e.Member, Body: body, Headers: map[string]string{"If-Match": stale}}); r.Status != 412 {
		t.Fatalf("accept with a stale If-Match: %d, want 412", r.Status)
	}
	if r := e.API.Do("POST", path, apitest.Req{Token: e.Member, Body: map[string]any{"reason": " "}}); r.Status != 422 {
		t.Fatalf("accept without a reason: %d, want 422", r.Status)
	}
	ok := e.API.Do("POST", path, apitest.Req{Token: e.Member, Body: body, Headers: map[string]string{"If-Match": fmt.Sprintf(`"%v"`, f["version"])}})
	if ok.Status != 200 || ok.Map()["accepted"] == nil {
		t.Fatalf("accept: %d %s", ok.Status, ok.Body)
	}
	if _, failed := e.check(); failed != nil {
		t.Fatal(failed)
	}
	if got, d = e.findings(stack); d["drifted"] != false || strings.Join(got, ",") != "app[0] scsi0.size changed accepted" {
		t.Fatalf("after accepting: drifted %v, %v", d["drifted"], got)
	}
	if ev := e.driftEvents(stack); strings.Join(ev, ",") != "found,cleared" {
		t.Fatalf("drift events %v, want found, cleared", ev)
	}
	if ev := e.driftOutbox(stack); strings.Join(ev, ",") != "found,cleared" {
		t.Fatalf("drift events in the webhooks' outbox %v, want found, cleared", ev)
	}

	// Deleted and recreated under the same VM id, with the same name: replaced.
	vms = e.machines(stack)
	db := vms["db[0]"]
	e.asOperator("POST", cfg("db[0]")+"/status/stop", nil)
	e.asOperator("DELETE", cfg("db[0]")+"?purge=1", nil)
	e.asOperator("POST", "/nodes/"+db.node+"/qemu", url.Values{"vmid": {fmt.Sprint(db.vmid)}, "name": {"drifty-db-0"}, "start": {"1"}})
	if _, failed := e.check(); failed != nil {
		t.Fatal(failed)
	}
	if got, _ = e.findings(stack); !strings.Contains(strings.Join(got, ","), "db[0]  replaced") {
		t.Fatalf("after a delete and recreate: %v, want db[0] replaced", got)
	}
	before, _ := e.findings(stack)

	// A server that does not answer: the failure is recorded, nothing is concluded.
	e.Sandbox.FailNext("GET /cluster/resources", 20, 503, "service unavailable")
	if _, failed := e.check(); failed == nil {
		t.Fatal("a check of a server that does not answer did not fail")
	}
	after, d := e.findings(stack)
	if strings.Join(after, ",") != strings.Join(before, ",") || d["check_error"] == nil {
		t.Fatalf("after a failed check: findings %v (were %v), check_error %v", after, before, d["check_error"])
	}
	e.Sandbox.FailNext("GET /cluster/resources", 0, 0, "")

	// A node that does not answer: its VMs are neither missing nor cleared.
	if err := e.Sandbox.Cluster("demo").SetNodeOnline(vms["app[1]"].node, false); err != nil {
		t.Fatal(err)
	}
	if _, failed := e.check(); failed != nil {
		t.Fatal(failed)
	}
	if after, _ = e.findings(stack); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Fatalf("with a node offline: %v, want %v", after, before)
	}
	if err := e.Sandbox.Cluster("demo").SetNodeOnline(vms["app[1]"].node, true); err != nil {
		t.Fatal(err)
	}

	// Two checks of one server: while one holds it, the other skips.
	other := uuid.New()
	if ok, _, err := store.DriftCheckClaim(context.Background(), e.API.DB, mustUUID(t, e.Server), other, time.Hour); err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	if res, err := e.worker.Drift.Check(context.Background(), mustUUID(t, e.Server), nil); err != nil || !res.Skipped {
		t.Fatalf("a second check at once: %+v %v, want skipped", res, err)
	}
	if err := store.DriftCheckFinish(context.Background(), e.API.DB, mustUUID(t, e.Server), other, time.Now(), nil); err != nil {
		t.Fatal(err)
	}

	// On demand: 202 for the stack, 409 for a draft, 404 for another team's.
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/drift-check", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("drift-check: %d %s", r.Status, r.Body)
	}
	draft := e.Draft("draft", 1)
	if r := e.API.Do("POST", "/v1/stacks/"+draft+"/drift-check", apitest.Req{Token: e.Member}); r.Status != 409 {
		t.Fatalf("drift-check of a draft: %d, want 409", r.Status)
	}
	_, stranger := e.API.NewUser(auth.RoleMember, e.API.NewTeam("strangers"))
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/drift-check", apitest.Req{Token: stranger}); r.Status != 404 {
		t.Fatalf("drift-check of another team's stack: %d, want 404", r.Status)
	}
	if r := e.API.Do("POST", path, apitest.Req{Token: stranger, Body: body}); r.Status != 404 {
		t.Fatalf("accept on another team's stack: %d, want 404", r.Status)
	}
}
