package worker_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io/fs"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"golang.org/x/crypto/ssh"

	"horizon/deploy/sandbox/pve"
	"horizon/deploy/sandbox/pve/pvetest"
	"horizon/functions/apitest"
	"horizon/shared/auth"
	"horizon/shared/logstream"
	"horizon/shared/proxmox"
	"horizon/shared/secrets"
	"horizon/shared/terraform"
	"horizon/shared/testkit"
	"horizon/workers/worker"
)

// engine is Horizon running for one test: the API, the workers in process, the Proxmox sandbox
// registered in an environment, a team with a member, and the sandbox-vm example template
// published from a git repository of the test's own.
type engine struct {
	t      testing.TB
	api    *apitest.Server
	sb     *pvetest.Sandbox
	worker *worker.Worker
	member string // a member's token
	team   string
	env    string
	server string
	key    string // the member's SSH key
	tmpl   string
	addrs  []string // free addresses of the environment's network, in order
	repo   *testkit.GitRepo
	// workRoot holds the workers' Terraform work dirs.
	workRoot string
}

type engineOpts struct {
	sandbox   func(*pve.Config)
	heartbeat time.Duration
	// noWorker leaves the workers stopped; the test starts them (startWorker).
	noWorker bool
	// override replaces files of the published example (path → content).
	override map[string]string
	// terraformBin overrides HORIZON_TERRAFORM_BIN; concurrency the workers' (default 8).
	terraformBin string
	concurrency  int
	// vmSSHPort moves the sandbox VMs' SSH servers and tells the workers (HORIZON_VM_SSH_PORT).
	vmSSHPort int
}

func newEngine(t testing.TB, o engineOpts) *engine {
	t.Helper()
	e := &engine{t: t}
	e.api = apitest.New(t, nil)
	e.sb = pvetest.Start(t, func(c *pve.Config) {
		c.TaskDuration = 20 * time.Millisecond
		if o.vmSSHPort != 0 {
			c.VMSSHPort = o.vmSSHPort
		}
		if o.sandbox != nil {
			o.sandbox(c)
		}
	})
	if !o.noWorker {
		e.startWorker(o)
	}

	srv := e.api.Do("POST", "/v1/proxmox-servers", apitest.Req{Body: e.sb.Registration("demo", "sandbox")})
	if srv.Status != 201 {
		t.Fatalf("register the sandbox: %d %s", srv.Status, srv.Body)
	}
	e.server = srv.Map()["id"].(string)
	// A loopback network of the test's own: VMs of parallel tests must not share addresses.
	b, _ := rand.Int(rand.Reader, big.NewInt(200))
	c, _ := rand.Int(rand.Reader, big.NewInt(250))
	prefix := fmt.Sprintf("127.%d.%d", 20+b.Int64(), 1+c.Int64())
	net := e.api.Do("POST", "/v1/networks", apitest.Req{Body: map[string]any{"name": "loop", "cidr": prefix + ".0/24", "gateway": prefix + ".1",
		"dns": []string{"127.0.0.53"}, "bridge": "vmbr0"}})
	if net.Status != 201 {
		t.Fatalf("network: %d %s", net.Status, net.Body)
	}
	netID := net.Map()["id"].(string)
	for i := 10; i < 20; i++ {
		a := e.api.Do("POST", "/v1/networks/"+netID+"/addresses", apitest.Req{Body: map[string]any{"name": fmt.Sprintf("vm-%d", i), "ip": fmt.Sprintf("%s.%d", prefix, i)}})
		e.addrs = append(e.addrs, a.Map()["id"].(string))
	}
	env := e.api.Do("POST", "/v1/environments", apitest.Req{Body: map[string]any{"name": "lab", "network_ids": []string{netID}, "proxmox_server_ids": []string{e.server}}})
	e.env = env.Map()["id"].(string)
	team := e.api.NewTeam("ops")
	e.team = team.String()
	_, e.member = e.api.NewUser(auth.RoleMember, team)
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	sshPub, _ := ssh.NewPublicKey(pub)
	key := e.api.Do("POST", "/v1/ssh-keys", apitest.Req{Token: e.member, Body: map[string]any{"name": "laptop",
		"public_key": strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))}})
	e.key = key.Map()["id"].(string)
	e.repo, e.tmpl = e.publish("sandbox-vm", o.override)
	return e
}

func (e *engine) startWorker(o engineOpts) {
	t := e.t
	tfBin := o.terraformBin
	if tfBin == "" {
		tfBin = os.Getenv("HORIZON_TERRAFORM_BIN")
	}
	bin, err := terraform.FindBinary(context.Background(), tfBin)
	if err != nil {
		t.Fatal(err)
	}
	redisOpt, err := asynq.ParseRedisURI(testkit.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	hb := o.heartbeat
	if hb == 0 {
		hb = time.Second
	}
	concurrency := o.concurrency
	if concurrency == 0 {
		concurrency = 8
	}
	d := e.api.Deps
	if e.workRoot == "" {
		e.workRoot = t.TempDir()
	}
	w, err := worker.New(worker.Config{DB: d.DB, Redis: d.Redis, RedisOpt: redisOpt, Box: d.Box, Namespace: d.Namespace, Concurrency: concurrency,
		Log: slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn})), Git: testkit.GitCache(t), Heartbeat: hb, ScriptSSHTimeout: 30 * time.Second,
		ShutdownTimeout: 10 * time.Second, VMSSHPort: o.vmSSHPort, LogClient: logstream.New(d.Redis, d.DB, logstream.Config{Prefix: d.Namespace}),
		ISORetryBackoff: 50 * time.Millisecond, ProxmoxTaskPoll: 20 * time.Millisecond,
		Terraform: terraform.Config{Binary: bin, WorkRoot: e.workRoot, GracePeriod: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Shutdown)
	e.worker = w
}

