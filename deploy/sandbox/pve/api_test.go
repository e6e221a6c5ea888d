package pve

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"
)

func TestTokenAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	client := httpClient(t, e.c)
	tests := []struct {
		name   string
		header string
		reason string
	}{
		{"missing", "", "No ticket"},
		{"wrong secret", "PVEAPIToken=" + e.c.TokenID() + "=nope", "invalid token value!"},
		{"unknown token", "PVEAPIToken=root@pam!other=x", "no such token 'other' for user 'root@pam'"},
		{"not a token", "Bearer abc", "No ticket"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", e.c.URL()+"/api2/json/nodes", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			r := do(t, client, req)
			if r.status != http.StatusUnauthorized || r.reason != tc.reason || r.body != nil {
				t.Fatalf("got %d %q body %v, want 401 %q without a body", r.status, r.reason, r.body, tc.reason)
			}
		})
	}
	_, err := proxmox.NewClient(e.c.URL()+"/api2/json", proxmox.WithAPIToken(e.c.TokenID(), "bad"),
		proxmox.WithHTTPClient(client)).Nodes(ctxT(t))
	if !errors.Is(err, proxmox.ErrNotAuthorized) {
		t.Fatalf("go-proxmox with a bad secret: got %v, want ErrNotAuthorized", err)
	}
}

// TestErrorShapes checks PVE's error answers: the reason phrase carries the message, the
// body has message and, for 400, errors per parameter.
func TestErrorShapes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu", url.Values{"vmid": {"100"}})

	r := e.call(t, "POST", "/nodes/pve1/qemu", url.Values{"vmid": {"101"}, "bogus": {"1"}})
	if r.status != 400 || r.reason != "Parameter verification failed." || r.errors()["bogus"] != msgNotDefined {
		t.Fatalf("unknown parameter: got %d %q %v", r.status, r.reason, r.body)
	}
	r = e.call(t, "POST", "/nodes/pve1/qemu", url.Values{"vmid": {"101"}, "cores": {"x"}, "ostype": {"dos"}})
	if r.status != 400 || r.errors()["cores"] != "type check ('integer') failed - got 'x'" ||
		r.errors()["ostype"] == nil || r.body["message"] != "Parameter verification failed.\n" {
		t.Fatalf("bad parameters: got %d %q %v", r.status, r.reason, r.body)
	}
	if len(e.c.VMs()) != 1 {
		t.Fatalf("a refused create left a VM behind: %v", e.c.VMs())
	}

	r = e.call(t, "POST", "/nodes/pve2/qemu", url.Values{"vmid": {"100"}})
	if r.status != 500 || r.reason != "VM 100 already exists on node 'pve1'" || r.body["message"] != "VM 100 already exists on node 'pve1'\n" {
		t.Fatalf("duplicate VMID on another node: got %d %q %v", r.status, r.reason, r.body)
	}

	r = e.call(t, "GET", "/nodes/pve1/qemu/999/config", nil)
	if r.status != 500 || !strings.Contains(r.reason, "does not exist") {
		t.Fatalf("missing VM: got %d %q", r.status, r.reason)
	}
	_, err := pveClient(t, e.c).NodeRef("pve1").VirtualMachine(ctxT(t), 999)
	if !errors.Is(err, proxmox.ErrNotFound) {
		t.Fatalf("go-proxmox on a missing VM: got %v, want ErrNotFound", err)
	}

	r = e.call(t, "GET", "/nodes/nosuch/qemu", nil)
	if r.status != 500 || r.reason != "no such cluster node 'nosuch'" {
		t.Fatalf("unknown node: got %d %q", r.status, r.reason)
	}
	r = e.call(t, "PATCH", "/nodes", nil)
	if r.status != 501 {
		t.Fatalf("unknown method: got %d %q", r.status, r.reason)
	}
}

