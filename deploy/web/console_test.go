package web_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"horizon/deploy/web"
	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/workers/worker/workertest"
)

// chromium is Debian's Chromium; `go tool task deps` installs it when it is missing.
const chromium = "/usr/bin/chromium"

// TestConsole type-checks the console, runs its unit tests, builds it, then drives the build in
// Chromium against a real Horizon: API, workers, Terraform and the Proxmox sandbox.
func TestConsole(t *testing.T) {
	web, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: the console needs Node 20+ (`go tool task deps` installs it)", tool)
		}
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("%s is missing: run `go tool task deps`", chromium)
	}
	// A fresh clone installs; a developer's up-to-date node_modules is kept.
	lock, err := os.Stat(filepath.Join(web, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	if installed, err := os.Stat(filepath.Join(web, "node_modules", ".package-lock.json")); err != nil || installed.ModTime().Before(lock.ModTime()) {
		npm(t, web, "ci", "--no-audit", "--no-fund")
	}
	npm(t, web, "run", "typecheck")
	npm(t, web, "test")
	npm(t, web, "run", "build")

	t.Run("e2e", func(t *testing.T) { e2e(t, web) })
	t.Run("first-admin", func(t *testing.T) { firstAdmin(t, web) })
}

// firstAdmin opens the console on an installation with no admin yet: the setup token the API
// logged makes the first admin, whose token is shown once and signs in.
func firstAdmin(t *testing.T, web string) {
	c := newConsole(t, web)
	api, setup := apitest.NewFirstRun(t, &apitest.Options{CORSOrigins: []string{c.url}})
	c.serve(t, api.URL)
	playwright(t, web, "first-admin", 3*time.Minute, "CONSOLE_URL="+c.url, "API_URL="+api.URL, "SETUP_TOKEN="+setup)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var role string
	if err := api.DB.QueryRow(ctx, `SELECT role FROM users WHERE email = 'grace@example.org'`).Scan(&role); err != nil || role != "admin" {
		t.Fatalf("the first admin made in the console: role %q, %v", role, err)
	}
}

func npm(t testing.TB, dir string, args ...string) {
	t.Helper()
	start := time.Now()
	cmd := exec.Command("npm", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("npm %s: %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
}

func e2e(t *testing.T, web string) {
	hang := filepath.Join(t.TempDir(), "hang")
	// The app script prints a few lines and hangs while the file hang exists, so the browser
	// can cancel a hung run.
	// A fresh lab: the member has no SSH key yet and adds one from the form's link, as a new
	// operator does.
	l := newLab(t, web, "for i in $(seq 1 20); do echo \"warming up the app: step $i of 20\"; done\n"+
		"while [ -e '"+hang+"' ]; do echo 'waiting for the license server'; sleep 1; done\n", true)
	// What an admin types to register the sandbox's cluster from the console.
	key := filepath.Join(t.TempDir(), "node-key")
	if err := os.WriteFile(key, []byte(l.Sandbox.NodeKeyPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	// The notifications journey's webhook destination, on loopback, which the lab allows.
	rcv := newReceiver(t)
	// Twelve journeys, one after the other: 8.5 minutes on a 2-core machine at load 35, about
	// 20 at load 50 (the single script they replace had 8).
	playwright(t, web, "lab", 20*time.Minute, "CONSOLE_URL="+l.consoleURL, "API_URL="+l.API.URL, "ADMIN_TOKEN="+l.API.Admin,
		"MEMBER_TOKEN="+l.Member, "VIEWER_TOKEN="+l.Viewer, "HANG_FILE="+hang, "NODE_KEY_FILE="+key,
		"PVE_TOKEN_SECRET="+l.Sandbox.Cluster("demo").TokenSecret(), "WEBHOOK_RECEIVER="+rcv.URL)
	if rcv.received("/hook") == 0 || rcv.received("/refuse") == 0 {
		t.Fatalf("the receiver got %d messages at /hook and %d at /refuse; the journey sends to both", rcv.received("/hook"), rcv.received("/refuse"))
	}
}

// lab is Horizon running for the console's tests (labtest's catalogue, with a viewer of the
// member's team, and the workers), and the console served on its own origin, as a CDN would
// serve it, which the API allows.
type lab struct {
	*labtest.Lab
	web, consoleURL string
}

// newLab starts it; script is run first by the example's app script; fresh leaves the
// member without an SSH key.
func newLab(t testing.TB, web, script string, fresh bool) *lab {
	l := &lab{web: web}
	c := newConsole(t, web)
	l.consoleURL = c.url
	l.Lab = labtest.New(t, labtest.Options{API: &apitest.Options{CORSOrigins: []string{l.consoleURL}, Webhooks: loopbackWebhooks},
		Override: map[string]string{labtest.AppScript: labtest.AppScriptWith(t, script)}, NoSSHKey: fresh})
	d := l.API.Deps
	workertest.Start(t, workertest.Deps{DB: d.DB, Redis: d.Redis, Box: d.Box, Namespace: d.Namespace}, workertest.Options{Webhooks: loopbackWebhooks, OutboxSweep: true})
	c.serve(t, l.API.URL)
	return l
}

// console is the built console served on its own origin, as a CDN would serve it.
type console struct {
	web, url string
	ln       net.Listener
}

// newConsole takes the console's port, so that the API can be told its origin first.
func newConsole(t testing.TB, web string) *console {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &console{web: web, url: "http://" + ln.Addr().String(), ln: ln}
}

// serve serves dist/ and a config.json naming the API until the test ends, with the
// production headers (web.Handler), so every journey runs under the console's strict CSP.
func (c *console) serve(t testing.TB, api string) {
	h, err := web.Handler(filepath.Join(c.web, "dist"), api)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(c.ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// playwright runs the journeys of one project of playwright.config.ts (`npx playwright test
// --project name`) with env and CHROMIUM in their environment; their output is the test's log.
// A failed journey leaves its trace and a screenshot of each page under e2e/out/<project>,
// which the failure names.
func playwright(t testing.TB, web, project string, within time.Duration, env ...string) {
	t.Helper()
	out := filepath.Join(web, "e2e", "out", project)
	// Playwright stops at its global timeout, a minute before ours, and says what was running
	// (keeping its trace); ours ends Playwright, Chromium and all, if it did not.
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npx", "--no-install", "playwright", "test", "--project", project, "--output", out,
		"--global-timeout", strconv.FormatInt((within-time.Minute).Milliseconds(), 10))
	cmd.Dir = web
	cmd.Env = append(append(os.Environ(), "CHROMIUM="+chromium, "FORCE_COLOR=0"), env...)
	cmd.Stdout, cmd.Stderr = testLog{t}, testLog{t}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	err := cmd.Run()
	t.Logf("the %s journeys: %s", project, time.Since(start).Round(time.Second))
	if err == nil {
		return
	}
	var kept []string
	_ = filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".zip") || strings.HasPrefix(d.Name(), "test-failed")) {
			kept = append(kept, path)
		}
		// The page as the failing step saw it (an accessibility snapshot): readable in CI's
		// output, where the kept files are gone with the clone.
		if err == nil && d.Name() == "error-context.md" {
			if b, rerr := os.ReadFile(path); rerr == nil {
				t.Logf("%s:\n%s", path, b[:min(len(b), 8<<10)])
			}
		}
		return nil
	})
	t.Fatalf("the %s journeys failed after %s (%v); their output is above. Kept (`npx playwright show-trace` opens a trace.zip):\n  %s",
		project, time.Since(start).Round(time.Second), err, strings.Join(kept, "\n  "))
}

// node runs a script of the console's with the lab in its environment (CONSOLE_URL, API_URL,
// ADMIN_TOKEN, MEMBER_TOKEN, VIEWER_TOKEN, CHROMIUM) and more.
func (l *lab) node(t testing.TB, script string, within time.Duration, env ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Dir = l.web
	cmd.Env = append(append(os.Environ(), "CONSOLE_URL="+l.consoleURL, "API_URL="+l.API.URL, "ADMIN_TOKEN="+l.API.Admin, "MEMBER_TOKEN="+l.Member, "VIEWER_TOKEN="+l.Viewer,
		"CHROMIUM="+chromium), env...)
	cmd.Stdout, cmd.Stderr = testLog{t}, testLog{t}
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s failed after %s: %v", filepath.Base(script), time.Since(start).Round(time.Second), err)
	}
	t.Logf("%s: %s", filepath.Base(script), time.Since(start).Round(time.Second))
}

// must does an API request (as the admin when token is "") and fails the test unless it is 2xx.
func must(t testing.TB, api *apitest.Server, method, path, token string, body any) map[string]any {
	t.Helper()
	r := api.Do(method, path, apitest.Req{Token: token, Body: body})
	if r.Status/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
	}
	return r.Map()
}

type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
