package worker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"horizon/deploy/sandbox/pve"
	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/proxmox"
	"horizon/shared/secrets"
	"horizon/workers/worker"
	"horizon/workers/worker/workertest"
)

// engine is Horizon running for one test: the lab (labtest: the API, the Proxmox sandbox
// registered in an environment, a team with a member, the sandbox-vm example template) and the
// workers in process.
type engine struct {
	*labtest.Lab
	t      testing.TB
	worker *worker.Worker
	// workRoot holds the workers' Terraform work dirs.
	workRoot string
	// probe writes through the API during a failover test.
	probe *writeProbe
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
	// api tunes the API (e.g. the failover tests' Postgres pair or Redis Sentinels).
	api *apitest.Options
}

func newEngine(t testing.TB, o engineOpts) *engine {
	t.Helper()
	e := &engine{t: t, Lab: labtest.New(t, labtest.Options{API: o.api, Sandbox: o.sandbox, VMSSHPort: o.vmSSHPort, Override: o.override})}
	if !o.noWorker {
		e.startWorker(o)
	}
	return e
}

func (e *engine) startWorker(o engineOpts) {
	if e.workRoot == "" {
		e.workRoot = e.t.TempDir()
	}
	d := e.API.Deps
	e.worker = workertest.Start(e.t, workertest.Deps{DB: d.DB, Redis: d.Redis, Box: d.Box, Namespace: d.Namespace},
		workertest.Options{TerraformBin: o.terraformBin, Concurrency: o.concurrency, Heartbeat: o.heartbeat, VMSSHPort: o.vmSSHPort,
			WorkRoot: e.workRoot})
}

// waitState waits until the stack reaches state and returns its detail. When it does not,
// the test fails showing the stack's pipeline and deploy log.
func (e *engine) waitState(stack, state string, within time.Duration) map[string]any {
	e.t.Helper()
	return e.waitStateAs(e.Member, stack, state, within)
}

// waitStateAs is waitState for a stack the member with token may read.
func (e *engine) waitStateAs(token, stack, state string, within time.Duration) map[string]any {
	e.t.Helper()
	var last map[string]any
	deadline := time.Now().Add(within)
	for {
		last = e.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: token}).Map()
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
	c := e.Sandbox.Cluster("demo")
	pc, err := proxmox.New(proxmox.Config{URL: c.URL(), TokenID: c.TokenID(), TokenSecret: secrets.Value(c.TokenSecret()), Fingerprint: c.CertFingerprint()})
	if err != nil {
		e.t.Fatal(err)
	}
	return pc
}

// logText is the stack's deploy log as stored in Postgres.
func (e *engine) logText(stack string) string {
	rows, err := e.API.DB.Query(context.Background(), `SELECT job, fd, text FROM log_lines WHERE stack_id = $1 ORDER BY run_id, stream_ms, stream_seq`, stack)
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

// pipeline returns the stack's latest pipeline as card states by "job[n]".
func (e *engine) pipeline(stack string) map[string]map[string]any { return e.runPipeline(stack, "") }

// runPipeline is the pipeline of one run of the stack by its cards' "job[execution]"; run ""
// is the one the stack's pipeline shows: its latest run that changes the stack, never an
// action's.
func (e *engine) runPipeline(stack, run string) map[string]map[string]any {
	cards := map[string]map[string]any{}
	path := "/v1/stacks/" + stack + "/pipeline"
	if run != "" {
		path += "?run=" + run
	}
	p := e.API.Do("GET", path, apitest.Req{Token: e.Member}).Map()
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