// TestJSONAndFormBodies checks that both encodings are read, with JSON booleans and numbers
// taken as PVE takes them.
func TestJSONAndFormBodies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	body, _ := json.Marshal(map[string]any{"vmid": 150, "onboot": true, "cores": 3, "name": "json-vm", "tags": []string{"a", "b"}})
	req, _ := http.NewRequest("POST", e.c.URL()+"/api2/json/nodes/pve1/qemu", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "PVEAPIToken="+e.c.TokenID()+"="+e.c.TokenSecret())
	upid, _ := mustOK(t, do(t, httpClient(t, e.c), req)).(string)
	e.waitTask(t, upid)
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu", url.Values{"vmid": {"151"}, "onboot": {"1"}, "cores": {"3"}})
	for _, id := range []int{150, 151} {
		conf := e.vm(t, id).Config
		if conf["onboot"] != "1" || conf["cores"] != "3" {
			t.Errorf("VM %d: onboot %q cores %q", id, conf["onboot"], conf["cores"])
		}
	}
	if got := e.vm(t, 150).Config["tags"]; got != "a;b" {
		t.Errorf("tags from a JSON array: got %q", got)
	}
	cfg := mustOK(t, e.call(t, "GET", "/nodes/pve1/qemu/151/config", nil)).(map[string]any)
	if cfg["onboot"] != 1.0 || cfg["cores"] != 3.0 || cfg["digest"] == "" {
		t.Fatalf("config renders numbers as JSON numbers: got %#v", cfg)
	}
}

var upidRE = regexp.MustCompile(`^UPID:([a-z0-9-]+):([0-9A-F]{8}):([0-9A-F]{8}):([0-9A-F]{8}):([a-z]+):([^:]*):([^:]+):$`)

func TestUPIDFormAndTaskEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	upid := mustOK(t, e.call(t, "POST", "/nodes/pve2/qemu", url.Values{"vmid": {"120"}})).(string)
	m := upidRE.FindStringSubmatch(upid)
	if m == nil || len(strings.Split(upid, ":")) != 9 {
		t.Fatalf("UPID %q: want UPID:node:pid:pstart:starttime:type:id:user: (8 fields and a trailing colon)", upid)
	}
	if m[1] != "pve2" || m[5] != "qmcreate" || m[6] != "120" || m[7] != e.c.TokenID() {
		t.Fatalf("UPID %q: fields %q", upid, m[1:])
	}
	task := proxmox.NewTask(proxmox.UPID(upid), pveClient(t, e.c))
	if err := task.Wait(ctxT(t), 10e6, 10e9); err != nil || !task.IsSuccessful {
		t.Fatalf("Wait: %v (task %+v)", err, task)
	}
	log, err := task.Log(ctxT(t), 0, 50)
	if err != nil || log[len(log)-1] != "TASK OK" {
		t.Fatalf("Log: %v, %v", log, err)
	}
	list := mustOK(t, e.call(t, "GET", "/nodes/pve2/tasks", url.Values{"vmid": {"120"}})).([]any)
	if len(list) != 1 || list[0].(map[string]any)["upid"] != upid || list[0].(map[string]any)["status"] != "OK" {
		t.Fatalf("task list: %v", list)
	}
	r := e.call(t, "GET", "/nodes/pve2/tasks/UPID:pve2:00000001:00000001:00000001:qmstart:1:root@pam:/status", nil)
	if r.status != 400 || r.errors()["upid"] != "no such task" {
		t.Fatalf("unknown task: %d %v", r.status, r.body)
	}
}

func TestTagsAreNormalised(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		bad      bool
	}{
		{in: "b;a", want: "a;b"},
		{in: "Prod, web web;DB", want: "db;prod;web"},
		{in: "x  y\ty", want: "x;y"},
		{in: "go-proxmox+cloud-init;v1.2", want: "go-proxmox+cloud-init;v1.2"},
		{in: "", want: ""},
		{in: "ok;-bad", bad: true},
		{in: "no/slash", bad: true},
	}
	for _, tc := range tests {
		got, err := normalizeTags(tc.in)
		if tc.bad != (err != nil) || got != tc.want {
			t.Errorf("normalizeTags(%q) = %q, %v; want %q (error %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
	e := newEnv(t, nil)
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu", url.Values{"vmid": {"100"}, "tags": {"Web;db,web"}})
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu/100/config", url.Values{"tags": {"zeta alpha"}})
	if got := e.vm(t, 100).Tags; strings.Join(got, ";") != "alpha;zeta" {
		t.Fatalf("tags after update: %v", got)
	}
	r := e.call(t, "PUT", "/nodes/pve1/qemu/100/config", url.Values{"tags": {"fine;not fine!"}})
	if r.status != 400 || r.errors()["tags"] == nil {
		t.Fatalf("invalid tag: %d %v", r.status, r.body)
	}
}
