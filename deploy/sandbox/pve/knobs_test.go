package pve

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"horizon/shared/testkit"
)

func TestHangAndReleaseTasks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.sb.HangTasks("qmstart")
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu", url.Values{"vmid": {"100"}})
	upid := mustOK(t, e.call(t, "POST", "/nodes/pve1/qemu/100/status/start", nil)).(string)
	// A hung task stays running however long we look; the change waits with it.
	testkit.Eventually(t, 5*time.Second, "the start task reports running", func() bool {
		st := mustOK(t, e.call(t, "GET", "/nodes/pve1/tasks/"+upid+"/status", nil)).(map[string]any)
		return st["status"] == "running"
	})
	if e.vm(t, 100).Status != "stopped" {
		t.Fatal("a hung start already started the VM")
	}
	e.sb.ReleaseTasks("qmstart")
	if tk := e.waitTask(t, upid); tk.ExitStatus != "OK" || e.vm(t, 100).Status != "running" {
		t.Fatalf("after release: %+v, VM %s", tk, e.vm(t, 100).Status)
	}
}

func TestFailNext(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.sb.FailNext("POST /nodes/{node}/qemu", 2, 500, "storage 'local-lvm' is locked")
	for range 2 {
		r := e.call(t, "POST", "/nodes/pve2/qemu", url.Values{"vmid": {"100"}})
		if r.status != 500 || r.reason != "storage 'local-lvm' is locked" {
			t.Fatalf("injected failure: %d %q", r.status, r.reason)
		}
	}
	if len(e.c.VMs()) != 0 {
		t.Fatal("a failed call created a VM")
	}
	mustOK(t, e.call(t, "GET", "/nodes/pve2/qemu", nil)) // other routes are not affected
	e.mustTaskOK(t, "POST", "/nodes/pve2/qemu", url.Values{"vmid": {"100"}})
}

// TestAdminEndpoints drives the knobs over HTTP, as a demo script or another process would.
func TestAdminEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	client := httpClient(t, e.c)
	admin := func(method, path string, body any, token string) (int, map[string]any) {
		t.Helper()
		var buf bytes.Buffer
		if body != nil {
			json.NewEncoder(&buf).Encode(body)
		}
		req, _ := http.NewRequest(method, e.c.URL()+"/sandbox/"+path, &buf)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		json.NewDecoder(res.Body).Decode(&out)
		return res.StatusCode, out
	}
	tok := e.sb.AdminToken()
	if code, _ := admin("GET", "state", nil, "wrong"); code != http.StatusUnauthorized {
		t.Fatalf("wrong admin token: %d", code)
	}
	code, st := admin("GET", "state", nil, tok)
	if code != 200 || st["clusters"].([]any)[0].(map[string]any)["cert_fingerprint"] != e.c.CertFingerprint() {
		t.Fatalf("state: %d %v", code, st)
	}

	if code, _ := admin("POST", "fail-next", map[string]any{"route": "GET /cluster/nextid", "status": 503, "message": "busy"}, tok); code != 200 {
		t.Fatalf("fail-next: %d", code)
	}
	if r := e.call(t, "GET", "/cluster/nextid", nil); r.status != 503 || r.reason != "busy" {
		t.Fatalf("after fail-next: %d %q", r.status, r.reason)
	}
	mustOK(t, e.call(t, "GET", "/cluster/nextid", nil))

	if code, _ := admin("POST", "latency", map[string]any{"route": "GET /version", "latency": "150ms"}, tok); code != 200 {
		t.Fatalf("latency: %d", code)
	}
	start := time.Now()
	mustOK(t, e.call(t, "GET", "/version", nil))
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("GET /version took %s with 150ms of latency", d)
	}
	admin("POST", "latency", map[string]any{"route": "GET /version", "latency": "0s"}, tok)

	if code, out := admin("POST", "nodes/pve2/offline", nil, tok); code != 200 || out["online"] != false {
		t.Fatalf("offline: %d %v", code, out)
	}
	if r := e.call(t, "GET", "/nodes/pve2/status", nil); r.status != 595 {
		t.Fatalf("offline node status: %d", r.status)
	}
	admin("POST", "nodes/pve2/online", nil, tok)
	mustOK(t, e.call(t, "GET", "/nodes/pve2/status", nil))

	old := e.c.Node("pve1").HostKeyFingerprint()
	if code, out := admin("POST", "nodes/pve1/rotate-host-key", nil, tok); code != 200 || out["host_key_fingerprint"] == old {
		t.Fatalf("rotate-host-key: %d %v", code, out)
	}
	if code, _ := admin("POST", "hang-tasks", map[string]any{"type": "qmcreate"}, tok); code != 200 {
		t.Fatal("hang-tasks")
	}
	upid := mustOK(t, e.call(t, "POST", "/nodes/pve1/qemu", url.Values{"vmid": {"100"}})).(string)
	admin("POST", "release-tasks", map[string]any{"type": "qmcreate"}, tok)
	e.waitTask(t, upid)
	if code, _ := admin("POST", "fail-downloads", map[string]any{"count": 1}, tok); code != 200 {
		t.Fatal("fail-downloads")
	}
	if code, _ := admin("POST", "no-such-knob", nil, tok); code != http.StatusNotFound {
		t.Fatalf("unknown knob: %d", code)
	}
}

// TestCertRotationBreaksPinning: a client pinning the old fingerprint must notice; one
// trusting the CA goes on working.
func TestCertRotationBreaksPinning(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	old := e.c.CertFingerprint()
	fp, err := e.c.RotateCert()
	if err != nil || fp == old || fp != e.c.CertFingerprint() {
		t.Fatalf("RotateCert: %q, %v", fp, err)
	}
	mustOK(t, e.call(t, "GET", "/version", nil)) // the CA still vouches for it
	nodes := mustOK(t, e.call(t, "GET", "/nodes", nil)).([]any)
	if nodes[0].(map[string]any)["ssl_fingerprint"] != fp {
		t.Fatalf("ssl_fingerprint after rotation: %v", nodes[0])
	}
}
