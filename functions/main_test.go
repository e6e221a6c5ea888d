package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"horizon/shared/auth"
	"horizon/shared/testkit"
)

// These tests run the API as the process operators run, against real Postgres and Redis.

var (
	buildOnce sync.Once
	apiBin    string
	buildErr  error
)

// apiBinary builds the API once per test run.
func apiBinary(t *testing.T) string {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "horizon-api-")
		if err != nil {
			buildErr = err
			return
		}
		apiBin = filepath.Join(dir, "api")
		if out, err := exec.Command("go", "build", "-o", apiBin, ".").CombinedOutput(); err != nil {
			buildErr = err
			t.Logf("%s", out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build the API: %v", buildErr)
	}
	return apiBin
}

// apiProcess is a running API; out holds what it printed.
type apiProcess struct {
	cmd  *exec.Cmd
	addr string
	out  *lockedBuffer
}

// lockedBuffer is a bytes.Buffer the process writes to while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startAPI starts the API on a free port of its own with env (database, namespace, …) added to
// a working base environment.
func startAPI(t *testing.T, env ...string) *apiProcess {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &apiProcess{addr: ln.Addr().String(), out: &lockedBuffer{}}
	_ = ln.Close()
	p.cmd = exec.Command(apiBinary(t))
	p.cmd.Env = append(os.Environ(), "HORIZON_REDIS_URL="+testkit.RedisURL(), "HORIZON_LISTEN="+p.addr, "HORIZON_LOG_FORMAT=text",
		"HORIZON_SECRET_KEY="+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)), "HORIZON_GIT_CACHE_DIR="+t.TempDir())
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	return p
}

func (p *apiProcess) ready(t *testing.T) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, "the API did not answer /readyz", func() bool {
		r, err := http.Get("http://" + p.addr + "/readyz")
		if err != nil {
			return false
		}
		_ = r.Body.Close()
		return r.StatusCode == 200
	})
}

