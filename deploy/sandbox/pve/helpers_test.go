package pve

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
	"golang.org/x/crypto/ssh"

	"horizon/shared/testkit"
)

// testEnv is a started sandbox with a client key authorized on every node.
type testEnv struct {
	sb     *Sandbox
	c      *Cluster
	signer ssh.Signer // authorized on the nodes
}

// newEnv starts DefaultConfig with fast tasks; edit may change the config first.
func newEnv(t testing.TB, edit func(*Config)) *testEnv {
	t.Helper()
	signer := newClientKey(t)
	cfg := DefaultConfig()
	cfg.TaskDuration = 20 * time.Millisecond
	cfg.SSHAuthorizedKeys = []string{authorizedKeyLine(signer.PublicKey())}
	if edit != nil {
		edit(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start sandbox: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Close(); err != nil {
			t.Errorf("close sandbox: %v", err)
		}
	})
	return &testEnv{sb: sb, c: sb.Clusters()[0], signer: signer}
}

func newClientKey(t testing.TB) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// httpClient trusts the cluster's CA, as a client configured with it would.
func httpClient(t testing.TB, c *Cluster) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.CACertPEM()) {
		t.Fatal("CA PEM does not parse")
	}
	return &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
}

// pveClient is go-proxmox talking to the cluster with its token.
func pveClient(t testing.TB, c *Cluster) *proxmox.Client {
	t.Helper()
	return proxmox.NewClient(c.URL()+"/api2/json",
		proxmox.WithAPIToken(c.TokenID(), c.TokenSecret()),
		proxmox.WithHTTPClient(httpClient(t, c)))
}

// apiResponse is a raw API answer.
type apiResponse struct {
	status int
	reason string
	body   map[string]any
}

func (r apiResponse) data() any { return r.body["data"] }

func (r apiResponse) errors() map[string]any {
	e, _ := r.body["errors"].(map[string]any)
	return e
}

// call sends a form-encoded request (as curl and the Terraform providers do) with the
// cluster's token.
func (e *testEnv) call(t testing.TB, method, path string, form url.Values) apiResponse {
	t.Helper()
	var body io.Reader
	target := e.c.URL() + "/api2/json" + path
	if form != nil && (method == http.MethodPost || method == http.MethodPut) {
		body = strings.NewReader(form.Encode())
	} else if form != nil {
		target += "?" + form.Encode()
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Authorization", fmt.Sprintf("PVEAPIToken=%s=%s", e.c.TokenID(), e.c.TokenSecret()))
	return do(t, httpClient(t, e.c), req)
}

func do(t testing.TB, client *http.Client, req *http.Request) apiResponse {
	t.Helper()
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := apiResponse{status: res.StatusCode, reason: strings.TrimSpace(strings.TrimPrefix(res.Status, fmt.Sprint(res.StatusCode)))}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out.body); err != nil {
			t.Fatalf("%s %s: body is not JSON: %q", req.Method, req.URL.Path, raw)
		}
	}
	return out
}

// mustOK fails unless the answer is 200 and returns its data.
func mustOK(t testing.TB, r apiResponse) any {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("got %d %s %v, want 200", r.status, r.reason, r.body)
	}
	return r.data()
}

// waitTask waits until the task has stopped and returns it.
func (e *testEnv) waitTask(t testing.TB, upid string) Task {
	t.Helper()
	var done Task
	testkit.Eventually(t, 10*time.Second, "task "+upid+" stops", func() bool {
		for _, tk := range e.c.Tasks() {
			if tk.UPID == upid && tk.Status == "stopped" {
				done = tk
				return true
			}
		}
		return false
	})
	return done
}

// mustTaskOK runs an API call that returns a UPID and waits for the task to succeed.
func (e *testEnv) mustTaskOK(t testing.TB, method, path string, form url.Values) Task {
	t.Helper()
	upid, ok := mustOK(t, e.call(t, method, path, form)).(string)
	if !ok {
		t.Fatalf("%s %s: answer is not a UPID", method, path)
	}
	tk := e.waitTask(t, upid)
	if tk.ExitStatus != "OK" {
		t.Fatalf("%s %s: task failed: %s (log %q)", method, path, tk.ExitStatus, tk.Log)
	}
	return tk
}

func (e *testEnv) vm(t testing.TB, vmid int) VM {
	t.Helper()
	for _, v := range e.c.VMs() {
		if v.VMID == vmid {
			return v
		}
	}
	t.Fatalf("VM %d does not exist", vmid)
	return VM{}
}

// randomLoopback returns a random 127.x.y.z address (not 127.0.0.1), so that parallel
// tests, and other packages' tests, do not collide on VM SSH listeners.
func randomLoopback(t testing.TB) string {
	t.Helper()
	var b [3]byte
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(250))
		if err != nil {
			t.Fatal(err)
		}
		b[i] = byte(n.Int64() + 2)
	}
	return fmt.Sprintf("127.%d.%d.%d", b[0], b[1], b[2])
}

func ctxT(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
