package web_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"golang.org/x/crypto/ssh"

	"horizon/deploy/sandbox/pve"
	"horizon/deploy/sandbox/pve/pvetest"
	"horizon/functions/apitest"
	"horizon/shared/auth"
	"horizon/shared/logstream"
	"horizon/shared/terraform"
	"horizon/shared/testkit"
	"horizon/workers/worker"
)

// chromium is Debian's Chromium; .ci/run installs it when it is missing.
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
			t.Fatalf("%s is not installed: the console needs Node 20+ (.ci/run installs what CI lacks)", tool)
		}
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("%s is missing: apt-get install -y chromium (.ci/run does it)", chromium)
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
}

func npm(t *testing.T, dir string, args ...string) {
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
	l := newLab(t, web, "for i in $(seq 1 20); do echo \"warming up the app: step $i of 20\"; done\n"+
		"while [ -e '"+hang+"' ]; do echo 'waiting for the license server'; sleep 1; done\n")
	out := filepath.Join(web, "e2e", "out")
	l.node(t, filepath.Join(web, "e2e", "run.mjs"), 6*time.Minute, "HANG_FILE="+hang, "OUT_DIR="+out)
}

// lab is Horizon running for the console's tests, set up as an admin would: the sandbox, a
// network with addresses, an environment, a team with a member and a viewer, the member's SSH
// key, and the sandbox-vm template; and the console served on its own origin, as a CDN would
// serve it, which the API allows.
type lab struct {
	web, consoleURL        string
	api                    *apitest.Server
	member, viewer         string
	env, server, key, tmpl string
	addrs                  []string
}

// newLab starts it; script is run first by the example's app script.
func newLab(t *testing.T, web, script string) *lab {
	l := &lab{web: web}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.consoleURL = "http://" + ln.Addr().String()
	api := apitest.New(t, &apitest.Options{CORSOrigins: []string{l.consoleURL}})
	l.api = api
	mux := http.NewServeMux()
	mux.HandleFunc("GET /config.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiBaseUrl": %q}`, api.URL)
	})
	mux.Handle("GET /", http.FileServer(http.Dir(filepath.Join(web, "dist"))))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	sb := pvetest.Start(t, func(c *pve.Config) { c.TaskDuration = 20 * time.Millisecond })
	startWorkers(t, api)

	l.server = must(t, api, "POST", "/v1/proxmox-servers", "", sb.Registration("demo", "sandbox"))["id"].(string)
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	prefix := fmt.Sprintf("127.%d.%d", 20+int(b[0])%200, 1+int(b[1])%250)
	network := must(t, api, "POST", "/v1/networks", "", map[string]any{"name": "loop", "cidr": prefix + ".0/24", "gateway": prefix + ".1",
		"dns": []string{"127.0.0.53"}, "bridge": "vmbr0"})["id"].(string)
	for i := 10; i < 16; i++ {
		a := must(t, api, "POST", "/v1/networks/"+network+"/addresses", "", map[string]any{"name": fmt.Sprintf("vm-%d", i), "ip": fmt.Sprintf("%s.%d", prefix, i)})
		l.addrs = append(l.addrs, a["id"].(string))
	}
	l.env = must(t, api, "POST", "/v1/environments", "", map[string]any{"name": "lab", "network_ids": []string{network}, "proxmox_server_ids": []string{l.server}})["id"].(string)
	team := api.NewTeam("ops")
	_, l.member = api.NewUser(auth.RoleMember, team)
	_, l.viewer = api.NewUser(auth.RoleViewer, team)
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	sshPub, _ := ssh.NewPublicKey(pub)
	l.key = must(t, api, "POST", "/v1/ssh-keys", l.member, map[string]any{"name": "laptop", "public_key": strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))})["id"].(string)
	l.tmpl = publish(t, api, script)
	return l
}

// node runs a script of the console's with the lab in its environment (CONSOLE_URL, API_URL,
// MEMBER_TOKEN, VIEWER_TOKEN, CHROMIUM) and more.
func (l *lab) node(t *testing.T, script string, within time.Duration, env ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Dir = l.web
	cmd.Env = append(append(os.Environ(), "CONSOLE_URL="+l.consoleURL, "API_URL="+l.api.URL, "MEMBER_TOKEN="+l.member, "VIEWER_TOKEN="+l.viewer,
		"CHROMIUM="+chromium), env...)
	cmd.Stdout, cmd.Stderr = testLog{t}, testLog{t}
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s failed after %s: %v", filepath.Base(script), time.Since(start).Round(time.Second), err)
	}
	t.Logf("%s: %s", filepath.Base(script), time.Since(start).Round(time.Second))
}

func startWorkers(t *testing.T, api *apitest.Server) {
	bin, err := terraform.FindBinary(context.Background(), os.Getenv("HORIZON_TERRAFORM_BIN"))
	if err != nil {
		t.Fatal(err)
	}
	redisOpt, err := asynq.ParseRedisURI(testkit.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	d := api.Deps
	w, err := worker.New(worker.Config{DB: d.DB, Redis: d.Redis, RedisOpt: redisOpt, Box: d.Box, Namespace: d.Namespace, Concurrency: 8,
		Log: slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn})), Git: testkit.GitCache(t), Heartbeat: time.Second,
		ScriptSSHTimeout: 30 * time.Second, ShutdownTimeout: 10 * time.Second,
		LogClient: logstream.New(d.Redis, d.DB, logstream.Config{Prefix: d.Namespace}), ProxmoxTaskPoll: 20 * time.Millisecond,
		Terraform: terraform.Config{Binary: bin, WorkRoot: t.TempDir(), GracePeriod: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Shutdown)
}

// publish registers deploy/examples/sandbox-vm from a git repository of the test's own, its app
// script made to run script first, and returns the template's id.
func publish(t *testing.T, api *apitest.Server, script string) string {
	dir := filepath.Join("..", "examples", "sandbox-vm")
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	const app = "jobs/app/scripts/configure.sh"
	files[app] = strings.Replace(files[app], "set -euo pipefail\n", "set -euo pipefail\n"+script, 1)
	repo := testkit.NewGitRepo(t)
	repo.Commit(files)
	def := strings.ReplaceAll(files["template.yaml"], "https://git.example.org/horizon/sandbox-vm.git", repo.URL)
	return must(t, api, "POST", "/v1/templates", "", map[string]any{"definition": def})["id"].(string)
}

// must does an API request (as the admin when token is "") and fails the test unless it is 2xx.
func must(t *testing.T, api *apitest.Server, method, path, token string, body any) map[string]any {
	t.Helper()
	r := api.Do(method, path, apitest.Req{Token: token, Body: body})
	if r.Status/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
	}
	return r.Map()
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
