package worker_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/auth"
)

// tenant is a team of the engine with a member, an SSH key whose private half the test holds,
// and one stack.
type tenant struct {
	team, token, key string
	signer           ssh.Signer
	stack            string
}

// newTenant makes a team with a member and the member's SSH key.
func (e *engine) newTenant(name string) *tenant {
	t := e.t
	t.Helper()
	team := e.API.NewTeam(name)
	_, token := e.API.NewUser(auth.RoleMember, team)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	k := e.API.Do("POST", "/v1/ssh-keys", apitest.Req{Token: token, Body: map[string]any{"name": name + " laptop",
		"public_key": strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))}})
	if k.Status != 201 {
		t.Fatalf("ssh key: %d %s", k.Status, k.Body)
	}
	return &tenant{team: team.String(), token: token, key: k.Map()["id"].(string), signer: signer}
}

// draftFor creates the tenant's one-db, one-app draft on node, with addresses addr and addr+1.
func (e *engine) draftFor(tn *tenant, name string, addr int, node string) string {
	t := e.t
	t.Helper()
	m := func(a int) map[string]any {
		return e.Machine(a, map[string]any{"node": node, "ssh_key_id": tn.key})
	}
	r := e.API.Do("POST", "/v1/stacks", apitest.Req{Token: tn.token, Body: map[string]any{"team_id": tn.team, "name": name,
		"environment_id": e.Env, "template_id": e.Tmpl, "template_version": 1,
		"jobs": map[string]any{"db": map[string]any{"executions": []any{m(addr)}}, "app": map[string]any{"executions": []any{m(addr + 1)}}}}})
	if r.Status != 201 {
		t.Fatalf("draft: %d %s", r.Status, r.Body)
	}
	return r.Map()["id"].(string)
}

// TestTwoTeamsStacksOfOneMinuteShareNothing deploys two teams' stacks created in the same
// second, with machines of the same job and index on one node. Their ids then share the
// leading (timestamp) digits of a UUIDv7, which once named the cloud-init snippet: the second
// build overwrote the first's, and after a restart the first team's VM booted with the second
// team's hostname, host key and SSH key. Each VM must keep its own snippet, tag and keys.
func TestTwoTeamsStacksOfOneMinuteShareNothing(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	a, b := e.newTenant("alpha"), e.newTenant("beta")
	// The environment belongs to every team; the addresses are the engine's.
	a.stack = e.draftFor(a, "alpha", 0, "pve1")
	b.stack = e.draftFor(b, "beta", 2, "pve1")
	t.Logf("stack ids %s and %s (same leading block: %v)", a.stack, b.stack, a.stack[:8] == b.stack[:8])

	var wg sync.WaitGroup
	for _, tn := range []*tenant{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := e.API.Do("POST", "/v1/stacks/"+tn.stack+"/deploy", apitest.Req{Token: tn.token}); r.Status != 202 {
				t.Errorf("deploy %s: %d %s", tn.stack, r.Status, r.Body)
			}
		}()
	}
	wg.Wait()
	for _, tn := range []*tenant{a, b} {
		e.waitStateAs(tn.token, tn.stack, "deployed", 3*time.Minute)
	}

	vms := e.Sandbox.Cluster("demo").VMs()
	if len(vms) != 4 {
		t.Fatalf("sandbox has %d VMs, want 4", len(vms))
	}
	snippets := map[string]string{}
	for _, vm := range vms {
		owner := a
		if strings.HasPrefix(vm.Name, "beta-") {
			owner = b
		}
		if !contains(vm.Tags, "stack-"+owner.stack) {
			t.Errorf("VM %s: tags %v, want stack-%s", vm.Name, vm.Tags, owner.stack)
		}
		user := vm.Config["cicustom"]
		if other, dup := snippets[user]; dup {
			t.Errorf("VMs %s and %s share the cloud-init snippet %s", other, vm.Name, user)
		}
		snippets[user] = vm.Name
	}

	// After a restart each VM boots from its own snippet again: it presents the host key
	// Horizon pinned for it and accepts its owner's key only.
	pve := e.proxmox()
	for _, vm := range vms {
		var upid string
		if err := pve.Post(t.Context(), fmt.Sprintf("/nodes/%s/qemu/%d/status/reboot", vm.Node, vm.VMID), nil, &upid); err != nil {
			t.Fatal(err)
		}
		if err := pve.WaitTask(t.Context(), upid, 20*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	for _, vm := range vms {
		owner, other := a, b
		if strings.HasPrefix(vm.Name, "beta-") {
			owner, other = b, a
		}
		var pinned string
		if err := e.API.DB.QueryRow(t.Context(), `SELECT host_key_fingerprint FROM executions WHERE vmid = $1 AND stack_id = $2`,
			vm.VMID, owner.stack).Scan(&pinned); err != nil {
			t.Fatalf("VM %s: the execution of stack %s: %v", vm.Name, owner.stack, err)
		}
		addr := e.Sandbox.Cluster("demo").VMSSHAddr(vm.VMID)
		if err := sshLogin(addr, owner.signer, pinned); err != nil {
			t.Errorf("VM %s refuses its owner's key after a restart: %v", vm.Name, err)
		}
		if err := sshLogin(addr, other.signer, pinned); err == nil {
			t.Errorf("VM %s accepts the other team's key", vm.Name)
		}
	}
}

// sshLogin logs in to addr with key, accepting only the host key of the given fingerprint.
func sshLogin(addr string, key ssh.Signer, fingerprint string) error {
	cfg := &ssh.ClientConfig{User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(key)}, Timeout: 5 * time.Second,
		HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error {
			if got := ssh.FingerprintSHA256(k); got != fingerprint {
				return fmt.Errorf("host key %s, Horizon pinned %s", got, fingerprint)
			}
			return nil
		}}
	c, err := ssh.Dial("tcp", addr, cfg)
	if err != nil {
		return err
	}
	return c.Close()
}

