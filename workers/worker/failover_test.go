package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"horizon/functions/apitest"
	"horizon/shared/testkit"
)

// The failover tests run Horizon (the API and the workers, in process) on real Redis Sentinels
// or a real Postgres primary/standby pair, fail the store over in the middle of an apply, and
// check what a user relies on: the run ends deployed, each VM was created once, and the API
// answered 503 problem+json with Retry-After meanwhile, never a 500 nor a hang. They log the
// failover's timeline (the API's error window, its first write after the switch, and how long
// the run took from the switch to deployed); deploy/README.md quotes them.

// TestRedisSentinelFailoverMidApply: the Redis master is SIGKILLed while the stack's first
// machine is being applied; the sentinels promote the replica; the step is not cancelled (the
// outage is shorter than Asynq's lease) and the run ends deployed. The old master then comes
// back, as a replica, and Horizon keeps working.
func TestRedisSentinelFailoverMidApply(t *testing.T) {
	t.Parallel()
	set := testkit.RedisSentinel(t)
	e := newEngine(t, engineOpts{api: &apitest.Options{RedisURL: set.URL()}})
	var oldMaster int
	stack, killedAt := e.deployUntilApplying(t, "ha-redis", func() { oldMaster = set.KillMaster() })
	deployedAt := e.waitDeployedReconciling(t, stack)
	p := e.probe.stop()
	tl := p.timeline(t, killedAt)
	t.Logf("failover timeline (redis sentinel, down-after %s): %s; switch to deployed %s",
		testkit.SentinelDownAfter, tl, deployedAt.Sub(killedAt).Round(100*time.Millisecond))
	e.checkEachVMOnce(t, 3)
	for card, c := range e.pipeline(stack) {
		if c["state"] != "succeeded" || c["attempt"].(float64) != 1 {
			t.Errorf("%s is %v at attempt %v, want succeeded at the first attempt (no step cancelled by the failover)", card, c["state"], c["attempt"])
		}
	}
	p.checkAcknowledged(t, e)

	// The old master comes back with its data: the sentinels make it a replica of the new one,
	// and Horizon goes on writing to the new master.
	set.Restart(oldMaster)
	testkit.Eventually(t, 60*time.Second, "the old master did not become a replica", func() bool {
		return set.Role(oldMaster) == "slave"
	})
	if r := e.API.Do("POST", "/v1/teams", apitest.Req{Body: map[string]any{"name": "after-the-old-master-returned"}}); r.Status != 201 {
		t.Fatalf("a write once the old master is back: %d %s", r.Status, r.Body)
	}
}

// TestPostgresFailoverMidApply: the Postgres primary stops (immediate, as a crash) while the
// stack's first machine is being applied and the synchronous standby is promoted; the API and
// the workers reconnect through the multi-host URL and the run ends deployed, each VM created
// once, and every write the API acknowledged with a 2xx is on the new primary.
func TestPostgresFailoverMidApply(t *testing.T) {
	t.Parallel()
	pair := testkit.StartPostgresPair(t, "horizon")
	e := newEngine(t, engineOpts{api: &apitest.Options{DatabaseURL: pair.URL("horizon")}})
	stack, switchedAt := e.deployUntilApplying(t, "ha-pg", pair.StopPrimary)
	deployedAt := e.waitDeployedReconciling(t, stack)
	p := e.probe.stop()
	tl := p.timeline(t, switchedAt)
	t.Logf("failover timeline (postgres, primary stopped, standby promoted): %s; switch to deployed %s",
		tl, deployedAt.Sub(switchedAt).Round(100*time.Millisecond))
	e.checkEachVMOnce(t, 3)
	p.checkAcknowledged(t, e)
}

// TestPostgresPrimaryTurnedReadOnly: the old primary stays up but turns read only (a
// switchover's first move) and the standby is promoted: the pooled connections to the old
// primary fail their writes with SQLSTATE 25006, the pool is reset, new connections go to the
// new primary, and the run ends deployed.
func TestPostgresPrimaryTurnedReadOnly(t *testing.T) {
	t.Parallel()
	pair := testkit.StartPostgresPair(t, "horizon")
	e := newEngine(t, engineOpts{api: &apitest.Options{DatabaseURL: pair.URL("horizon")}})
	stack, switchedAt := e.deployUntilApplying(t, "ha-ro", pair.DemotePrimaryInPlace)
	deployedAt := e.waitDeployedReconciling(t, stack)
	p := e.probe.stop()
	tl := p.timeline(t, switchedAt)
	t.Logf("failover timeline (postgres, primary read only in place, standby promoted): %s; switch to deployed %s",
		tl, deployedAt.Sub(switchedAt).Round(100*time.Millisecond))
	e.checkEachVMOnce(t, 3)
	p.checkAcknowledged(t, e)
}

