// Package examples_test checks the example templates of deploy/examples: every template parses
// and validates, its modules (published to a git repository the test builds from the example's
// files) match it, and the sandbox-vm module really builds, adopts and destroys VMs on an
// in-process Proxmox VE sandbox through Terraform.
package examples_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"horizon/deploy/sandbox/pve"
	"horizon/shared/gitsource"
	"horizon/shared/sshx"
	"horizon/shared/template"
	"horizon/shared/terraform"
	"horizon/shared/testkit"
)

// examples are the example templates: directories laid out as the git repository they are
// published as, with the definition in template.yaml at the root.
var examples = []string{"sandbox-vm", "kubernetes"}

// publish commits the files of an example directory to a new git repository.
func publish(t testing.TB, example string) *testkit.GitRepo {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(example, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(example, path)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	repo := testkit.NewGitRepo(t)
	repo.Commit(files)
	return repo
}

// definitionIn parses an example's template and points every source at repo.
func definitionIn(t testing.TB, example string, repo *testkit.GitRepo) *template.Definition {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(example, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := template.Parse(doc)
	if err != nil {
		t.Fatalf("%s/template.yaml: %v", example, err)
	}
	for _, j := range d.Jobs() {
		j.Source.Repo = repo.URL
	}
	for i := range d.Actions {
		if d.Actions[i].Source != nil {
			d.Actions[i].Source.Repo = repo.URL
		}
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestExampleTemplatesValidateAndMatchTheirModules(t *testing.T) {
	t.Parallel()
	for _, example := range examples {
		t.Run(example, func(t *testing.T) {
			t.Parallel()
			repo := publish(t, example)
			d := definitionIn(t, example, repo)
			mods, err := template.Inspect(context.Background(), d, testkit.GitCache(t), nil)
			if err != nil {
				t.Fatalf("inspect %s: %v", example, err)
			}
			for _, j := range d.Jobs() {
				m := mods.Jobs[j.Name]
				for _, out := range []string{"vm_id", "node", "ip"} {
					if j.Machine && m.Output(out) == nil {
						t.Errorf("machine job %s has no output %q", j.Name, out)
					}
				}
			}
			form := template.Form(d, mods)
			if len(form.Phases) != len(d.Phases) {
				t.Errorf("form of %s: %+v", example, form)
			}
		})
	}
}

// The sandbox-vm template exercises what the engine's tests need: a later job wired to an
// earlier one, scripts with outputs, a cleanup script, a generated secret and Nagios checks.
func TestSandboxVMTemplateCoversTheContract(t *testing.T) {
	t.Parallel()
	d := definitionIn(t, "sandbox-vm", publish(t, "sandbox-vm"))
	app := d.Job("app")
	if app == nil || len(d.Phases) < 2 || d.Phases[0].Jobs[0].Name == "app" {
		t.Fatalf("want a later-phase job app: %+v", d.Phases)
	}
	if deps := d.Dependencies()["app"]; !slices.Equal(deps, []string{"db"}) {
		t.Errorf("app depends on %v, want [db]", deps)
	}
	generated := slices.ContainsFunc(app.Parameters, func(p template.Parameter) bool { return p.Secret && p.Generate })
	secretOut := slices.ContainsFunc(app.Outputs, func(o template.ScriptOutput) bool { return o.Secret })
	if !generated || !secretOut || len(app.Scripts) == 0 || len(app.Cleanup) == 0 || len(app.Nagios) == 0 || !app.Executions.Multiple {
		t.Errorf("app = %+v, want a generated secret, a secret script output, scripts, cleanup, Nagios checks and multiple executions", app)
	}
}

// sandboxEnv is an in-process PVE sandbox, a Terraform runner whose state goes to a test
// database and whose environment points at the sandbox, and the sandbox-vm modules' tree.
type sandboxEnv struct {
	sb     *pve.Sandbox
	c      *pve.Cluster
	runner *terraform.Runner
	tree   string
	node   *sshx.Client
	caPEM  []byte
}

func newSandboxEnv(t *testing.T) *sandboxEnv {
	t.Helper()
	ctx := context.Background()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := pve.DefaultConfig()
	cfg.SSHAuthorizedKeys = []string{strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))}
	sb, err := pve.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Close() }) // the test is over; a close error changes nothing
	c := sb.Cluster("demo")
	ca := filepath.Join(t.TempDir(), "pve-ca.pem")
	if err := os.WriteFile(ca, c.CACertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	node, err := sshx.Dial(ctx, sshx.Config{Addr: c.Node("pve1").SSHAddr(), User: "root", Signer: signer, HostKey: c.Node("pve1").HostKeyFingerprint()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Close() })

	bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	bin, err := terraform.FindBinary(bctx, os.Getenv("HORIZON_TERRAFORM_BIN"))
	if err != nil {
		t.Fatalf("find terraform: %v", err)
	}
	r, err := terraform.New(terraform.Config{
		Binary: bin, States: testkit.NewStates(t), WorkRoot: filepath.Join(t.TempDir(), "work"),
		LockTimeout: time.Minute, GracePeriod: 20 * time.Second,
		Env: map[string]string{
			"PROXMOX_VE_ENDPOINT":     c.URL(),
			"PROXMOX_VE_API_TOKEN":    c.TokenID() + "=" + c.TokenSecret(),
			"HORIZON_PROXMOX_CA_FILE": ca,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	repo := publish(t, "sandbox-vm")
	git := testkit.GitCache(t)
	commit, err := git.Resolve(ctx, repo.URL, "main", gitsource.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	tree, err := git.Tree(ctx, repo.URL, commit, gitsource.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	return &sandboxEnv{sb: sb, c: c, runner: r, tree: tree, node: node, caPEM: c.CACertPEM()}
}

// snippet uploads cloud-init user-data to pve1's local storage, as Horizon does before an
// apply, and returns its volume id.
func (e *sandboxEnv) snippet(t *testing.T, name string) string {
	t.Helper()
	if err := e.node.Upload(context.Background(), "/var/lib/vz/snippets/"+name+".yaml", strings.NewReader("#cloud-config\nhostname: "+name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return "local:snippets/" + name + ".yaml"
}

// vars are the variables Horizon would write for one execution on pve1.
func vars(name string, vmid int, ip, cloudInit string) map[string]any {
	return map[string]any{
		"horizon_name":          name,
		"horizon_node":          "pve1",
		"horizon_pool":          "dev",
		"horizon_vmid":          vmid,
		"horizon_address":       map[string]any{"ip": ip, "prefix": 8, "gateway": "127.0.0.1", "dns": []string{"127.0.0.53", "1.1.1.1"}, "name": name},
		"horizon_cloud_init":    cloudInit,
		"horizon_tags":          []string{"shop", "env-dev"},
		"horizon_startup_order": 2,
		"cores":                 2,
		"memory_mb":             2048,
	}
}

// log collects a work dir's output, for failure messages.
type log struct {
	mu    sync.Mutex
	lines []string
}

func (l *log) sink(_ terraform.Stream, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
}

func (l *log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// workdir prepares and inits a work dir of module for workspace with vars.
func (e *sandboxEnv) workdir(t *testing.T, module, workspace string, v map[string]any) (*terraform.Workdir, *log) {
	t.Helper()
	out := &log{}
	w, err := e.runner.Prepare(context.Background(), terraform.PrepareOpts{Source: e.tree, Module: module, Workspace: workspace, Vars: v, Sink: out.sink})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() }) // work dirs are temporary; the state is in Postgres
	if err := w.Init(context.Background()); err != nil {
		t.Fatalf("init %s: %v\n%s", workspace, err, out)
	}
	return w, out
}

func (e *sandboxEnv) vm(t *testing.T, vmid int) (pve.VM, bool) {
	t.Helper()
	for _, v := range e.c.VMs() {
		if v.VMID == vmid {
			return v, true
		}
	}
	return pve.VM{}, false
}

// tasks counts the tasks of a type about one VM.
func (e *sandboxEnv) tasks(typ string, vmid int) int {
	n := 0
	for _, task := range e.c.Tasks() {
		if task.Type == typ && task.ID == strconv.Itoa(vmid) {
			n++
		}
	}
	return n
}

func TestSandboxVMModuleBuildsAdoptsAndDestroys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSandboxEnv(t)
	v := vars("s1-db-0", 140, "127.0.10.5", e.snippet(t, "s1-db-0"))

	first, out := e.workdir(t, "jobs/vm", "s1-db-0", v)
	if err := first.Apply(ctx); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	vm, ok := e.vm(t, 140)
	if !ok {
		t.Fatalf("no VM 140 after apply; VMs %+v\n%s", e.c.VMs(), out)
	}
	want := map[string]string{
		"name": "s1-db-0", "cores": "2", "memory": "2048", "ipconfig0": "ip=127.0.10.5/8,gw=127.0.0.1",
		"nameserver": "127.0.0.53 1.1.1.1", "cicustom": "user=local:snippets/s1-db-0.yaml", "startup": "order=2",
		"net0": "virtio,bridge=vmbr0",
	}
	for k, w := range want {
		if got := vm.Config[k]; got != w && !(k == "net0" && strings.HasPrefix(got, "virtio=") && strings.HasSuffix(got, ",bridge=vmbr0")) {
			t.Errorf("config %s = %q, want %q", k, got, w)
		}
	}
	if vm.Node != "pve1" || vm.Status != "running" || vm.Pool != "dev" || !slices.Equal(vm.Tags, []string{"env-dev", "shop"}) {
		t.Errorf("VM %+v, want running on pve1 in pool dev tagged env-dev and shop", vm)
	}
	outputs, err := first.Outputs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"vm_id": "140", "node": `"pve1"`, "ip": `"127.0.10.5"`} {
		if got := string(outputs[name].Value); got != want || outputs[name].Sensitive {
			t.Errorf("output %s = %s, want %s", name, got, want)
		}
	}

	// Raising memory re-applies in place: the same VM, reconfigured, not rebuilt.
	more := vars("s1-db-0", 140, "127.0.10.5", "local:snippets/s1-db-0.yaml")
	more["memory_mb"] = 4096
	bigger, out := e.workdir(t, "jobs/vm", "s1-db-0", more)
	if err := bigger.Apply(ctx); err != nil {
		t.Fatalf("apply with more memory: %v\n%s", err, out)
	}
	if vm, _ := e.vm(t, 140); vm.Config["memory"] != "4096" || e.tasks("qmcreate", 140) != 1 || vm.Status != "running" {
		t.Fatalf("after raising memory: %+v, %d creations; want memory 4096 on the one running VM", vm, e.tasks("qmcreate", 140))
	}

	// An apply whose state was lost (killed before Terraform saved it) adopts the VM.
	again, out := e.workdir(t, "jobs/vm", "s1-db-0-lost", more)
	if err := again.Apply(ctx); err != nil {
		t.Fatalf("apply with the VM already there: %v\n%s", err, out)
	}
	if len(e.c.VMs()) != 1 || e.tasks("qmcreate", 140) != 1 || !strings.Contains(out.String(), "adopting it") {
		t.Fatalf("after the second apply: VMs %+v, %d creations; want the one VM adopted\n%s", e.c.VMs(), e.tasks("qmcreate", 140), out)
	}

	// A VM with that VMID but another name is not ours: refused, and left alone on destroy.
	other := vars("s1-intruder-0", 140, "127.0.10.6", "local:snippets/s1-db-0.yaml")
	intruder, out := e.workdir(t, "jobs/vm", "s1-intruder-0", other)
	err = intruder.Apply(ctx)
	if err == nil || !strings.Contains(out.String(), "refusing to adopt it") {
		t.Fatalf("apply over another VM's VMID: %v, want a clear refusal\n%s", err, out)
	}
	if err := intruder.Destroy(ctx); err != nil {
		t.Fatalf("destroy of the refused execution: %v\n%s", err, out)
	}
	if vm, ok := e.vm(t, 140); !ok || vm.Name != "s1-db-0" || !strings.Contains(out.String(), "it is not this job's VM") {
		t.Fatalf("the refused execution's destroy touched VM 140: %+v %v\n%s", vm, ok, out)
	}

	// A failing PVE task fails the apply with PVE's exit status; destroy still cleans up.
	broken, out := e.workdir(t, "jobs/vm", "s1-broken-0", vars("s1-broken-0", 141, "127.0.10.7", "local:snippets/missing.yaml"))
	err = broken.Apply(ctx)
	if err == nil || !strings.Contains(out.String(), "start VM 141 failed: cicustom: volume 'local:snippets/missing.yaml' does not exist") {
		t.Fatalf("apply with a missing snippet: %v, want the start task's exit status\n%s", err, out)
	}
	if err := broken.Destroy(ctx); err != nil {
		t.Fatalf("destroy of the broken execution: %v\n%s", err, out)
	}
	if _, ok := e.vm(t, 141); ok {
		t.Fatal("VM 141 survived its destroy")
	}

	// A new name is written in place, and the VM keeps being this execution's.
	renamed := vars("s1-db-renamed", 140, "127.0.10.5", "local:snippets/s1-db-0.yaml")
	rename, out := e.workdir(t, "jobs/vm", "s1-db-0", renamed)
	if err := rename.Apply(ctx); err != nil {
		t.Fatalf("apply with a new name: %v\n%s", err, out)
	}
	if vm, _ := e.vm(t, 140); vm.Name != "s1-db-renamed" || e.tasks("qmcreate", 140) != 1 {
		t.Fatalf("after renaming: %+v, %d creations; want the one VM renamed", vm, e.tasks("qmcreate", 140))
	}
	if err := rename.Destroy(ctx); err != nil {
		t.Fatalf("destroy: %v\n%s", err, out)
	}
	if _, ok := e.vm(t, 140); ok {
		t.Fatalf("VM 140 survived its destroy: %+v", e.c.VMs())
	}
	// The adopting execution's destroy finds the VM gone, which is fine.
	if err := again.Destroy(ctx); err != nil {
		t.Fatalf("destroy after the VM is gone: %v", err)
	}
}

// A run killed while PVE was still creating the VM leaves it locked; the next run waits for
// the lock to go and adopts the VM instead of failing or making a second one.
func TestSandboxVMModuleAdoptsAVMStillBeingCreated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSandboxEnv(t)
	v := vars("s1-web-0", 160, "127.0.12.5", e.snippet(t, "s1-web-0"))
	e.sb.HangTasks("qmcreate")
	e.api(t, "POST", "/nodes/pve1/qemu", url.Values{"vmid": {"160"}, "name": {"s1-web-0"}})
	if vm, ok := e.vm(t, 160); !ok || vm.Config["lock"] != "create" {
		t.Fatalf("VM 160 before the apply: %+v %v, want it locked by its creation", vm, ok)
	}

	w, out := e.workdir(t, "jobs/vm", "s1-web-0", v)
	applied := make(chan error, 1)
	go func() { applied <- w.Apply(ctx) }()
	testkit.Eventually(t, time.Minute, "the apply did not find the VM being created", func() bool {
		return strings.Contains(out.String(), "adopting it")
	})
	e.sb.ReleaseTasks("qmcreate")
	if err := <-applied; err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	if vm, _ := e.vm(t, 160); len(e.c.VMs()) != 1 || vm.Status != "running" || vm.Config["memory"] != "2048" || e.tasks("qmcreate", 160) != 1 {
		t.Fatalf("after the apply: %+v, %d creations; want the one VM configured and running", e.c.VMs(), e.tasks("qmcreate", 160))
	}
	if err := w.Destroy(ctx); err != nil {
		t.Fatalf("destroy: %v\n%s", err, out)
	}
	if len(e.c.VMs()) != 0 {
		t.Fatalf("VMs after destroy: %+v", e.c.VMs())
	}
}

// api calls the sandbox's PVE API directly, as another client would, and fails unless 200.
func (e *sandboxEnv) api(t *testing.T, method, path string, form url.Values) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.caPEM)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, err := http.NewRequest(method, e.c.URL()+"/api2/json"+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "PVEAPIToken="+e.c.TokenID()+"="+e.c.TokenSecret())
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("%s %s: %s", method, path, res.Status)
	}
}

// The app job's module wraps jobs/vm as a child module, takes the db job's ip as an input and
// a generated secret, which it passes on as a sensitive output.
func TestSandboxVMAppJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSandboxEnv(t)
	v := vars("s1-app-0", 150, "127.0.11.5", e.snippet(t, "s1-app-0"))
	v["db_host"] = "127.0.10.5"
	v["admin_password"] = "generated-Secret-42"
	w, out := e.workdir(t, "jobs/app", "s1-app-0", v)
	if err := w.Apply(ctx); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	if vm, ok := e.vm(t, 150); !ok || vm.Status != "running" || vm.Name != "s1-app-0" {
		t.Fatalf("VM 150: %+v %v", vm, ok)
	}
	outputs, err := w.Outputs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(mustJSON(t, map[string]json.RawMessage{"vm_id": outputs["vm_id"].Value, "db_host": outputs["db_host"].Value}), &got); err != nil {
		t.Fatal(err)
	}
	if got["vm_id"] != 150.0 || got["db_host"] != "127.0.10.5" || !outputs["admin_password"].Sensitive {
		t.Fatalf("outputs %v (admin_password %+v), want vm_id 150, the db_host input and a sensitive admin_password", got, outputs["admin_password"])
	}
	if strings.Contains(out.String(), "generated-Secret-42") {
		t.Fatal("the secret reached Terraform's log")
	}
	if err := w.Destroy(ctx); err != nil {
		t.Fatalf("destroy: %v\n%s", err, out)
	}
	if _, ok := e.vm(t, 150); ok {
		t.Fatal("VM 150 survived its destroy")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