// stackBody is a create body of the sandbox-vm template for the tenant, with key as every
// machine's SSH key.
func (e *engine) stackBody(tn *tenant, name, key string, addr int) map[string]any {
	m := func(a int) map[string]any { return e.Machine(a, map[string]any{"node": "pve1", "ssh_key_id": key}) }
	return map[string]any{"team_id": tn.team, "name": name, "environment_id": e.Env, "template_id": e.Tmpl, "template_version": 1,
		"jobs": map[string]any{"db": map[string]any{"executions": []any{m(addr)}}, "app": map[string]any{"executions": []any{m(addr + 1)}}}}
}

// wantKeyProblem fails unless r is a 422 naming db[0]'s and app[0]'s ssh_key_id.
func wantKeyProblem(t *testing.T, what string, r *apitest.Response) {
	t.Helper()
	if r.Status != 422 {
		t.Fatalf("%s: %d %s, want 422", what, r.Status, r.Body)
	}
	fields := strings.Join(r.Problem().Fields(), " ")
	for _, f := range []string{"jobs.db.executions[0].ssh_key_id", "jobs.app.executions[0].ssh_key_id"} {
		if !strings.Contains(fields, f) {
			t.Fatalf("%s: problem fields %q, want %s", what, fields, f)
		}
	}
}

