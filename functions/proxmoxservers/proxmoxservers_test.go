package proxmoxservers_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"horizon/deploy/sandbox/pve"
	"horizon/deploy/sandbox/pve/pvetest"
	"horizon/functions/apitest"
	"horizon/functions/proxmoxservers"
	"horizon/shared/auth"
)

func TestRegisterDiscoversTheCluster(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	sb := pvetest.Start(t, nil)
	body := sb.Registration("demo", "lab")
	r := s.Do("POST", "/v1/proxmox-servers", apitest.Req{Body: body})
	if r.Status != 201 {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	if strings.Contains(string(r.Body), sb.Cluster("demo").TokenSecret()) || strings.Contains(string(r.Body), "PRIVATE KEY") {
		t.Fatal("a secret came back in the answer")
	}
	var srv proxmoxservers.Server
	r.JSON(&srv)
	if len(srv.Nodes) != 3 || !srv.Nodes[0].Online || *srv.Nodes[0].HostKeySource != "pinned" || srv.PVEVersion == "" {
		t.Fatalf("nodes: %+v", srv.Nodes)
	}
	var storages, pools []string
	for _, st := range srv.Storages {
		storages = append(storages, st.Name)
	}
	for _, p := range srv.Pools {
		pools = append(pools, p.Pool)
	}
	sort.Strings(storages)
	if !reflect.DeepEqual(storages, []string{"local", "local-lvm", "shared"}) || !reflect.DeepEqual(pools, []string{"dev", "prod"}) {
		t.Fatalf("storages %v, pools %v", storages, pools)
	}
	if !strings.HasPrefix(srv.SSHPublicKey, "ssh-ed25519 ") {
		t.Fatalf("ssh public key %q", srv.SSHPublicKey)
	}
	var sealed []byte
	if err := s.DB.QueryRow(t.Context(), `SELECT token_secret FROM proxmox_servers WHERE id = $1`, srv.ID).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte(sb.Cluster("demo").TokenSecret())) {
		t.Fatal("the token secret is stored in clear")
	}
	_, viewer := s.NewUser(auth.RoleViewer)
	if g := s.Do("GET", "/v1/proxmox-servers/"+srv.ID.String(), apitest.Req{Token: viewer}); g.Status != 200 {
		t.Fatalf("viewer reads the inventory: %d", g.Status)
	}

	// The environment names the server; then the server cannot be deleted.
	env := s.Do("POST", "/v1/environments", apitest.Req{Body: map[string]any{"name": "prod", "proxmox_server_ids": []string{srv.ID.String()}}})
	if env.Status != 201 || env.Map()["proxmox_server_ids"].([]any)[0] != srv.ID.String() {
		t.Fatalf("environment: %d %s", env.Status, env.Body)
	}
	if d := s.Do("DELETE", "/v1/proxmox-servers/"+srv.ID.String(), apitest.Req{}); d.Status != 409 {
		t.Fatalf("delete a server in use: %d, want 409", d.Status)
	}
}

