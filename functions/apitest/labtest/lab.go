// Package labtest sets up a lab for tests of stacks: the API (apitest) with a Proxmox VE
// sandbox registered as the server "sandbox" of cluster "demo", an environment "lab" with a
// loopback network of free addresses, a team with a member and the member's SSH key (none on
// a fresh lab, for a test that adds it as a new operator would), and the
// sandbox-vm example template published from a git repository of the test's own. Tests of the
// API alone use it as is; the workers' end-to-end tests add the workers.
package labtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"horizon/deploy/sandbox/pve"
	"horizon/deploy/sandbox/pve/pvetest"
	"horizon/functions/apitest"
	"horizon/shared/auth"
	"horizon/shared/testkit"
)

// Lab is the catalogue one test deploys into. Ids are strings, as the API's bodies have them.
type Lab struct {
	T       testing.TB
	API     *apitest.Server
	Sandbox *pvetest.Sandbox
	Member  string // a member's token
	Viewer  string // a viewer's token, of the same team
	Team    string
	Env     string
	Server  string
	Key     string // the member's SSH key; "" on a fresh lab (Options.NoSSHKey)
	Tmpl    string
	Addrs   []string // free addresses of the environment's network, in order
	Repo    *testkit.GitRepo
}

// Options tune the lab.
type Options struct {
	// API tunes the API (apitest.New); nil for its defaults.
	API *apitest.Options
	// Sandbox changes the sandbox's configuration (after the lab's own: fast tasks).
	Sandbox func(*pve.Config)
	// VMSSHPort moves the sandbox VMs' SSH servers.
	VMSSHPort int
	// Override replaces files of the published example (path → content).
	Override map[string]string
	// NoSSHKey leaves the member without an SSH key: what a new operator finds before adding one.
	NoSSHKey bool
}

// New starts the lab.
func New(t testing.TB, o Options) *Lab {
	t.Helper()
	l := &Lab{T: t, API: apitest.New(t, o.API)}
	l.Sandbox = pvetest.Start(t, func(c *pve.Config) {
		c.TaskDuration = 20 * time.Millisecond
		if o.VMSSHPort != 0 {
			c.VMSSHPort = o.VMSSHPort
		}
		if o.Sandbox != nil {
			o.Sandbox(c)
		}
	})
	srv := l.API.Do("POST", "/v1/proxmox-servers", apitest.Req{Body: l.Sandbox.Registration("demo", "sandbox")})
	if srv.Status != 201 {
		t.Fatalf("register the sandbox: %d %s", srv.Status, srv.Body)
	}
	l.Server = srv.Map()["id"].(string)
	// A loopback network of the test's own: VMs of parallel tests must not share addresses.
	prefix := testkit.LoopbackNet(t)
	net := l.API.Do("POST", "/v1/networks", apitest.Req{Body: map[string]any{"name": "loop", "cidr": prefix + ".0/24", "gateway": prefix + ".1",
		"dns": []string{"127.0.0.53"}, "bridge": "vmbr0"}})
	if net.Status != 201 {
		t.Fatalf("network: %d %s", net.Status, net.Body)
	}
	netID := net.Map()["id"].(string)
	for i := 10; i < 20; i++ {
		a := l.API.Do("POST", "/v1/networks/"+netID+"/addresses", apitest.Req{Body: map[string]any{"name": fmt.Sprintf("vm-%d", i), "ip": fmt.Sprintf("%s.%d", prefix, i)}})
		l.Addrs = append(l.Addrs, a.Map()["id"].(string))
	}
	env := l.API.Do("POST", "/v1/environments", apitest.Req{Body: map[string]any{"name": "lab", "network_ids": []string{netID}, "proxmox_server_ids": []string{l.Server}}})
	l.Env = env.Map()["id"].(string)
	team := l.API.NewTeam("ops")
	l.Team = team.String()
	_, l.Member = l.API.NewUser(auth.RoleMember, team)
	_, l.Viewer = l.API.NewUser(auth.RoleViewer, team)
	if !o.NoSSHKey {
		pub, _, _ := ed25519.GenerateKey(rand.Reader)
		sshPub, _ := ssh.NewPublicKey(pub)
		key := l.API.Do("POST", "/v1/ssh-keys", apitest.Req{Token: l.Member, Body: map[string]any{"name": "laptop",
			"public_key": strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))}})
		l.Key = key.Map()["id"].(string)
	}
	l.Repo, l.Tmpl = l.Publish("sandbox-vm", o.Override)
	return l
}

// Publish commits an example of deploy/examples to a new git repository and registers it as
// a template whose sources point there.
func (l *Lab) Publish(example string, override map[string]string) (*testkit.GitRepo, string) {
	t := l.T
	dir := ExampleDir(example)
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
	def := strings.ReplaceAll(files["template.yaml"], "https://git.example.org/horizon/"+example+".git", repo.URL)
	r := l.API.Do("POST", "/v1/templates", apitest.Req{Body: map[string]any{"definition": def}})
	if r.Status != 201 {
		t.Fatalf("template: %d %s", r.Status, r.Body)
	}
	return repo, r.Map()["id"].(string)
}

// ExampleDir is the directory of an example of deploy/examples.
func ExampleDir(example string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "deploy", "examples", example)
}

// AppScript is the sandbox-vm example's app script, in its repository.
const AppScript = "jobs/app/scripts/configure.sh"

// ExampleFile reads a file of the sandbox-vm example.
func ExampleFile(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ExampleDir("sandbox-vm"), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// AppScriptWith is the example's app script with lines run first (right after its
// "set -euo pipefail"): an override that makes it misbehave, hang or talk.
func AppScriptWith(t testing.TB, lines string) string {
	return strings.Replace(ExampleFile(t, AppScript), "set -euo pipefail\n", "set -euo pipefail\n"+lines, 1)
}

// Machine is a machine execution's answers with the lab's attachments: address addr, the
// member's key, the sandbox's node pve1 and pool dev, changed by extra.
func (l *Lab) Machine(addr int, extra map[string]any) map[string]any {
	m := map[string]any{"address_id": l.Addrs[addr], "ssh_key_id": l.Key, "proxmox_server_id": l.Server, "node": "pve1", "pool": "dev"}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// Draft creates a draft of the sandbox-vm template with one db and n app executions, spread
// over the nodes.
func (l *Lab) Draft(name string, apps int) string {
	t := l.T
	var app []map[string]any
	for i := 0; i < apps; i++ {
		app = append(app, l.Machine(1+i, map[string]any{"node": []string{"pve1", "pve2", "pve3"}[i%3]}))
	}
	r := l.API.Do("POST", "/v1/stacks", apitest.Req{Token: l.Member, Body: map[string]any{"team_id": l.Team, "name": name,
		"environment_id": l.Env, "template_id": l.Tmpl, "template_version": 1, "labels": []string{"lab"},
		"jobs": map[string]any{"db": map[string]any{"executions": []any{l.Machine(0, nil)}}, "app": map[string]any{"executions": app}}}})
	if r.Status != 201 {
		t.Fatalf("draft: %d %s", r.Status, r.Body)
	}
	return r.Map()["id"].(string)
}