// publish commits an example to a new git repository and registers it as a template whose
// sources point there.
func (e *engine) publish(example string, override map[string]string) (*testkit.GitRepo, string) {
	t := e.t
	dir := filepath.Join("..", "..", "deploy", "examples", example)
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
	for k, v := range override {
		files[k] = v
	}
	repo := testkit.NewGitRepo(t)
	repo.Commit(files)
	def := strings.ReplaceAll(files["template.yaml"], "https://git.example.org/horizon/sandbox-vm.git", repo.URL)
	r := e.api.Do("POST", "/v1/templates", apitest.Req{Body: map[string]any{"definition": def}})
	if r.Status != 201 {
		t.Fatalf("template: %d %s", r.Status, r.Body)
	}
	return repo, r.Map()["id"].(string)
}

// appScript is the sandbox-vm example's app script, in its repository.
const appScript = "jobs/app/scripts/configure.sh"

// exampleFile reads a file of the sandbox-vm example.
func exampleFile(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "examples", "sandbox-vm", rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// appScriptWith is the example's app script with lines run first (right after its
// "set -euo pipefail"): an override that makes it misbehave.
func appScriptWith(t testing.TB, lines string) string {
	return strings.Replace(exampleFile(t, appScript), "set -euo pipefail\n", "set -euo pipefail\n"+lines, 1)
}

// machine is a machine execution's answers with the lab's attachments.
func (e *engine) machine(addr int, extra map[string]any) map[string]any {
	m := map[string]any{"address_id": e.addrs[addr], "ssh_key_id": e.key, "proxmox_server_id": e.server, "node": "pve1", "pool": "dev"}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// draft creates a draft of the sandbox-vm template with one db and n app executions.
func (e *engine) draft(name string, apps int) string {
	t := e.t
	var app []map[string]any
	for i := 0; i < apps; i++ {
		app = append(app, e.machine(1+i, map[string]any{"node": []string{"pve1", "pve2", "pve3"}[i%3]}))
	}
	r := e.api.Do("POST", "/v1/stacks", apitest.Req{Token: e.member, Body: map[string]any{"team_id": e.team, "name": name,
		"environment_id": e.env, "template_id": e.tmpl, "template_version": 1, "labels": []string{"lab"},
		"jobs": map[string]any{"db": map[string]any{"executions": []any{e.machine(0, nil)}}, "app": map[string]any{"executions": app}}}})
	if r.Status != 201 {
		t.Fatalf("draft: %d %s", r.Status, r.Body)
	}
	return r.Map()["id"].(string)
}

// waitState waits until the stack reaches state and returns its detail. When it does not,
// the test fails showing the stack's pipeline and deploy log.
func (e *engine) waitState(stack, state string, within time.Duration) map[string]any {
	e.t.Helper()
	return e.waitStateAs(e.member, stack, state, within)
}

// waitStateAs is waitState for a stack the member with token may read.
func (e *engine) waitStateAs(token, stack, state string, within time.Duration) map[string]any {
	e.t.Helper()
	var last map[string]any
	deadline := time.Now().Add(within)
	for {
		last = e.api.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: token}).Map()
		if last["state"] == state {
			return last
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("after %s the stack is %v, not %s\npipeline: %v\nlog:\n%s", within, last["state"], state, e.pipeline(stack), e.logText(stack))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// proxmox is a client of the sandbox cluster "demo", for acting on it as an operator would.
func (e *engine) proxmox() *proxmox.Client {
	c := e.sb.Cluster("demo")
	pc, err := proxmox.New(proxmox.Config{URL: c.URL(), TokenID: c.TokenID(), TokenSecret: secrets.Value(c.TokenSecret()), Fingerprint: c.CertFingerprint()})
	if err != nil {
		e.t.Fatal(err)
	}
	return pc
}

// logText is the stack's deploy log as stored in Postgres.
func (e *engine) logText(stack string) string {
	rows, err := e.api.DB.Query(context.Background(), `SELECT job, fd, text FROM log_lines WHERE stack_id = $1 ORDER BY run_id, stream_ms, stream_seq`, stack)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var job, fd, text string
		_ = rows.Scan(&job, &fd, &text)
		fmt.Fprintf(&b, "%s %s| %s\n", job, fd, text)
	}
	return b.String()
}

type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// pipeline returns the stack's latest pipeline as card states by "job[n]".
func (e *engine) pipeline(stack string) map[string]map[string]any {
	cards := map[string]map[string]any{}
	p := e.api.Do("GET", "/v1/stacks/"+stack+"/pipeline", apitest.Req{Token: e.member}).Map()
	for _, col := range p["columns"].([]any) {
		for _, c := range col.(map[string]any)["cards"].([]any) {
			card := c.(map[string]any)
			cards[fmt.Sprintf("%s[%v]", card["job"], card["execution"])] = card
		}
	}
	return cards
}

func mustUUID(t testing.TB, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