// TestSSHKeysAreCheckedOnEveryReference: a stack takes only keys of its own team's members,
// on create, on edit and at deploy; a key deleted under a draft is a problem of the draft and
// refuses its deploy; a key deleted between the deploy and the build fails the build at once
// (no retries), naming the key, and frees the node's line.
func TestSSHKeysAreCheckedOnEveryReference(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{noWorker: true})
	a, b := e.newTenant("alpha"), e.newTenant("beta")

	// Another team's key, and a key that never existed, are refused when a draft is saved.
	wantKeyProblem(t, "create with another team's key", e.API.Do("POST", "/v1/stacks", apitest.Req{Token: b.token, Body: e.stackBody(b, "thief", a.key, 0)}))
	wantKeyProblem(t, "create with an unknown key", e.API.Do("POST", "/v1/stacks", apitest.Req{Token: b.token,
		Body: e.stackBody(b, "ghost", "0190f0c4-0000-7000-8000-000000000000", 0)}))
	r := e.API.Do("POST", "/v1/stacks", apitest.Req{Token: b.token, Body: e.stackBody(b, "honest", b.key, 0)})
	if r.Status != 201 {
		t.Fatalf("create with the team's own key: %d %s", r.Status, r.Body)
	}
	honest := r.Map()["id"].(string)
	patch := e.stackBody(b, "honest", a.key, 0)
	delete(patch, "team_id")
	delete(patch, "template_id")
	wantKeyProblem(t, "edit a draft to another team's key", e.API.Do("PATCH", "/v1/stacks/"+honest, apitest.Req{Token: b.token,
		Headers: map[string]string{"If-Match": r.Header.Get("ETag")}, Body: patch}))

	// A teammate's key is the team's to use.
	mate := e.newTenant("alpha-mate")
	if err := e.API.DB.QueryRow(t.Context(), `INSERT INTO memberships (user_id, team_id) SELECT user_id, $2 FROM ssh_keys WHERE id = $1 RETURNING 1`,
		mate.key, a.team).Scan(new(int)); err != nil {
		t.Fatal(err)
	}
	if r := e.API.Do("POST", "/v1/stacks", apitest.Req{Token: a.token, Body: e.stackBody(a, "shared-key", mate.key, 2)}); r.Status != 201 {
		t.Fatalf("create with a teammate's key: %d %s", r.Status, r.Body)
	}

	// The key is deleted under the draft: the draft lists the problem, and deploy refuses.
	if r := e.API.Do("DELETE", "/v1/ssh-keys/"+b.key, apitest.Req{Token: b.token}); r.Status != 204 {
		t.Fatalf("delete key: %d %s", r.Status, r.Body)
	}
	d := e.API.Do("GET", "/v1/stacks/"+honest, apitest.Req{Token: b.token}).Map()
	if !strings.Contains(fmt.Sprint(d["problems"]), "jobs.db.executions[0].ssh_key_id") {
		t.Fatalf("draft problems %v, want the deleted key", d["problems"])
	}
	wantKeyProblem(t, "deploy with a deleted key", e.API.Do("POST", "/v1/stacks/"+honest+"/deploy", apitest.Req{Token: b.token}))

	// Deleted between deploy and build: the build fails at once, naming the key.
	a.stack = e.draftFor(a, "late", 4, "pve1")
	if r := e.API.Do("POST", "/v1/stacks/"+a.stack+"/deploy", apitest.Req{Token: a.token}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	if r := e.API.Do("DELETE", "/v1/ssh-keys/"+a.key, apitest.Req{Token: a.token}); r.Status != 204 {
		t.Fatalf("delete key: %d %s", r.Status, r.Body)
	}
	e.startWorker(engineOpts{})
	e.waitStateAs(a.token, a.stack, "failed", time.Minute)
	var attempts int
	var errLine string
	if err := e.API.DB.QueryRow(t.Context(), `SELECT attempt, error FROM steps WHERE job = 'db' AND run_id = (SELECT id FROM runs WHERE stack_id = $1)`,
		a.stack).Scan(&attempts, &errLine); err != nil {
		t.Fatal(err)
	}
	if attempts != 1 || !strings.Contains(errLine, "SSH key "+a.key) {
		t.Fatalf("db step: attempt %d, error %q; want one attempt failing on the SSH key", attempts, errLine)
	}
	if len(e.Sandbox.Cluster("demo").VMs()) != 0 {
		t.Fatalf("a VM was built without its key: %+v", e.Sandbox.Cluster("demo").VMs())
	}
	e.gateLinesEmpty()
}

// moreAddresses adds n free addresses to the engine's network (after e.Addrs).
func (e *engine) moreAddresses(n int) {
	t := e.t
	var network, ip string
	if err := e.API.DB.QueryRow(t.Context(), `SELECT network_id, host(ip) FROM addresses WHERE id = $1`, e.Addrs[0]).Scan(&network, &ip); err != nil {
		t.Fatal(err)
	}
	prefix := ip[:strings.LastIndexByte(ip, '.')]
	for i := range n {
		r := e.API.Do("POST", "/v1/networks/"+network+"/addresses", apitest.Req{Body: map[string]any{"name": fmt.Sprintf("more-%d", i),
			"ip": fmt.Sprintf("%s.%d", prefix, 100+i)}})
		if r.Status != 201 {
			t.Fatalf("address: %d %s", r.Status, r.Body)
		}
		e.Addrs = append(e.Addrs, r.Map()["id"].(string))
	}
}