// deployUntilApplying deploys a stack of three machines, holds its first machine's apply in
// the sandbox, starts the API write probe, runs fail (the failover), releases the apply, and
// returns the stack and the failover's time.
func (e *engine) deployUntilApplying(t *testing.T, name string, fail func()) (string, time.Time) {
	t.Helper()
	e.Sandbox.HangTasks("qmcreate")
	stack := e.Draft(name, 2)
	if r := e.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: e.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	testkit.Eventually(t, 2*time.Minute, "the first apply did not get going", func() bool {
		return e.pipeline(stack)["db[0]"]["state"] == "running" && len(e.Sandbox.Cluster("demo").VMs()) == 1
	})
	e.probe = startProbe(e.API.URL, e.API.Admin)
	time.Sleep(time.Second) // a second of writes before the failover, for the timeline
	at := time.Now()
	fail()
	e.Sandbox.ReleaseTasks("qmcreate")
	testkit.Eventually(t, 90*time.Second, "the API did not write again after the failover", func() bool {
		return e.probe.succeededSince(at.Add(3 * time.Second))
	})
	return stack, at
}

// waitDeployedReconciling waits for the stack to be deployed, running the reconcile pass every
// second meanwhile as the workers' scheduler would (tests run it by hand), and returns when.
func (e *engine) waitDeployedReconciling(t *testing.T, stack string) time.Time {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if err := e.worker.Reconcile.Pass(context.Background()); err != nil {
			t.Logf("reconcile: %v", err)
		}
		if e.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: e.Member}).Map()["state"] == "deployed" {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stack is not deployed 3 minutes after the failover\npipeline: %v\nlog:\n%s", e.pipeline(stack), e.logText(stack))
		}
		time.Sleep(time.Second)
	}
}

func (e *engine) checkEachVMOnce(t *testing.T, want int) {
	t.Helper()
	names := map[string]int{}
	for _, vm := range e.Sandbox.Cluster("demo").VMs() {
		names[vm.Name]++
	}
	if len(e.Sandbox.Cluster("demo").VMs()) != want || len(names) != want {
		t.Fatalf("the sandbox holds %v, want %d VMs, each once", names, want)
	}
}

// writeProbe writes through the API (POST /v1/teams: a Postgres write behind the
// authentication, which reads the auth cache in Redis) every 100 ms, and asks /readyz, which
// pings both stores; it records what each request got.
type writeProbe struct {
	url, token string
	client     *http.Client
	mu         sync.Mutex
	samples    []sample
	ready      []sample // the /readyz answers
	quit, done chan struct{}
}

type sample struct {
	at, end time.Time
	status  int    // 0: no answer (a transport error or the client's timeout)
	bad     string // why the answer is not acceptable during a failover; "" when it is
	id      string // the team written, on a 201
}

func startProbe(url, token string) *writeProbe {
	// The client waits longer than the API's request timeout (10 s in tests): a request that
	// outlives it is a hang.
	p := &writeProbe{url: url, token: token, client: &http.Client{Timeout: 20 * time.Second}, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for i := 0; ; i++ {
			select {
			case <-p.quit:
				return
			case <-time.After(100 * time.Millisecond):
			}
			p.write(i)
			p.readyz()
		}
	}()
	return p
}

