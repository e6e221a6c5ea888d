package pve

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

const allPowerful = "root@pam!all"

// restricted makes the cluster's first token a privilege-separated one with acls (its user is
// unrestricted), and adds an all-powerful second token for setting things up.
func restricted(acls ...ACLConfig) func(*Config) {
	return func(cfg *Config) {
		cl := &cfg.Clusters[0]
		cl.Tokens[0].Privsep = true
		cl.Tokens[0].ACLs = acls
		cl.Tokens = append(cl.Tokens, TokenConfig{ID: allPowerful, Secret: "all-secret"})
	}
}

// callAs is call with another of the cluster's tokens.
func (e *testEnv) callAs(t *testing.T, token, method, path string, form url.Values) apiResponse {
	t.Helper()
	target := e.c.URL() + "/api2/json" + path
	var body *strings.Reader
	if form != nil && method != http.MethodGet {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
		if form != nil {
			target += "?" + form.Encode()
		}
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	secret := "all-secret"
	if token == e.c.TokenID() {
		secret = e.c.TokenSecret()
	}
	req.Header.Set("Authorization", fmt.Sprintf("PVEAPIToken=%s=%s", token, secret))
	return do(t, httpClient(t, e.c), req)
}

func wantDenied(t *testing.T, r apiResponse, message string) {
	t.Helper()
	if r.status != http.StatusForbidden || r.reason != message {
		t.Fatalf("got %d %q, want 403 %q", r.status, r.reason, message)
	}
}

// TestRestrictedTokenIsCheckedAsPVEChecks: a token whose ACLs cover pool dev, one storage and
// the bridges creates, starts and lists VMs in dev; in prod, on another storage or on / it is
// refused with PVE's 403 naming path and privilege, and nothing is created; listings leave out
// what it may not audit; /access/permissions says what it holds.
func TestRestrictedTokenIsCheckedAsPVEChecks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, restricted(
		ACLConfig{Path: "/pool/dev", Role: "PVEVMAdmin"},
		ACLConfig{Path: "/storage/local-lvm", Role: "PVEDatastoreUser"},
		ACLConfig{Path: "/sdn/zones/localnetwork", Role: "PVESDNUser"},
	))
	me := e.c.TokenID()
	create := func(vmid int, pool, storage string) apiResponse {
		return e.callAs(t, me, "POST", "/nodes/pve1/qemu", url.Values{"vmid": {fmt.Sprint(vmid)}, "pool": {pool},
			"scsi0": {storage + ":1"}, "net0": {"virtio,bridge=vmbr0"}})
	}
	wantDenied(t, create(100, "prod", "local-lvm"), "Permission check failed (/vms/100, VM.Allocate)")
	wantDenied(t, create(100, "dev", "shared"), "Permission check failed (/storage/shared, Datastore.AllocateSpace)")
	if r := e.callAs(t, allPowerful, "GET", "/cluster/resources", url.Values{"type": {"vm"}}); len(mustOK(t, r).([]any)) != 0 {
		t.Fatalf("a refused create left VMs: %v", r.data())
	}
	e.waitTask(t, mustOK(t, create(100, "dev", "local-lvm")).(string))
	e.waitTask(t, mustOK(t, e.callAs(t, me, "POST", "/nodes/pve1/qemu/100/status/start", nil)).(string))
	// Another VM, outside the token's pool: neither listed nor reachable.
	e.waitTask(t, mustOK(t, e.callAs(t, allPowerful, "POST", "/nodes/pve1/qemu", url.Values{"vmid": {"200"}, "pool": {"prod"}})).(string))
	vms := mustOK(t, e.callAs(t, me, "GET", "/nodes/pve1/qemu", nil)).([]any)
	if len(vms) != 1 || vms[0].(map[string]any)["vmid"] != 100.0 {
		t.Fatalf("the token lists %v, want VM 100 alone", vms)
	}
	wantDenied(t, e.callAs(t, me, "GET", "/nodes/pve1/qemu/200/config", nil), "Permission check failed (/vms/200, VM.Audit)")
	wantDenied(t, e.callAs(t, me, "DELETE", "/nodes/pve1/qemu/200", nil), "Permission check failed (/vms/200, VM.Allocate)")
	wantDenied(t, e.callAs(t, me, "GET", "/cluster/status", nil), "Permission check failed (/, Sys.Audit)")
	storages := mustOK(t, e.callAs(t, me, "GET", "/nodes/pve1/storage", nil)).([]any)
	if len(storages) != 1 || storages[0].(map[string]any)["storage"] != "local-lvm" {
		t.Fatalf("the token lists storages %v, want local-lvm alone", storages)
	}
	perms := mustOK(t, e.callAs(t, me, "GET", "/access/permissions", url.Values{"path": {"/pool/dev"}})).(map[string]any)
	if perms["/pool/dev"].(map[string]any)["VM.Allocate"] != 1.0 {
		t.Fatalf("permissions on /pool/dev: %v", perms)
	}
	perms = mustOK(t, e.callAs(t, me, "GET", "/access/permissions", url.Values{"path": {"/pool/prod"}})).(map[string]any)
	if _, ok := perms["/pool/prod"].(map[string]any)["VM.Allocate"]; ok {
		t.Fatalf("permissions on /pool/prod: %v", perms)
	}
}

// TestPrivilegeSeparationIntersects: a privilege-separated token holds only what its ACLs and
// its user's both grant; without separation it holds its user's.
func TestPrivilegeSeparationIntersects(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(cfg *Config) {
		restricted(ACLConfig{Path: "/", Role: "PVEVMAdmin"})(cfg)
		cl := &cfg.Clusters[0]
		cl.Tokens[0].UserACLs = []ACLConfig{{Path: "/vms", Role: "PVEVMUser"}, {Path: "/", Role: "PVEAuditor"}}
		cl.Tokens = append(cl.Tokens, TokenConfig{ID: "user@pve!shared", Secret: "all-secret", UserACLs: []ACLConfig{{Path: "/vms", Role: "PVEVMAdmin"}}})
	})
	wantDenied(t, e.callAs(t, e.c.TokenID(), "POST", "/nodes/pve1/qemu", url.Values{"vmid": {"100"}}),
		"Permission check failed (/vms/100, VM.Allocate)")
	// Without separation, the user's PVEVMAdmin on /vms is the token's.
	e.waitTask(t, mustOK(t, e.callAs(t, "user@pve!shared", "POST", "/nodes/pve1/qemu", url.Values{"vmid": {"100"}})).(string))
	// VM.PowerMgmt is in both the token's and the user's roles.
	e.waitTask(t, mustOK(t, e.callAs(t, e.c.TokenID(), "POST", "/nodes/pve1/qemu/100/status/start", nil)).(string))
}