// TestSameNamedStacksOfTwoTeamsNeverShareAVMName: two teams deploy stacks of one name at the
// same instant, ten times. A VM's name is its hostname and is promised unique per cluster, so
// exactly one deploy of each pair is accepted and the other names the clash; the check cannot
// be a read of the cluster before the write (no VM exists yet while both deploys run).
func TestSameNamedStacksOfTwoTeamsNeverShareAVMName(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{noWorker: true})
	a, b := e.newTenant("alpha"), e.newTenant("beta")
	e.moreAddresses(40)
	for round := range 10 {
		name := fmt.Sprintf("twin%d", round)
		a.stack = e.draftFor(a, name, 10+4*round, "pve1")
		b.stack = e.draftFor(b, name, 12+4*round, "pve1")
		results := make([]*apitest.Response, 2)
		var wg sync.WaitGroup
		for i, tn := range []*tenant{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = e.API.Do("POST", "/v1/stacks/"+tn.stack+"/deploy", apitest.Req{Token: tn.token})
			}()
		}
		wg.Wait()
		accepted, refused := 0, 0
		for _, r := range results {
			switch {
			case r.Status == 202:
				accepted++
			case r.Status == 422 && strings.Contains(string(r.Body), "would be named "+name+"-"):
				refused++
			default:
				t.Fatalf("round %d: deploy answered %d %s", round, r.Status, r.Body)
			}
		}
		if accepted != 1 || refused != 1 {
			t.Fatalf("round %d: %d deploys accepted and %d refused, want one of each", round, accepted, refused)
		}
	}
	var names, distinct int
	if err := e.API.DB.QueryRow(t.Context(), `SELECT count(vm_name), count(DISTINCT (server_id, vm_name)) FILTER (WHERE vm_name IS NOT NULL) FROM executions`).Scan(&names, &distinct); err != nil {
		t.Fatal(err)
	}
	if names != 20 || distinct != 20 {
		t.Fatalf("%d machine names reserved, %d distinct; want 20 and 20", names, distinct)
	}
}

// snippets lists the cloud-init snippets on every node's local storage.
func (e *engine) snippets() []string {
	var out []string
	for _, node := range []string{"pve1", "pve2", "pve3"} {
		var items []struct {
			VolID string `json:"volid"`
		}
		if err := e.proxmox().Get(e.t.Context(), "/nodes/"+node+"/storage/local/content?content=snippets", &items); err != nil {
			e.t.Fatal(err)
		}
		for _, it := range items {
			out = append(out, node+":"+it.VolID)
		}
	}
	return out
}

// TestRunLocationAnswersItsTeamOnly: the Location of a 202 names the run, with its steps as
// the pipeline shows them (apitest follows every Location it is given); another team, and a
// run id under another stack, get 404.
func TestRunLocationAnswersItsTeamOnly(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{noWorker: true})
	a, b := e.newTenant("alpha"), e.newTenant("beta")
	a.stack, b.stack = e.draftFor(a, "one", 0, "pve1"), e.draftFor(b, "two", 2, "pve2")
	r := e.API.Do("POST", "/v1/stacks/"+a.stack+"/deploy", apitest.Req{Token: a.token})
	if r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	loc := r.Header.Get("Location")
	run := e.API.Do("GET", loc, apitest.Req{Token: a.token}).Map()
	if run["run"].(map[string]any)["id"] != r.Map()["id"] || len(run["columns"].([]any)) != 2 {
		t.Fatalf("GET %s: %v, want the run with its two phases", loc, run)
	}
	if got := e.API.Do("GET", loc, apitest.Req{Token: b.token}); got.Status != 404 {
		t.Fatalf("another team reads %s: %d", loc, got.Status)
	}
	if got := e.API.Do("GET", "/v1/stacks/"+b.stack+"/runs/"+r.Map()["id"].(string), apitest.Req{Token: b.token}); got.Status != 404 {
		t.Fatalf("a run under another stack: %d", got.Status)
	}
}

// pve runs a PVE API call that starts a task, and waits for the task.
func (e *engine) pve(method, path string) {
	e.t.Helper()
	var upid string
	var err error
	switch method {
	case "POST":
		err = e.proxmox().Post(e.t.Context(), path, nil, &upid)
	case "DELETE":
		err = e.proxmox().Delete(e.t.Context(), path, &upid)
	}
	if err == nil && upid != "" {
		err = e.proxmox().WaitTask(e.t.Context(), upid, 20*time.Millisecond)
	}
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
}