func (p *writeProbe) write(i int) {
	body, _ := json.Marshal(map[string]string{"name": fmt.Sprintf("probe-%d", i)})
	req, _ := http.NewRequest("POST", p.url+"/v1/teams", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+p.token)
	s := sample{at: time.Now()}
	res, err := p.client.Do(req)
	s.end = time.Now()
	if err != nil {
		s.bad = "no answer: " + err.Error()
	} else {
		b, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		s.status = res.StatusCode
		switch {
		case res.StatusCode == 201:
			var team struct{ ID string }
			_ = json.Unmarshal(b, &team)
			s.id = team.ID
		case res.StatusCode != 503:
			s.bad = fmt.Sprintf("%d %s", res.StatusCode, b)
		case !strings.HasPrefix(res.Header.Get("Content-Type"), "application/problem+json") || res.Header.Get("Retry-After") == "":
			s.bad = fmt.Sprintf("503 without problem+json and Retry-After: %v %s", res.Header, b)
		}
	}
	p.mu.Lock()
	p.samples = append(p.samples, s)
	p.mu.Unlock()
}

func (p *writeProbe) readyz() {
	s := sample{at: time.Now()}
	res, err := p.client.Get(p.url + "/readyz")
	s.end = time.Now()
	if err != nil {
		s.bad = "no answer: " + err.Error()
	} else {
		b, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		s.status = res.StatusCode
		switch {
		case res.StatusCode == 200:
		case res.StatusCode != 503 || res.Header.Get("Retry-After") == "":
			s.bad = fmt.Sprintf("/readyz: %d %s", res.StatusCode, b)
		case !strings.Contains(string(b), "Postgres") && !strings.Contains(string(b), "Redis"):
			s.bad = fmt.Sprintf("/readyz does not name the store that is down: %s", b)
		default:
			s.id = string(b) // kept for the log
		}
	}
	p.mu.Lock()
	p.ready = append(p.ready, s)
	p.mu.Unlock()
}

func (p *writeProbe) succeededSince(t time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.samples {
		if s.at.After(t) && s.status == 201 {
			return true
		}
	}
	return false
}

func (p *writeProbe) stop() *writeProbe {
	close(p.quit)
	<-p.done
	return p
}

// timeline checks every answer (2xx, or 503 problem+json with Retry-After; never a 500 nor a
// hang) and describes the error windows of the writes and of /readyz around the failover at
// switch.
func (p *writeProbe) timeline(t *testing.T, switchAt time.Time) string {
	t.Helper()
	return "writes: " + window(t, p.samples, switchAt, 201) + "; /readyz: " + window(t, p.ready, switchAt, 200)
}

func window(t *testing.T, samples []sample, switchAt time.Time, ok int) string {
	t.Helper()
	var firstErr, lastErr, firstOK time.Time
	errs, n503 := 0, 0
	var longest time.Duration
	for _, s := range samples {
		if s.bad != "" {
			t.Errorf("a write at switch%+.1fs got %s", s.at.Sub(switchAt).Seconds(), s.bad)
		}
		longest = max(longest, s.end.Sub(s.at))
		if s.status == ok {
			continue
		}
		errs++
		if s.status == 503 {
			n503++
		}
		if firstErr.IsZero() {
			firstErr = s.at
		}
		lastErr = s.end
	}
	for _, s := range samples {
		if s.status == ok && s.at.After(lastErr) {
			firstOK = s.end
			break
		}
	}
	if errs == 0 {
		return fmt.Sprintf("none failed (%d requests, slowest %s)", len(samples), longest.Round(time.Millisecond))
	}
	if firstOK.IsZero() {
		t.Errorf("no request succeeded after the last failed one")
		return "no success after the failover"
	}
	return fmt.Sprintf("error window %s (switch%+.1fs to switch%+.1fs, %d of %d answered 503, slowest answer %s), "+
		"first success %.1fs after the switch",
		lastErr.Sub(firstErr).Round(100*time.Millisecond), firstErr.Sub(switchAt).Seconds(), lastErr.Sub(switchAt).Seconds(),
		n503, len(samples), longest.Round(time.Millisecond), firstOK.Sub(switchAt).Seconds())
}

// checkAcknowledged: every team the API acknowledged with a 201 is in the database now.
func (p *writeProbe) checkAcknowledged(t *testing.T, e *engine) {
	t.Helper()
	var ids []string
	for _, s := range p.samples {
		if s.id != "" {
			ids = append(ids, s.id)
		}
	}
	var n int
	if err := e.API.Deps.DB.QueryRow(context.Background(), `SELECT count(*) FROM teams WHERE id::text = ANY($1)`, ids).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(ids) {
		t.Fatalf("%d of the %d teams acknowledged with 201 are in the database", n, len(ids))
	}
}
