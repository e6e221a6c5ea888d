package isos_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"horizon/deploy/sandbox/pve/pvetest"
	"horizon/functions/apitest"
	"horizon/shared/auth"
)

const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ana@laptop"

var sum = strings.Repeat("0123456789abcdef", 4)

// setup is an API (no workers: runs stay queued) with the sandbox registered and a cloud-image
// ISO template.
func setup(t *testing.T) (*apitest.Server, string, string) {
	t.Helper()
	s := apitest.New(t, nil)
	sb := pvetest.Start(t, nil)
	r := s.Do("POST", "/v1/proxmox-servers", apitest.Req{Body: sb.Registration("demo", "lab")})
	if r.Status != 201 {
		t.Fatalf("register the sandbox: %d %s", r.Status, r.Body)
	}
	server := r.Map()["id"].(string)
	r = s.Do("POST", "/v1/iso-templates", apitest.Req{Body: map[string]any{"name": "noble", "kind": "cloud-image", "spec": map[string]any{
		"source":     map[string]any{"url": "https://images.example.org/noble.img", "checksum": sum},
		"storage":    "local",
		"vm":         map[string]any{"vmid": 9000, "name": "noble", "disk": map[string]any{"storage": "local-lvm"}, "network": map[string]any{}},
		"cloud_init": map[string]any{"ssh_authorized_keys": []string{key}},
		"clones":     []any{map[string]any{"name": "web-1", "vmid": 9101}},
	}}})
	if r.Status != 201 {
		t.Fatalf("ISO template: %d %s", r.Status, r.Body)
	}
	return s, server, r.Map()["id"].(string)
}