// TestTwoInstallationsRefuseToShareARedisNamespace: on a Redis namespace that another
// installation (another database) claimed, the API refuses to start and says which setting to
// change; replicas and restarts of one installation share the claim. Before the claim, two
// installations on one namespace silently took each other's tasks.
func TestTwoInstallationsRefuseToShareARedisNamespace(t *testing.T) {
	t.Parallel()
	_, ns := testkit.Redis(t)
	first, second := testkit.DB(t), testkit.DB(t)
	startAPI(t, "HORIZON_DATABASE_URL="+first.Config().ConnString(), "HORIZON_NAMESPACE="+ns).ready(t)
	startAPI(t, "HORIZON_DATABASE_URL="+first.Config().ConnString(), "HORIZON_NAMESPACE="+ns).ready(t) // a replica

	other := startAPI(t, "HORIZON_DATABASE_URL="+second.Config().ConnString(), "HORIZON_NAMESPACE="+ns)
	done := make(chan error, 1)
	go func() { done <- other.cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("the second installation exited 0:\n%s", other.out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the second installation on namespace %s is still running", ns)
	}
	for _, want := range []string{ns, "is already used by another Horizon installation", "HORIZON_NAMESPACE", "HORIZON_REDIS_URL"} {
		if !strings.Contains(other.out.String(), want) {
			t.Fatalf("the refusal does not say %q:\n%s", want, other.out)
		}
	}
}

// TestPostgresDownAnswers503 cuts the API off Postgres: every request then answers 503
// problem+json with Retry-After (the dependency is down; the client did nothing wrong and the
// server has no bug), whether authentication was cached or not, and the API recovers without
// a restart once Postgres is back. It used to answer 500 "Internal error".
func TestPostgresDownAnswers503(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	cfg := db.Config().ConnConfig
	pg := testkit.NewProxy(t, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	u := url.URL{Scheme: "postgres", User: url.User(cfg.User), Host: pg.Addr(), Path: "/" + cfg.Database, RawQuery: "sslmode=disable"}
	_, ns := testkit.Redis(t)
	token := auth.NewToken().Reveal()
	api := startAPI(t, "HORIZON_DATABASE_URL="+u.String(), "HORIZON_NAMESPACE="+ns, "HORIZON_BOOTSTRAP_ADMIN_TOKEN="+token,
		"HORIZON_AUTH_CACHE_TTL=2s")
	api.ready(t)
	get := func(path string) *http.Response {
		req, _ := http.NewRequest("GET", "http://"+api.addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = r.Body.Close()
		return r
	}
	for _, path := range []string{"/v1/teams", "/v1/stacks", "/v1/me"} {
		if r := get(path); r.StatusCode != 200 {
			t.Fatalf("GET %s with Postgres up: %d", path, r.StatusCode)
		}
	}

	pg.Cut()
	for _, path := range []string{"/v1/teams", "/v1/stacks", "/v1/me"} {
		r := get(path) // authenticated from the cache, then the handler meets the dead pool
		if r.StatusCode != 503 || r.Header.Get("Retry-After") == "" || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
			t.Fatalf("GET %s with Postgres down: %d, Retry-After %q, %s; want 503 problem+json with Retry-After",
				path, r.StatusCode, r.Header.Get("Retry-After"), r.Header.Get("Content-Type"))
		}
	}
	time.Sleep(2500 * time.Millisecond) // past the auth cache: authentication itself meets the dead pool
	if r := get("/v1/teams"); r.StatusCode != 503 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("GET /v1/teams with Postgres down, uncached: %d, Retry-After %q", r.StatusCode, r.Header.Get("Retry-After"))
	}

	pg.Restore()
	testkit.Eventually(t, 30*time.Second, "the API did not recover once Postgres was back", func() bool {
		return get("/v1/teams").StatusCode == 200
	})
}

// TestFirstAdminThroughTheSetupToken starts the API on an empty database with no bootstrap
// token, as the documented compose and Kubernetes deployments do: it logs a one-time setup
// token, which makes the first admin once; then setup is closed, and a restart logs no token.
func TestFirstAdminThroughTheSetupToken(t *testing.T) {
	t.Parallel()
	db := testkit.DB(t)
	_, ns := testkit.Redis(t)
	env := []string{"HORIZON_DATABASE_URL=" + db.Config().ConnString(), "HORIZON_NAMESPACE=" + ns}
	api := startAPI(t, env...)
	api.ready(t)
	var setupToken string
	testkit.Eventually(t, 10*time.Second, "no setup token in the log", func() bool {
		_, after, ok := strings.Cut(api.out.String(), "setup_token=")
		setupToken, _, _ = strings.Cut(after, "\n")
		return ok
	})
	post := func(body string) (*http.Response, map[string]any) {
		r, err := http.Post("http://"+api.addr+"/v1/setup", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		return r, m
	}
	if r, m := post(`{"setup_token": "hzs_wrong", "name": "Ada", "email": "ada@example.org"}`); r.StatusCode != 401 {
		t.Fatalf("a wrong setup token: %d %v", r.StatusCode, m)
	}
	r, m := post(`{"setup_token": "` + setupToken + `", "name": "Ada", "email": "ada@example.org"}`)
	if r.StatusCode != 201 || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("setup: %d %v", r.StatusCode, m)
	}
	req, _ := http.NewRequest("GET", "http://"+api.addr+"/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+m["token"].(string))
	me, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var who map[string]any
	_ = json.NewDecoder(me.Body).Decode(&who)
	_ = me.Body.Close()
	if me.StatusCode != 200 || who["role"] != "admin" {
		t.Fatalf("the first admin's token: %d %v", me.StatusCode, who)
	}
	if r, m := post(`{"setup_token": "` + setupToken + `", "name": "Eve", "email": "eve@example.org"}`); r.StatusCode != 409 {
		t.Fatalf("setup again: %d %v, want 409", r.StatusCode, m)
	}
	again := startAPI(t, env...)
	again.ready(t)
	if strings.Contains(again.out.String(), "setup_token=") {
		t.Fatalf("a restart with an admin logged a setup token:\n%s", again.out)
	}
}
