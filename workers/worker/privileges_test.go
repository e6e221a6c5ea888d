package worker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"horizon/deploy/sandbox/pve"
	"horizon/functions/apitest"
	"horizon/shared/proxmox"
)

// poolDevOnly gives the sandbox's token what an operator would for a team that deploys into
// pool dev: audit everywhere, VMs of pool dev, the storages and the bridges — not pool prod.
func poolDevOnly(c *pve.Config) {
	tok := &c.Clusters[0].Tokens[0]
	tok.Privsep = true
	tok.ACLs = []pve.ACLConfig{
		{Path: "/", Role: "PVEAuditor"},
		{Path: "/pool/dev", Role: "PVEVMAdmin"}, {Path: "/pool/dev", Role: "PVEPoolUser"},
		{Path: "/storage", Role: "PVEDatastoreAdmin"},
		{Path: "/sdn/zones/localnetwork", Role: "PVESDNUser"},
	}
}

// TestDeployIsRefusedForAPrivilegeTheTokenLacks: with a token whose ACLs cover pool dev only,
// a stack in prod is refused at deploy — naming the token, the privilege and the paths —
// before any VM exists, and the same stack in dev deploys end to end through the sandbox's
// permission checks.
func TestDeployIsRefusedForAPrivilegeTheTokenLacks(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{sandbox: poolDevOnly})
	inProd := func(name string, addr int) string {
		r := e.API.Do("POST", "/v1/stacks", apitest.Req{Token: e.Member, Body: map[string]any{"team_id": e.Team, "name": name,
			"environment_id": e.Env, "template_id": e.Tmpl, "template_version": 1,
			"jobs": map[string]any{"db": map[string]any{"executions": []any{e.Machine(addr, map[string]any{"pool": "prod"})}},
				"app": map[string]any{"executions": []any{e.Machine(addr+1, map[string]any{"pool": "prod"})}}}}})
		if r.Status != 201 {
			t.Fatalf("draft: %d %s", r.Status, r.Body)
		}
		return r.Map()["id"].(string)
	}
	denied := inProd("denied", 0)
	r := e.API.Do("POST", "/v1/stacks/"+denied+"/deploy", apitest.Req{Token: e.Member})
	if r.Status != 422 {
		t.Fatalf("deploy into prod: %d %s, want 422", r.Status, r.Body)
	}
	body := string(r.Body)
	for _, want := range []string{"jobs.db.executions[0].pool", "token horizon@pve!ci lacks VM.Allocate", "/pool/prod"} {
		if !strings.Contains(body, want) {
			t.Fatalf("the refusal does not say %q: %s", want, body)
		}
	}
	if vms := e.vmsByName(); len(vms) != 0 {
		t.Fatalf("a refused deploy left VMs: %v", vms)
	}
	allowed := e.Draft("allowed", 1)
	if r := e.API.Do("POST", "/v1/stacks/"+allowed+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy into dev: %d %s", r.Status, r.Body)
	}
	e.waitState(allowed, "deployed", 3*time.Minute)
	if r := e.API.Do("DELETE", "/v1/stacks/"+allowed, apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("remove: %d %s", r.Status, r.Body)
	}
	e.waitState(allowed, "removed", 3*time.Minute)
}

// TestISOBuildIsRefusedAtPreflightForMissingPrivileges: a token that may not put templates on
// the image's storage nor reach the network from the node has its ISO build refused at
// preflight, naming each privilege and path, and nothing is downloaded or created.
func TestISOBuildIsRefusedAtPreflightForMissingPrivileges(t *testing.T) {
	t.Parallel()
	e := newISOEngine(t, engineOpts{sandbox: func(c *pve.Config) {
		poolDevOnly(c)
		tok := &c.Clusters[0].Tokens[0]
		tok.ACLs = append(tok.ACLs, pve.ACLConfig{Path: "/vms", Role: "PVEVMAdmin"},
			pve.ACLConfig{Path: "/storage/local", Role: "PVEDatastoreUser"})
	}})
	id := e.build(e.isoTemplate("noble", "cloud-image", e.cloudImage(9400, 1)), nil)
	st := stages(e.waitISO(id, "failed"))
	msg := fmt.Sprint(st["preflight"]["error"])
	for _, want := range []string{"token horizon@pve!ci lacks Datastore.AllocateTemplate on /storage/local",
		"token horizon@pve!ci lacks Sys.AccessNetwork on /nodes/pve1 (or Sys.Modify on /)"} {
		if st["preflight"]["state"] != "failed" || !strings.Contains(msg, want) {
			t.Fatalf("preflight %v: want %q", st["preflight"], want)
		}
	}
	if strings.Contains(msg, "VM.Allocate") {
		t.Errorf("preflight names a privilege the token holds: %s", msg)
	}
	if len(e.Sandbox.Cluster("demo").VMs()) != 0 || len(e.content("local", "import")) != 0 {
		t.Fatal("a refused build left a VM or a file")
	}
}