func TestCreateISOStartsABuildRun(t *testing.T) {
	t.Parallel()
	s, server, tmpl := setup(t)
	r := s.Do("POST", "/v1/isos", apitest.Req{Body: map[string]any{"iso_template_id": tmpl, "proxmox_server_id": server, "node": "pve1",
		"stages": map[string]any{"skip": []string{"clones"}}}})
	if r.Status != 202 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	iso := r.Map()
	if iso["state"] != "building" || iso["name"] != "noble v1 on pve1" || iso["storage"] != "local" || iso["current_run"] == nil {
		t.Fatalf("created %s", r.Body)
	}
	run := iso["last_run"].(map[string]any)
	var stages []string
	for _, st := range run["stages"].([]any) {
		st := st.(map[string]any)
		stages = append(stages, st["stage"].(string)+":"+st["state"].(string))
	}
	want := []string{"preflight:pending", "image:pending", "vm-create:pending", "vm-configure:pending", "template:pending", "clones:skipped"}
	if !slices.Equal(stages, want) || run["kind"] != "iso_build" {
		t.Fatalf("stages %v, want %v", stages, want)
	}
	if h := iso["history"].([]any); len(h) != 1 || h[0].(map[string]any)["to"] != "building" || h[0].(map[string]any)["from"] != nil {
		t.Fatalf("history %v", h)
	}

	// The spec's VM ids are the ISO's in this cluster now: a second ISO of the template is refused.
	r = s.Do("POST", "/v1/isos", apitest.Req{Body: map[string]any{"iso_template_id": tmpl, "proxmox_server_id": server, "node": "pve2"}})
	if p := r.Problem(); r.Status != 409 || !strings.Contains(p.Detail, "VM id 9000") || !strings.Contains(p.Detail, "ISO noble v1 on pve1") {
		t.Fatalf("second ISO with the same VM ids: %d %+v", r.Status, p)
	}
	// A run is in progress: edit and delete wait for it, retry too.
	id := iso["id"].(string)
	for _, req := range []struct{ method, path string }{{"PATCH", "/v1/isos/" + id}, {"DELETE", "/v1/isos/" + id}, {"POST", "/v1/isos/" + id + "/retry"}} {
		var body any
		if req.method == "PATCH" {
			body = map[string]any{"name": "renamed"}
		}
		if r := s.Do(req.method, req.path, apitest.Req{Body: body}); r.Status != 409 || r.Problem().Type != "urn:horizon:problem:busy" {
			t.Errorf("%s %s during a run: %d %s", req.method, req.path, r.Status, r.Body)
		}
	}
	// No field of a PATCH may be null: refused naming it, before the run is asked about.
	before := s.State()
	for _, field := range []string{"name", "version", "storage"} {
		r := s.Do("PATCH", "/v1/isos/"+id, apitest.Req{Body: map[string]any{field: nil}})
		if f := r.Problem().Fields(); r.Status != 422 || len(f) != 1 || f[0] != field {
			t.Errorf("null %s: %d %s, want 422 naming it", field, r.Status, r.Body)
		}
	}
	if s.State() != before {
		t.Fatal("a refused null changed the database")
	}
	// Cancel needs no worker to be accepted.
	if r := s.Do("POST", "/v1/isos/"+id+"/cancel", apitest.Req{}); r.Status != 202 || r.Map()["state"] != "canceling" || r.Map()["iso_id"] != id {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	_, viewer := s.NewUser(auth.RoleViewer)
	if g := s.Do("GET", "/v1/isos/"+id, apitest.Req{Token: viewer}); g.Status != 200 || len(g.Map()["allowed_actions"].([]any)) != 0 {
		t.Fatalf("a viewer reads an ISO without actions: %d %s", g.Status, g.Body)
	}
	if l := s.Do("GET", "/v1/isos?proxmox_server_id="+server, apitest.Req{Token: viewer}); len(l.Map()["items"].([]any)) != 1 {
		t.Fatalf("list: %s", l.Body)
	}
	if r := s.Do("POST", "/v1/isos/"+id+"/cancel", apitest.Req{Token: viewer}); r.Status != 403 {
		t.Fatalf("a viewer canceled a build: %d", r.Status)
	}
}

func TestCreateISOValidation(t *testing.T) {
	t.Parallel()
	s, server, tmpl := setup(t)
	_, member := s.NewUser(auth.RoleMember)
	before := s.State()
	tests := []struct {
		name   string
		body   map[string]any
		fields []string
	}{
		{"unknown node and wrong storage", map[string]any{"iso_template_id": tmpl, "proxmox_server_id": server, "node": "pve9", "storage": "local-lvm"},
			[]string{"node", "storage"}},
		{"storage without import content", map[string]any{"iso_template_id": tmpl, "proxmox_server_id": server, "node": "pve1", "storage": "local-lvm"},
			[]string{"storage"}},
		{"unknown stage", map[string]any{"iso_template_id": tmpl, "proxmox_server_id": server, "node": "pve1", "stages": map[string]any{"only": []string{"bake"}}},
			[]string{"stages.only[0]"}},
		{"no such version", map[string]any{"iso_template_id": tmpl, "proxmox_server_id": server, "node": "pve1", "version": 7}, []string{"version"}},
		{"no such template or server", map[string]any{"iso_template_id": server, "proxmox_server_id": tmpl, "node": "pve1"},
			[]string{"iso_template_id", "proxmox_server_id"}},
	}
	for _, tc := range tests {
		r := s.Do("POST", "/v1/isos", apitest.Req{Body: tc.body})
		if r.Status != 422 {
			t.Errorf("%s: got %d %s, want 422", tc.name, r.Status, r.Body)
			continue
		}
		got := r.Problem().Fields()
		for _, f := range tc.fields {
			if !slices.Contains(got, f) {
				t.Errorf("%s: problems %v lack %s", tc.name, got, f)
			}
		}
	}
	if r := s.Do("POST", "/v1/isos", apitest.Req{Token: member, Body: map[string]any{"iso_template_id": tmpl, "proxmox_server_id": server, "node": "pve1"}}); r.Status != 403 {
		t.Errorf("a member built an ISO: %d", r.Status)
	}
	if after := s.State(); after != before {
		t.Fatal("refused requests changed the database")
	}
}

// TestISOBuildHistoryAndLogDownload: an ISO's runs are listed (its build history, for
// everyone), and a browser downloads its log through a plain link with an iso_logs stream token
// of that ISO, as it does a stack's with a logs token; no other token opens it.
func TestISOBuildHistoryAndLogDownload(t *testing.T) {
	t.Parallel()
	s, server, tmpl := setup(t)
	_, viewer := s.NewUser(auth.RoleViewer)
	r := s.Do("POST", "/v1/isos", apitest.Req{Body: map[string]any{"iso_template_id": tmpl, "proxmox_server_id": server, "node": "pve1"}})
	if r.Status != 202 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id := r.Map()["id"].(string)
	last := r.Map()["last_run"].(map[string]any)["id"]
	runs := s.Do("GET", "/v1/isos/"+id+"/runs?limit=10", apitest.Req{Token: viewer})
	if items, _ := runs.Map()["items"].([]any); runs.Status != 200 || len(items) != 1 || items[0].(map[string]any)["id"] != last ||
		items[0].(map[string]any)["kind"] != "iso_build" || len(items[0].(map[string]any)["allowed_actions"].([]any)) != 0 {
		t.Fatalf("a viewer lists the ISO's runs: %d %s", runs.Status, runs.Body)
	}
	if r := s.Do("GET", "/v1/isos/"+uuid.NewString()+"/runs", apitest.Req{Token: viewer}); r.Status != 404 {
		t.Errorf("runs of a missing ISO: %d %s", r.Status, r.Body)
	}
	if r := s.Do("GET", "/v1/isos/"+id+"/runs?limit=0", apitest.Req{Token: viewer}); r.Status != 400 || !strings.Contains(r.Problem().Detail, "limit") {
		t.Errorf("runs with a bad limit: %d %s", r.Status, r.Body)
	}
	mint := func(body map[string]any) string {
		t.Helper()
		r := s.Do("POST", "/v1/stream-tokens", apitest.Req{Token: viewer, Body: body})
		if r.Status != 200 {
			t.Fatalf("mint %v: %d %s", body, r.Status, r.Body)
		}
		return r.Map()["token"].(string)
	}
	tok := mint(map[string]any{"purpose": "iso_logs", "iso_id": id})
	r = s.Do("GET", "/v1/isos/"+id+"/logs?stream_token="+tok, apitest.Req{Token: apitest.NoToken})
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") ||
		r.Header.Get("Content-Disposition") != `attachment; filename="iso-`+id+`.log"` {
		t.Fatalf("the ISO's download with its token: %d %s", r.Status, r.Body)
	}
	if r := s.Do("GET", "/v1/isos/"+id+"/logs?format=ndjson", apitest.Req{Token: viewer}); r.Status != 200 {
		t.Fatalf("the download with a bearer token: %d %s", r.Status, r.Body)
	}
	stack := s.NewStack(s.NewTeam("a"), "a")
	for name, path := range map[string]string{
		"an events token":              "/v1/isos/" + id + "/logs?stream_token=" + mint(map[string]any{"purpose": "events"}),
		"the token on another ISO":     "/v1/isos/" + uuid.NewString() + "/logs?stream_token=" + tok,
		"the API token in the URL":     "/v1/isos/" + id + "/logs?stream_token=" + viewer,
		"the ISO's token on a stack's": "/v1/stacks/" + stack.String() + "/logs?stream_token=" + tok,
	} {
		if r := s.Do("GET", path, apitest.Req{Token: apitest.NoToken}); r.Status != 401 {
			t.Errorf("%s: %d %s, want 401", name, r.Status, r.Body)
		}
	}
}