// TestRemovalOfAVanishedOrStoppedMachineSkipsItsCleanup: a removal asks Proxmox before it
// waits for a machine's SSH to run its cleanup scripts. A VM deleted outside Horizon, or
// stopped, has its cleanup skipped with a line saying why, and the removal finishes at its
// first try; it used to wait for SSH until the timeout, fail, and fail again on every retry.
func TestRemovalOfAVanishedOrStoppedMachineSkipsItsCleanup(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{})
	for _, tc := range []struct{ name, do, want string }{
		{"vanished", "delete", "no longer exists on node"},
		{"stopped", "stop", "is stopped, and is not started only to be destroyed"},
	} {
		stack := e.deployed(tc.name, 1)
		var vmid int
		var node string
		if err := e.API.DB.QueryRow(t.Context(), `SELECT vmid, node FROM executions WHERE stack_id = $1 AND job = 'app'`, stack).Scan(&vmid, &node); err != nil {
			t.Fatal(err)
		}
		e.pve("POST", fmt.Sprintf("/nodes/%s/qemu/%d/status/stop", node, vmid))
		if tc.do == "delete" {
			e.pve("DELETE", fmt.Sprintf("/nodes/%s/qemu/%d", node, vmid))
		}
		r := e.API.Do("DELETE", "/v1/stacks/"+stack, apitest.Req{Token: e.Member})
		if r.Status != 202 {
			t.Fatalf("%s: remove: %d %s", tc.name, r.Status, r.Body)
		}
		// The removal's log, followed live: a removed stack's stored log is deleted with it.
		lines, _ := e.followLog(stack, r.Map()["id"].(string), "")
		e.waitState(stack, "removed", time.Minute)
		var attempts int
		if err := e.API.DB.QueryRow(t.Context(), `SELECT max(attempt) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.stack_id = $1 AND r.kind = 'remove'`,
			stack).Scan(&attempts); err != nil || attempts != 1 {
			t.Fatalf("%s: the removal took %d attempts (%v), want 1", tc.name, attempts, err)
		}
		if log := strings.Join(lines, "\n"); !strings.Contains(log, fmt.Sprintf("cleanup scripts skipped: VM %d", vmid)) || !strings.Contains(log, tc.want) {
			t.Fatalf("%s: the log does not say why the cleanup was skipped:\n%s", tc.name, log)
		}
	}
}

// TestScriptOutputsAreDeclaredAndBounded: a script that emits an output the template does
// not declare, or a 5 MB value, fails its step with a message naming the output and the
// limit, and nothing of it is stored; before, 5.3 MB sat in executions.outputs and GET
// …/outputs answered 5.2 MB.
func TestScriptOutputsAreDeclaredAndBounded(t *testing.T) {
	t.Parallel()
	runaway := labtest.AppScriptWith(t, `case "$HORIZON_EXECUTION" in
0) echo "surprise=1" >>"$HORIZON_OUTPUT" ;;
1) printf 'app_url=%s\n' "$(head -c 5000000 /dev/zero | tr '\0' a)" >>"$HORIZON_OUTPUT" ;;
2) echo "api_key=in-clear" >>"$HORIZON_OUTPUT" ;;
esac
`)
	e := newEngine(t, engineOpts{override: map[string]string{labtest.AppScript: runaway}})
	stack := e.Draft("runaway", 3)
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	e.waitState(stack, "failed", 3*time.Minute)
	cards := e.pipeline(stack)
	for card, want := range map[string]string{
		"app[0]": "the scripts emitted outputs the template does not declare: surprise",
		"app[1]": "the scripts wrote more than 256 KiB of outputs to $HORIZON_OUTPUT, the limit",
		"app[2]": "the scripts wrote the secret output api_key to $HORIZON_OUTPUT",
	} {
		if msg, _ := cards[card]["error"].(string); !strings.HasPrefix(msg, want) {
			t.Errorf("card %s: %q, want %q…", card, msg, want)
		}
	}
	var stored int
	if err := e.API.DB.QueryRow(t.Context(), `SELECT coalesce(sum(length(outputs::text)), 0) FROM executions WHERE stack_id = $1`, stack).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored > 10<<10 {
		t.Fatalf("%d bytes of outputs stored", stored)
	}
}

// TestScriptsReachAMachineOnTheConfiguredSSHPort: with the machines' SSH on another port than
// 22 (an image's policy, or the unprivileged sandbox of `up`) and HORIZON_VM_SSH_PORT saying so,
// a stack's scripts run and it deploys.
func TestScriptsReachAMachineOnTheConfiguredSSHPort(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{vmSSHPort: 2222})
	stack := e.deployed("port", 1)
	if log := e.logText(stack); !strings.Contains(log, "connected to the machine's SSH at 127.") || !strings.Contains(log, ":2222") {
		t.Fatalf("the scripts did not go through port 2222:\n%s", log)
	}
}