func TestRegisterTrustOnFirstUse(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	sb := pvetest.Start(t, nil)
	body := sb.Registration("demo", "lab")
	nodes := body["nodes"].([]map[string]any)
	delete(nodes[1], "ssh_host_key_fingerprint")
	nodes[1]["trust_on_first_use"] = true
	r := s.Do("POST", "/v1/proxmox-servers", apitest.Req{Body: body})
	if r.Status != 201 {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	var srv proxmoxservers.Server
	r.JSON(&srv)
	n := srv.Nodes[1]
	if *n.HostKeySource != "trust_on_first_use" || *n.SSHHostKeyFingerprint != sb.Cluster("demo").Node(n.Name).HostKeyFingerprint() {
		t.Fatalf("node %+v, want the presented key recorded as trust_on_first_use", n)
	}
}

func TestRegisterRefusesAndSavesNothing(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	sb := pvetest.Start(t, nil)
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	block, _ := ssh.MarshalPrivateKey(otherKey, "")
	_, member := s.NewUser(auth.RoleMember)
	tests := []struct {
		name      string
		token     string
		mutate    func(m map[string]any)
		status    int
		wantField string
	}{
		{"wrong token", "", func(m map[string]any) { m["token_secret"] = "nope" }, 422, "token_secret"},
		{"wrong tls fingerprint", "", func(m map[string]any) { m["tls_fingerprint"] = strings.Repeat("00:", 31) + "00" }, 422, "tls_fingerprint"},
		{"malformed fingerprint", "", func(m map[string]any) { m["tls_fingerprint"] = "nope" }, 422, "tls_fingerprint"},
		{"no verification", "", func(m map[string]any) { delete(m, "tls_fingerprint") }, 422, "tls_fingerprint"},
		{"unreachable", "", func(m map[string]any) { m["api_url"] = "https://127.0.0.1:1" }, 422, "api_url"},
		{"plain http", "", func(m map[string]any) { m["api_url"] = strings.Replace(m["api_url"].(string), "https", "http", 1) }, 422, "api_url"},
		{"bad token id", "", func(m map[string]any) { m["token_id"] = "root" }, 422, "token_id"},
		{"unknown node", "", func(m map[string]any) { m["nodes"].([]map[string]any)[0]["name"] = "pve9" }, 422, "nodes[0].name"},
		{"wrong host key", "", func(m map[string]any) {
			m["nodes"].([]map[string]any)[2]["ssh_host_key_fingerprint"] = sb.Cluster("demo").Node("pve1").HostKeyFingerprint()
		}, 422, "nodes[2].ssh_host_key_fingerprint"},
		{"key the nodes refuse", "", func(m map[string]any) { m["ssh_private_key"] = string(pem.EncodeToMemory(block)) }, 422, "ssh_private_key"},
		{"garbage key", "", func(m map[string]any) { m["ssh_private_key"] = "-----BEGIN NOTHING-----" }, 422, "ssh_private_key"},
		{"member", member, func(map[string]any) {}, 403, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := sb.Registration("demo", "lab-"+strings.ReplaceAll(tc.name, " ", "-"))
			tc.mutate(body)
			before := s.State()
			r := s.Do("POST", "/v1/proxmox-servers", apitest.Req{Token: tc.token, Body: body})
			p := r.Problem()
			if r.Status != tc.status || (tc.wantField != "" && !contains(p.Fields(), tc.wantField)) {
				t.Fatalf("got %d %s, want %d naming %s", r.Status, r.Body, tc.status, tc.wantField)
			}
			if s.State() != before {
				t.Fatal("a refused registration changed the database")
			}
		})
	}
}