// TestTheDocumentedMinimalRoleIsEnough: a privilege-separated token (and its user) holding
// exactly the role deploy/README.md gives operators deploys and removes a stack and builds an
// ISO with a linked clone, through the sandbox's permission checks; and the recipe there lists
// exactly proxmox.TokenPrivileges.
func TestTheDocumentedMinimalRoleIsEnough(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "deploy", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	recipe := regexp.MustCompile(`pveum role add Horizon -privs "([^"]+)"`).FindStringSubmatch(string(readme))
	if recipe == nil || !slices.Equal(strings.Fields(recipe[1]), proxmox.TokenPrivileges) {
		t.Fatalf("deploy/README.md's role %v is not proxmox.TokenPrivileges %v", recipe, proxmox.TokenPrivileges)
	}
	minimal := func(c *pve.Config) {
		cl := &c.Clusters[0]
		cl.Roles = map[string][]string{"Horizon": proxmox.TokenPrivileges}
		tok := &cl.Tokens[0]
		tok.Privsep = true
		tok.ACLs = []pve.ACLConfig{{Path: "/", Role: "Horizon"}}
		tok.UserACLs = []pve.ACLConfig{{Path: "/", Role: "Horizon"}}
	}
	t.Run("stack", func(t *testing.T) {
		t.Parallel()
		e := newEngine(t, engineOpts{sandbox: minimal})
		stack := e.deployed("minimal", 1)
		if r := e.API.Do("DELETE", "/v1/stacks/"+stack, apitest.Req{Token: e.Member}); r.Status != 202 {
			t.Fatalf("remove: %d %s", r.Status, r.Body)
		}
		e.waitState(stack, "removed", 3*time.Minute)
	})
	t.Run("iso", func(t *testing.T) {
		t.Parallel()
		e := newISOEngine(t, engineOpts{sandbox: minimal})
		id := e.build(e.isoTemplate("noble", "cloud-image", e.cloudImage(9400, 1)), nil)
		e.waitISO(id, "built")
	})
}

// TestPrivilegeTakenAwayMidRunIsNamed: the deploy's preflight passes, then the operator takes
// VM.Allocate away on pool dev before the first build: the step fails with Proxmox's own words,
// path and privilege, and the stack ends failed, not stuck.
func TestPrivilegeTakenAwayMidRunIsNamed(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{sandbox: poolDevOnly})
	stack := e.Draft("revoked", 1)
	resume := e.pauseControl()
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	c := e.Sandbox.Cluster("demo")
	c.SetTokenACLs(c.TokenID(), []pve.ACLConfig{
		{Path: "/", Role: "PVEAuditor"},
		{Path: "/pool/dev", Role: "PVEVMUser"}, {Path: "/pool/dev", Role: "PVEPoolUser"},
		{Path: "/storage", Role: "PVEDatastoreAdmin"},
		{Path: "/sdn/zones/localnetwork", Role: "PVESDNUser"},
	})
	resume()
	e.waitState(stack, "failed", 3*time.Minute)
	msg := fmt.Sprint(e.pipeline(stack)["db[0]"]["error"])
	if !strings.Contains(msg, "Permission check failed (/vms/") || !strings.Contains(msg, "VM.Allocate") {
		t.Fatalf("the failed step says %q; want Proxmox's permission failure with path and privilege", msg)
	}
	if vms := e.vmsByName(); len(vms) != 0 {
		t.Fatalf("VMs made without the privilege: %v", vms)
	}
}

// TestDeployIsRefusedForABridgeTheTokenMayNotUse: PVE checks SDN.Use on a plain bridge a NIC
// plugs into; a token without it is refused at deploy, on the execution's address, naming the
// bridge's path.
func TestDeployIsRefusedForABridgeTheTokenMayNotUse(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engineOpts{sandbox: func(c *pve.Config) {
		poolDevOnly(c)
		tok := &c.Clusters[0].Tokens[0]
		tok.ACLs = slices.DeleteFunc(tok.ACLs, func(a pve.ACLConfig) bool { return strings.HasPrefix(a.Path, "/sdn") })
	}})
	stack := e.Draft("unplugged", 1)
	r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member})
	if r.Status != 422 || !strings.Contains(string(r.Body), "jobs.db.executions[0].address_id") ||
		!strings.Contains(string(r.Body), "token horizon@pve!ci lacks SDN.Use on /sdn/zones/localnetwork/vmbr0") {
		t.Fatalf("deploy without SDN.Use: %d %s", r.Status, r.Body)
	}
	if vms := e.vmsByName(); len(vms) != 0 {
		t.Fatalf("a refused deploy left VMs: %v", vms)
	}
}