func TestHostKeyChangeAndRefresh(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	sb := pvetest.Start(t, nil)
	var srv proxmoxservers.Server
	s.Do("POST", "/v1/proxmox-servers", apitest.Req{Body: sb.Registration("demo", "lab")}).JSON(&srv)
	path := "/v1/proxmox-servers/" + srv.ID.String()
	c := sb.Cluster("demo")

	// A node's host key changes: re-pinning the old key is refused, naming both fingerprints.
	old := c.Node("pve2").HostKeyFingerprint()
	fresh, err := c.RotateHostKey("pve2")
	if err != nil {
		t.Fatal(err)
	}
	patch := map[string]any{"nodes": []map[string]any{{"name": "pve2", "ssh_address": c.Node("pve2").SSHAddr(), "ssh_host_key_fingerprint": old}}}
	r := s.Do("PATCH", path, apitest.Req{Body: patch})
	if r.Status != 422 || !strings.Contains(string(r.Body), fresh) || !strings.Contains(string(r.Body), old) {
		t.Fatalf("re-pin the old key: %d %s, want 422 naming both fingerprints", r.Status, r.Body)
	}
	patch["nodes"].([]map[string]any)[0]["ssh_host_key_fingerprint"] = fresh
	if r := s.Do("PATCH", path, apitest.Req{Body: patch, Headers: map[string]string{"If-Match": `"1"`}}); r.Status != 200 {
		t.Fatalf("pin the new key: %d %s", r.Status, r.Body)
	}

	// Refresh sees a node go offline and keeps the SSH settings.
	if err := c.SetNodeOnline("pve3", false); err != nil {
		t.Fatal(err)
	}
	r = s.Do("POST", path+"/refresh", apitest.Req{})
	if r.Status != 200 {
		t.Fatalf("refresh: %d %s", r.Status, r.Body)
	}
	r.JSON(&srv)
	if srv.Nodes[2].Online || srv.Nodes[2].SSHAddress == nil || *srv.Nodes[1].SSHHostKeyFingerprint != fresh || srv.Version != 3 {
		t.Fatalf("after refresh: %+v (version %d)", srv.Nodes, srv.Version)
	}
	if r := s.Do("PATCH", path, apitest.Req{Body: map[string]any{"name": "x"}, Headers: map[string]string{"If-Match": `"1"`}}); r.Status != 412 {
		t.Fatalf("stale If-Match: %d, want 412", r.Status)
	}

	// No field may be null: refused naming it, nothing changed (a pointer field once took null
	// for "leave as is").
	before := s.State()
	for _, field := range []string{"name", "api_url", "token_id", "token_secret", "tls_fingerprint", "ca_cert", "ssh_user", "ssh_private_key"} {
		r := s.Do("PATCH", path, apitest.Req{Body: map[string]any{field: nil}})
		if r.Status != 422 || !slices.Equal(r.Problem().Fields(), []string{field}) {
			t.Errorf("null %s: %d %s, want 422 naming it", field, r.Status, r.Body)
		}
	}
	if s.State() != before {
		t.Fatal("a refused null changed the database")
	}
	// A rename leaves what it does not carry as it is, the nodes' SSH settings included.
	was := srv
	r = s.Do("PATCH", path, apitest.Req{Body: map[string]any{"name": "renamed"}, Headers: map[string]string{"If-Match": `"3"`}})
	if r.Status != 200 {
		t.Fatalf("rename: %d %s", r.Status, r.Body)
	}
	r.JSON(&srv)
	if srv.Name != "renamed" || srv.APIURL != was.APIURL || srv.TokenID != was.TokenID || srv.TLSFingerprint != was.TLSFingerprint ||
		srv.SSHUser != was.SSHUser || srv.SSHPublicKey != was.SSHPublicKey || *srv.Nodes[1].SSHHostKeyFingerprint != fresh {
		t.Fatalf("after a rename: %+v, was %+v", srv, was)
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestRegisterShowsWhatTheTokenMayNotDo: a token confined to pool dev, one storage and audit
// elsewhere registers, and the inventory says, per node, storage and pool, which privileges
// Horizon uses there that it lacks — and nothing where it holds them all. A refresh after the
// same discovery keeps them.
func TestRegisterShowsWhatTheTokenMayNotDo(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	sb := pvetest.Start(t, func(c *pve.Config) {
		tok := &c.Clusters[0].Tokens[0]
		tok.Privsep = true
		tok.ACLs = []pve.ACLConfig{{Path: "/", Role: "PVEAuditor"},
			{Path: "/pool/dev", Role: "PVEVMAdmin"}, {Path: "/pool/dev", Role: "PVEPoolUser"},
			{Path: "/storage/local-lvm", Role: "PVEDatastoreAdmin"}}
	})
	r := s.Do("POST", "/v1/proxmox-servers", apitest.Req{Body: sb.Registration("demo", "lab")})
	if r.Status != 201 {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	var srv proxmoxservers.Server
	r.JSON(&srv)
	lacks := map[string][]string{}
	for _, n := range srv.Nodes {
		lacks["node "+n.Name] = n.TokenLacks
	}
	for _, st := range srv.Storages {
		lacks["storage "+st.Name] = st.TokenLacks
	}
	for _, p := range srv.Pools {
		lacks["pool "+p.Pool] = p.TokenLacks
	}
	want := map[string][]string{
		"node pve1": {"Sys.AccessNetwork"}, "node pve2": {"Sys.AccessNetwork"}, "node pve3": {"Sys.AccessNetwork"},
		"storage local":     {"Datastore.Allocate", "Datastore.AllocateTemplate"},
		"storage local-lvm": {},
		"storage shared":    {"Datastore.Allocate", "Datastore.AllocateSpace", "Datastore.AllocateTemplate"},
		"pool dev":          {},
		"pool prod": {"VM.Allocate", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Cloudinit", "VM.Config.Disk",
			"VM.Config.HWType", "VM.Config.Memory", "VM.Config.Network", "VM.Config.Options", "VM.PowerMgmt"},
	}
	if !reflect.DeepEqual(lacks, want) {
		t.Fatalf("what the token lacks:\n got %v\nwant %v", lacks, want)
	}
	g := s.Do("GET", "/v1/proxmox-servers/"+srv.ID.String(), apitest.Req{})
	var again proxmoxservers.Server
	g.JSON(&again)
	if !reflect.DeepEqual(again.Pools, srv.Pools) || !reflect.DeepEqual(again.Storages, srv.Storages) {
		t.Fatalf("stored inventory differs: %+v", again)
	}
}

// TestAServerNothingUsesCanBeForgotten: a server is refused while an environment lists it or a
// stack has a machine on it, with a refusal that names them; once the environment no longer
// lists it and the stack is removed, it is forgotten. The removed stack's executions (kept for
// the history, their foreign key RESTRICT) used to pin it forever, with the environment's
// message although no environment used it.
func TestAServerNothingUsesCanBeForgotten(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	sb := pvetest.Start(t, nil)
	r := s.Do("POST", "/v1/proxmox-servers", apitest.Req{Body: sb.Registration("demo", "lab")})
	if r.Status != 201 {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	var srv proxmoxservers.Server
	r.JSON(&srv)
	env := s.Do("POST", "/v1/environments", apitest.Req{Body: map[string]any{"name": "prod", "proxmox_server_ids": []string{srv.ID.String()}}})
	if env.Status != 201 {
		t.Fatalf("environment: %d %s", env.Status, env.Body)
	}
	stack := s.NewStack(s.NewTeam("team-a"), "web")
	// A machine of the stack on the server, as a deploy leaves it.
	if _, err := s.DB.Exec(t.Context(), `INSERT INTO executions (stack_id, job, index, commit, server_id, node, vmid)
		VALUES ($1, 'vm', 0, $2, $3, 'pve1', 100)`, stack, strings.Repeat("a", 40), srv.ID); err != nil {
		t.Fatal(err)
	}
	del := func() *apitest.Response {
		return s.Do("DELETE", "/v1/proxmox-servers/"+srv.ID.String(), apitest.Req{})
	}
	if d := del(); d.Status != 409 || !strings.Contains(d.Problem().Detail, "environment prod") || !strings.Contains(d.Problem().Detail, "stack web") {
		t.Fatalf("delete a server an environment and a stack use: %d %s, want 409 naming both", d.Status, d.Body)
	}
	envID := env.Map()["id"].(string)
	if p := s.Do("PATCH", "/v1/environments/"+envID, apitest.Req{Body: map[string]any{"proxmox_server_ids": []string{}}}); p.Status != 200 {
		t.Fatalf("take the server out of the environment: %d %s", p.Status, p.Body)
	}
	if d := del(); d.Status != 409 || strings.Contains(d.Problem().Detail, "environment") || !strings.Contains(d.Problem().Detail, "stack web") {
		t.Fatalf("delete a server a stack uses: %d %s, want 409 naming the stack alone", d.Status, d.Body)
	}
	// The stack is removed: its machine destroyed, its rows kept for the history.
	if _, err := s.DB.Exec(t.Context(), `UPDATE executions SET state = 'removed' WHERE stack_id = $1`, stack); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.Exec(t.Context(), `UPDATE stacks SET state = 'removed' WHERE id = $1`, stack); err != nil {
		t.Fatal(err)
	}
	if d := del(); d.Status != 204 {
		t.Fatalf("delete a server nothing uses: %d %s, want 204", d.Status, d.Body)
	}
	var node string
	if err := s.DB.QueryRow(t.Context(), `SELECT node FROM executions WHERE stack_id = $1`, stack).Scan(&node); err != nil || node != "pve1" {
		t.Fatalf("the removed stack's history: node %q (%v), want kept", node, err)
	}
	if g := s.Do("GET", "/v1/stacks/"+stack.String(), apitest.Req{}); g.Status != 200 {
		t.Fatalf("the removed stack after its server was forgotten: %d %s", g.Status, g.Body)
	}
	if d := del(); d.Status != 404 {
		t.Fatalf("delete it again: %d, want 404", d.Status)
	}
}
