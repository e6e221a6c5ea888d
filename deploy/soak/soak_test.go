package soak

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"horizon/deploy/sandbox/pve"
	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/auth"
	"horizon/shared/testkit"
	"horizon/workers/worker/workertest"
)

// soakTeams is how many teams work at once; each drives one stack at a time through its life.
const soakTeams = 3

// TestSoak runs the soak (see the package doc) for HORIZON_SOAK_DURATION (default 2m).
func TestSoak(t *testing.T) {
	duration := 2 * time.Minute
	if v := os.Getenv("HORIZON_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("HORIZON_SOAK_DURATION: %v", err)
		}
		duration = d
	}
	s := newSoak(t)
	t.Logf("soak: %d teams for %s, workers pids %v", soakTeams, duration, s.workerPids())

	ctx, stop := context.WithTimeout(context.Background(), duration)
	defer stop()
	var wg sync.WaitGroup
	for i := range soakTeams {
		wg.Go(func() { s.teamLoop(ctx, s.teams[i]) })
	}
	wg.Go(func() { s.faults(ctx) })
	wg.Go(func() { s.isoLoop(ctx) })
	wg.Go(func() { s.sample(ctx) })
	s.streams(ctx, &wg)
	wg.Wait()

	// Every acknowledged run gets time to end: the workers' reconciler (every 5 s here) takes
	// over what a killed worker left.
	s.settle(t, 5*time.Minute)
	// Every log follower reads its run to the end; one still waiting a minute after the runs
	// ended gives up (and says so).
	stopFollowers := time.AfterFunc(time.Minute, s.stopFollow)
	s.followers.Wait()
	stopFollowers.Stop()
	s.client.CloseIdleConnections()
	time.Sleep(5 * time.Second) // closed streams and connections wind down
	s.sampleOnce()
	s.check(t)
	s.report(t, duration)
}

// soak is one run: the lab, the workers processes, the teams and what they did.
type soak struct {
	t      *testing.T
	lab    *labtest.Lab
	client *http.Client
	bin    string
	pg     *testkit.Postgres
	redis  *testkit.RedisServer
	iso    isoSource

	followers  sync.WaitGroup
	followCtx  context.Context
	stopFollow context.CancelFunc

	mu        sync.Mutex
	workers   []*workerProc
	workerLog []*lockedBuffer
	teams     []*team
	acked     []string // run ids the API acknowledged
	secrets   []string // secret values revealed to the teams
	ops       map[string]int
	problems  []string // unexpected answers (5xx, malformed)
	faultLog  map[string]int
	samples   []sample
	// redisOutages are the times the soak stopped Redis: a follower whose run spans a crash
	// may miss lines Redis lost (appendfsync everysec) without a notice.
	redisOutages []redisOutage
	logIssues    []string // log followers' findings
}

type redisOutage struct {
	at    time.Time
	crash bool
}

// workerProc is one workers process; dead once the soak killed it.
type workerProc struct {
	cmd  *exec.Cmd
	dead bool
}

type team struct {
	id, token, key string
	addrs          []string // the addresses only this team uses
	n              int
}

type lockedBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func newSoak(t *testing.T) *soak {
	// A Postgres and a Redis of the soak's own, so that it can restart them.
	pg := testkit.StartPostgres(t, "horizon_soak")
	rs := testkit.StartRedis(t)
	lab := labtest.New(t, labtest.Options{API: &apitest.Options{DatabaseURL: pg.URL("horizon_soak"), RedisURL: rs.URL()},
		Sandbox: func(c *pve.Config) { c.TaskDuration = 200 * time.Millisecond }})
	s := &soak{t: t, lab: lab, client: &http.Client{Timeout: 30 * time.Second}, bin: workertest.Build(t), ops: map[string]int{},
		faultLog: map[string]int{}, pg: pg, redis: rs}
	s.iso = newISOSource(t, s)
	s.followCtx, s.stopFollow = context.WithCancel(context.Background())
	t.Cleanup(s.stopFollow)
	if len(lab.Addrs) < 3*soakTeams {
		t.Fatalf("the lab has %d addresses, want %d", len(lab.Addrs), 3*soakTeams)
	}
	for i := range soakTeams {
		id := lab.API.NewTeam(fmt.Sprintf("soak-%d", i))
		_, token := lab.API.NewUser(auth.RoleMember, id)
		pub, _, _ := ed25519.GenerateKey(rand.Reader)
		sshPub, _ := ssh.NewPublicKey(pub)
		st, key := s.call(http.MethodPost, "/v1/ssh-keys", token, map[string]any{"name": "soak",
			"public_key": strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))}, nil)
		if st != 201 {
			t.Fatalf("ssh key: %d %v", st, key)
		}
		s.teams = append(s.teams, &team{id: id.String(), token: token, key: key["id"].(string), addrs: lab.Addrs[3*i : 3*i+3]})
	}
	for range 2 {
		s.startWorker()
	}
	return s
}

// startWorker starts one more workers process, reconciling every 5 s.
func (s *soak) startWorker() {
	buf := &lockedBuffer{b: &bytes.Buffer{}}
	api := s.lab.API
	p := workertest.Process(s.t, s.bin, workertest.ProcessConfig{DatabaseURL: api.DB.Config().ConnString(), Namespace: api.Deps.Namespace,
		SecretKey: api.SecretKey, Output: buf,
		Env: []string{"HORIZON_REDIS_URL=" + s.redis.URL(), "HORIZON_RECONCILE_INTERVAL=5s", "HORIZON_WORKERS_LISTEN=127.0.0.1:0",
			"HORIZON_LOG_LEVEL=info"}})
	s.mu.Lock()
	s.workers = append(s.workers, &workerProc{cmd: p})
	s.workerLog = append(s.workerLog, buf)
	s.mu.Unlock()
}

func (s *soak) workerPids() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for _, w := range s.workers {
		if !w.dead {
			out = append(out, w.cmd.Process.Pid)
		}
	}
	return out
}

// call sends one request to the API and decodes a JSON answer. It never fails the test (it runs
// in the workload's goroutines): a transport error is status 0, and a 5xx is recorded as a
// problem.
func (s *soak) call(method, path, token string, body any, headers map[string]string) (int, map[string]any) {
	st, m, _ := s.callH(method, path, token, body, headers)
	return st, m
}

func (s *soak) callH(method, path, token string, body any, headers map[string]string) (int, map[string]any, http.Header) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.lab.API.URL+path, r)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := s.client.Do(req)
	if err != nil {
		return 0, nil, nil
	}
	defer res.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	if res.StatusCode >= 500 {
		// A 503 while Postgres connections are being killed is the contract; anything else
		// is a finding.
		if res.StatusCode != 503 {
			s.problem("%s %s answered %d: %v", method, path, res.StatusCode, m)
		}
	}
	return res.StatusCode, m, res.Header
}

func (s *soak) problem(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

// refused counts a refusal by operation, status and what the problem names.
func (s *soak) refused(op string, status int, problem map[string]any) {
	why, _ := problem["title"].(string)
	if errs, ok := problem["errors"].([]any); ok && len(errs) > 0 {
		if e, ok := errs[0].(map[string]any); ok {
			why += fmt.Sprintf(" (%v: %v)", e["field"], e["message"])
		}
	}
	s.count(fmt.Sprintf("%s refused %d %s", op, status, why))
}

func (s *soak) count(op string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops[op]++
}

// started records an acknowledged run: the answer is the run, or an ISO with its run in
// current_run. It returns the run's id ("" when the answer is not a 202).
func (s *soak) started(op string, status int, answer map[string]any) string {
	if status != 202 {
		return ""
	}
	id, _ := answer["id"].(string)
	if run, ok := answer["current_run"].(map[string]any); ok {
		id, _ = run["id"].(string)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops[op]++
	s.acked = append(s.acked, id)
	return id
}

// retried sends a request that starts work like a bot does: with an Idempotency-Key, and again
// with the same key after a transport error or a 503; the run of every 202 is acknowledged.
func (s *soak) retried(op, method, path, token string, body any) (int, map[string]any) {
	key := strconv.FormatUint(mrand.Uint64(), 36)
	var st int
	var m map[string]any
	for range 5 {
		st, m = s.call(method, path, token, body, map[string]string{"Idempotency-Key": key})
		if st != 0 && st != 503 {
			break
		}
		time.Sleep(time.Second)
	}
	if run := s.started(op, st, m); run != "" {
		s.follow(path, token, run, m)
	} else {
		s.refused(op, st, m)
	}
	return st, m
}

// stackState returns the stack's state and detail ("" when it cannot be read now).
func (s *soak) stackState(tm *team, id string) (string, map[string]any, string) {
	st, m, h := s.callH(http.MethodGet, "/v1/stacks/"+id, tm.token, nil, nil)
	if st != 200 {
		return "", nil, ""
	}
	state, _ := m["state"].(string)
	return state, m, h.Get("ETag")
}

// waitIdle waits until the stack is in a state no run is working on, up to within.
func (s *soak) waitIdle(tm *team, id string, within time.Duration) string {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		state, _, _ := s.stackState(tm, id)
		switch state {
		case "draft", "deployed", "failed", "removed":
			return state
		}
		time.Sleep(time.Second)
	}
	return "busy"
}

func (s *soak) draftBody(tm *team, name string) map[string]any {
	machine := func(addr int) map[string]any {
		return map[string]any{"address_id": tm.addrs[addr], "ssh_key_id": tm.key, "proxmox_server_id": s.lab.Server,
			"node": []string{"pve1", "pve2", "pve3"}[mrand.IntN(3)], "pool": "dev"}
	}
	return map[string]any{"team_id": tm.id, "name": name, "environment_id": s.lab.Env, "template_id": s.lab.Tmpl, "template_version": 1,
		"labels": []string{"soak"}, "jobs": map[string]any{"db": map[string]any{"executions": []any{machine(0)}},
			"app": map[string]any{"executions": []any{machine(1)}}}}
}

// teamLoop drives one stack after another through its life until ctx ends: create, deploy
// (sometimes cancelled, then retried), a day-2 operation, remove.
func (s *soak) teamLoop(ctx context.Context, tm *team) {
	for ctx.Err() == nil {
		tm.n++
		// Named by the team's first address, not its id: ids are time-ordered UUIDs whose
		// first characters the teams share, and VM names are unique in a cluster.
		st, d := s.call(http.MethodPost, "/v1/stacks", tm.token, s.draftBody(tm, fmt.Sprintf("soak-%s-%d", tm.addrs[0][len(tm.addrs[0])-6:], tm.n)), nil)
		if st != 201 {
			time.Sleep(2 * time.Second)
			continue
		}
		s.count("create")
		id := d["id"].(string)
		if st, _ := s.retried("deploy", http.MethodPost, "/v1/stacks/"+id+"/deploy", tm.token, nil); st != 202 {
			// Refused (a node offline at preflight, say): the draft goes, and the team tries
			// again with a new one.
			s.call(http.MethodDelete, "/v1/stacks/"+id, tm.token, nil, nil)
			time.Sleep(3 * time.Second)
			continue
		}
		if mrand.IntN(4) == 0 {
			time.Sleep(time.Duration(500+mrand.IntN(3000)) * time.Millisecond)
			if st, _ := s.call(http.MethodPost, "/v1/stacks/"+id+"/cancel", tm.token, nil, nil); st == 202 {
				s.count("cancel")
			}
		}
		state := s.waitIdle(tm, id, 5*time.Minute)
		if state == "failed" && ctx.Err() == nil {
			s.retried("retry", http.MethodPost, "/v1/stacks/"+id+"/retry", tm.token, map[string]any{"mode": "failed"})
			state = s.waitIdle(tm, id, 5*time.Minute)
		}
		if state == "deployed" {
			s.reveal(tm, id)
			if ctx.Err() == nil {
				s.dayTwo(tm, id)
				s.waitIdle(tm, id, 5*time.Minute)
				s.reveal(tm, id)
			}
		}
		s.removeStack(ctx, tm, id)
	}
}

// removeStack removes the stack before the team's next one: the team's addresses come free only
// then (a team that moved on with its stack left would have every later deploy refused). A
// removal that a fault refused or failed is tried again, as an operator would, after a pause
// that outlasts a fault (a node is offline for up to 15 s); once ctx is done, a few times only.
func (s *soak) removeStack(ctx context.Context, tm *team, id string) {
	removing := false // whether the stack's last run is a removal
	for try := 0; try < 30; try++ {
		if try > 0 {
			if ctx.Err() != nil && try > 3 {
				break
			}
			time.Sleep(time.Duration(min(try, 6)) * 5 * time.Second)
		}
		switch s.waitIdle(tm, id, 5*time.Minute) {
		case "removed":
			return
		case "busy":
			continue // a run still works on it: wait again
		case "failed":
			if removing {
				if st, _ := s.retried("retry-remove", http.MethodPost, "/v1/stacks/"+id+"/retry", tm.token, nil); st == 202 {
					continue
				}
			}
		}
		if st, _ := s.retried("remove", http.MethodDelete, "/v1/stacks/"+id, tm.token, nil); st == 202 {
			removing = true
		}
	}
	s.count("removal given up") // the final check judges what is left
}

// dayTwo runs one operation on a deployed stack, picked at random.
func (s *soak) dayTwo(tm *team, id string) {
	_, detail, etag := s.stackState(tm, id)
	if detail == nil {
		return
	}
	switch mrand.IntN(5) {
	case 0: // an edit that re-applies the app
		body := editBody(detail, func(job string, ex map[string]any) {
			if job == "app" {
				ex["parameters"].(map[string]any)["memory_mb"] = []int{512, 1024, 2048}[mrand.IntN(3)]
			}
		})
		body["confirm"] = true
		st, m := s.call(http.MethodPatch, "/v1/stacks/"+id, tm.token, body, map[string]string{"If-Match": etag})
		if run := s.started("edit", st, m); run != "" {
			s.follow("/v1/stacks/"+id, tm.token, run, m)
		}
	case 1: // add a machine, or remove it again
		body := editBody(detail, nil)
		apps := body["jobs"].(map[string]any)["app"].(map[string]any)
		exs := apps["executions"].([]any)
		if len(exs) == 1 {
			exs = append(exs, map[string]any{"address_id": tm.addrs[2], "ssh_key_id": tm.key, "proxmox_server_id": s.lab.Server,
				"node": "pve2", "pool": "dev"})
		} else {
			exs = exs[:1]
		}
		apps["executions"] = exs
		body["confirm"] = true
		st, m := s.call(http.MethodPatch, "/v1/stacks/"+id, tm.token, body, map[string]string{"If-Match": etag})
		if run := s.started("add/remove machine", st, m); run != "" {
			s.follow("/v1/stacks/"+id, tm.token, run, m)
		}
	case 2:
		s.retried("run-again", http.MethodPost, "/v1/stacks/"+id+"/jobs/app/executions/0/run-again", tm.token, nil)
	case 3:
		s.retried("script action", http.MethodPost, "/v1/stacks/"+id+"/actions/rotate-api-key", tm.token,
			map[string]any{"parameters": map[string]any{"key_bytes": 16}, "execution": 0})
	case 4: // a terraform action, then its undo
		st, _ := s.retried("terraform action", http.MethodPost, "/v1/stacks/"+id+"/actions/create-pool", tm.token,
			map[string]any{"parameters": map[string]any{"pool": "soak-" + id[:8], "comment": "soak"}})
		if st != 202 || s.waitIdle(tm, id, 5*time.Minute) != "deployed" {
			return
		}
		_, ins := s.call(http.MethodGet, "/v1/stacks/"+id+"/action-instances", tm.token, nil, nil)
		items, _ := ins["items"].([]any)
		if len(items) > 0 {
			iid, _ := items[0].(map[string]any)["id"].(string)
			s.retried("undo", http.MethodDelete, "/v1/stacks/"+id+"/action-instances/"+iid, tm.token, nil)
		}
	}
}

// editBody is a PATCH body keeping every execution of the stack as it is, after change.
func editBody(stack map[string]any, change func(job string, ex map[string]any)) map[string]any {
	jobs := map[string]any{}
	for job, j := range stack["jobs"].(map[string]any) {
		var exs []any
		for _, x := range j.(map[string]any)["executions"].([]any) {
			x := x.(map[string]any)
			req := map[string]any{}
			for _, k := range []string{"id", "address_id", "ssh_key_id", "proxmox_server_id", "node", "pool", "iso_id",
				"nagios", "node_exporter", "startup_order"} {
				req[k] = x[k]
			}
			params := map[string]any{}
			if p, ok := x["parameters"].(map[string]any); ok {
				for k, v := range p {
					params[k] = v
				}
			}
			req["parameters"] = params
			if change != nil {
				change(job, req)
			}
			exs = append(exs, req)
		}
		jobs[job] = map[string]any{"executions": exs}
	}
	return map[string]any{"jobs": jobs}
}

// reveal reads the stack's secret outputs as its team may, to look for them everywhere later.
func (s *soak) reveal(tm *team, id string) {
	_, outs := s.call(http.MethodGet, "/v1/stacks/"+id+"/outputs", tm.token, nil, nil)
	jobs, _ := outs["jobs"].(map[string]any)
	for job, list := range jobs {
		execs, _ := list.([]any)
		for n, e := range execs {
			o, _ := e.(map[string]any)["outputs"].(map[string]any)
			for name := range o {
				st, v := s.call(http.MethodPost, fmt.Sprintf("/v1/stacks/%s/outputs/%s/%d/%s/reveal", id, job, n, name), tm.token, nil, nil)
				if value, ok := v["value"].(string); st == 200 && ok && len(value) >= 8 {
					// Only a secret output can be revealed.
					s.mu.Lock()
					s.secrets = append(s.secrets, value)
					s.mu.Unlock()
				}
			}
		}
	}
}

// faults injects one random fault every 10–25 s until ctx ends.
func (s *soak) faults(ctx context.Context) {
	cluster := s.lab.Sandbox.Cluster("demo")
	var bag []int // the kinds in a random order, each once per round: even over an hour, and most of them in a short run
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(10+mrand.IntN(15)) * time.Second):
		}
		if len(bag) == 0 {
			bag = mrand.Perm(8)
		}
		kind := bag[0]
		bag = bag[1:]
		switch kind {
		case 0, 5: // the workers' crash, twice as often as the others
			s.mu.Lock()
			var alive []*workerProc
			for _, w := range s.workers {
				if !w.dead {
					alive = append(alive, w)
				}
			}
			var victim *workerProc
			if len(alive) > 0 {
				victim = alive[mrand.IntN(len(alive))]
				victim.dead = true
			}
			s.mu.Unlock()
			if victim == nil {
				continue
			}
			_ = victim.cmd.Process.Signal(syscall.SIGKILL)
			_ = victim.cmd.Wait()
			s.fault("worker SIGKILL")
			time.Sleep(2 * time.Second)
			s.startWorker()
		case 1:
			// An operator's restart: sessions terminated, a shutdown checkpoint, down for the
			// seconds that takes.
			if err := s.pg.Restart("fast"); err != nil {
				s.problem("postgres restart: %v", err)
			} else {
				s.fault("postgres restart (fast)")
			}
		case 2:
			// A crash: no checkpoint, recovery from the WAL at start.
			if err := s.pg.Restart("immediate"); err != nil {
				s.problem("postgres crash: %v", err)
			} else {
				s.fault("postgres crash (immediate)")
			}
		case 3:
			// A crash: what the append-only file had not synced (up to a second) is lost, and
			// Redis is down for 1–5 s.
			s.mu.Lock()
			s.redisOutages = append(s.redisOutages, redisOutage{at: time.Now(), crash: true})
			s.mu.Unlock()
			_ = s.redis.Kill()
			time.Sleep(time.Duration(1+mrand.IntN(5)) * time.Second)
			if err := s.redis.Start(); err != nil {
				s.problem("redis start after a crash: %v", err)
			} else {
				s.fault("redis SIGKILL")
			}
		case 4:
			// An operator's restart: the append-only file is synced, nothing is lost.
			s.mu.Lock()
			s.redisOutages = append(s.redisOutages, redisOutage{at: time.Now()})
			s.mu.Unlock()
			_ = s.redis.Shutdown()
			time.Sleep(time.Duration(1+mrand.IntN(3)) * time.Second)
			if err := s.redis.Start(); err != nil {
				s.problem("redis start after a shutdown: %v", err)
			} else {
				s.fault("redis restart")
			}
		case 6:
			node := []string{"pve1", "pve2", "pve3"}[mrand.IntN(3)]
			if cluster.SetNodeOnline(node, false) == nil {
				s.fault("node offline")
				time.Sleep(time.Duration(5+mrand.IntN(10)) * time.Second)
				_ = cluster.SetNodeOnline(node, true)
			}
		case 7:
			// A VM creation that does not finish: the apply hangs on it until released.
			s.lab.Sandbox.HangTasks("qmcreate")
			s.fault("hung VM creation")
			time.Sleep(time.Duration(5+mrand.IntN(15)) * time.Second)
			s.lab.Sandbox.ReleaseTasks("qmcreate")
		}
	}
}

func (s *soak) fault(kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faultLog[kind]++
}

// streams opens, for the soak's duration, an event stream per team that is read, and one per
// team (events and a stack log) that is never read.
func (s *soak) streams(ctx context.Context, wg *sync.WaitGroup) {
	for _, tm := range s.teams {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.lab.API.URL+"/v1/events", nil)
			req.Header.Set("Authorization", "Bearer "+tm.token)
			for ctx.Err() == nil {
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					time.Sleep(time.Second)
					continue
				}
				sc := bufio.NewScanner(res.Body)
				for sc.Scan() {
					if strings.HasPrefix(sc.Text(), "data:") {
						s.count("events read")
					}
				}
				_ = res.Body.Close()
			}
		})
		wg.Go(func() {
			conn, err := net.Dial("tcp", strings.TrimPrefix(s.lab.API.URL, "http://"))
			if err != nil {
				return
			}
			defer conn.Close()
			fmt.Fprintf(conn, "GET /v1/events HTTP/1.1\r\nHost: soak\r\nAuthorization: Bearer %s\r\n\r\n", tm.token)
			<-ctx.Done() // never reads a byte
		})
	}
}

type sample struct {
	at         time.Time
	apiRSS     float64 // KiB, of the test process (API and sandbox)
	apiFDs     float64
	goroutines float64
	workerRSS  float64 // KiB, summed over the live workers processes
	workerFDs  float64
	threads    float64
	dbBytes    float64 // the soak's database (pg_database_size)
	redisBytes float64 // the soak's Redis (used_memory)
	redisKeys  float64
}

func (s *soak) sample(ctx context.Context) {
	for n := 1; ; n++ {
		s.sampleOnce()
		if n%30 == 0 { // every 5 minutes: what a run that is stopped early has shown
			s.progress()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Second):
		}
	}
}

// progress logs the operations and faults so far and the latest sample.
func (s *soak) progress() {
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.samples[len(s.samples)-1]
	s.t.Logf("soak progress at %s: ops %v; faults %v; problems %d, log findings %d; API+sandbox RSS %.0f KiB, %.0f fds, %.0f goroutines; "+
		"workers RSS %.0f KiB, %.0f fds, %.0f threads; database %.0f KiB; Redis %.0f KiB, %.0f keys; load %s",
		time.Now().UTC().Format(time.TimeOnly), s.ops, s.faultLog, len(s.problems), len(s.logIssues), x.apiRSS, x.apiFDs, x.goroutines,
		x.workerRSS, x.workerFDs, x.threads, x.dbBytes/1024, x.redisBytes/1024, x.redisKeys, loadAvg())
}

func (s *soak) sampleOnce() {
	x := sample{at: time.Now(), goroutines: float64(runtime.NumGoroutine())}
	x.apiRSS, _ = procStatus(os.Getpid(), "VmRSS")
	x.apiFDs = openFiles(os.Getpid())
	for _, pid := range s.workerPids() {
		rss, threads := procStatus(pid, "VmRSS")
		x.workerRSS += rss
		x.threads += threads
		x.workerFDs += openFiles(pid)
	}
	// While a store restarts, the previous sample's sizes stand in.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var prev sample
	s.mu.Lock()
	if len(s.samples) > 0 {
		prev = s.samples[len(s.samples)-1]
	}
	s.mu.Unlock()
	if err := s.lab.API.DB.QueryRow(ctx, `SELECT pg_database_size(current_database())::float8`).Scan(&x.dbBytes); err != nil {
		x.dbBytes = prev.dbBytes
	}
	x.redisBytes, x.redisKeys = prev.redisBytes, prev.redisKeys
	if info, err := s.lab.API.Redis.Info(ctx, "memory").Result(); err == nil {
		x.redisBytes = infoField(info, "used_memory")
	}
	if n, err := s.lab.API.Redis.DBSize(ctx).Result(); err == nil {
		x.redisKeys = float64(n)
	}
	s.mu.Lock()
	s.samples = append(s.samples, x)
	s.mu.Unlock()
}

// procStatus returns a field (in kB) and the thread count from /proc/<pid>/status.
func procStatus(pid int, field string) (value, threads float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseFloat(f[1], 64)
		switch strings.TrimSuffix(f[0], ":") {
		case field:
			value = n
		case "Threads":
			threads = n
		}
	}
	return value, threads
}

func openFiles(pid int) float64 {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0
	}
	return float64(len(entries))
}

// unendedRuns selects the finished runs that started and whose log has no end, but for a removed
// stack's (its logs are deleted with it, workers/runs).
const unendedRuns = `FROM runs r LEFT JOIN stacks s ON s.id = r.stack_id
	WHERE (s.state <> 'removed' OR r.iso_id IS NOT NULL) AND r.started_at IS NOT NULL
	AND r.state IN ('succeeded', 'failed', 'canceled') AND NOT EXISTS (SELECT 1 FROM log_ends e WHERE e.run_id = r.id)`

// settle waits until no run is in progress and every finished run's log has ended, up to within.
func (s *soak) settle(t *testing.T, within time.Duration) {
	// A released node and a released hang: the faults end with the workload.
	for _, n := range []string{"pve1", "pve2", "pve3"} {
		_ = s.lab.Sandbox.Cluster("demo").SetNodeOnline(n, true)
	}
	s.lab.Sandbox.ReleaseTasks("qmcreate")
	if len(s.workerPids()) < 2 {
		s.startWorker()
	}
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		var busy, unended int
		if err := s.lab.API.DB.QueryRow(context.Background(), `SELECT count(*) FROM runs WHERE state IN ('queued', 'running', 'canceling')`).Scan(&busy); err != nil || busy > 0 {
			time.Sleep(2 * time.Second)
			continue
		}
		// A run whose worker died between its end and its log's end has its log ended by the
		// reconciler once the run is runs.LogEndGrace old: that is part of settling too.
		if err := s.lab.API.DB.QueryRow(context.Background(), `SELECT count(*) `+unendedRuns).Scan(&unended); err == nil && unended == 0 {
			return
		}
		time.Sleep(2 * time.Second)
	}
	t.Logf("runs still in progress after %s of settling", within)
}

// vmidHistory says, for an orphaned VM, which executions had its VM id, in which states, and
// the steps that built or destroyed them: where to look for the path that left it.
func (s *soak) vmidHistory(vmid int) string {
	ctx := context.Background()
	var b strings.Builder
	rows, err := s.lab.API.DB.Query(ctx, `SELECT x.id::text, s.name, s.state, x.job || '[' || x.index || ']', x.state, COALESCE(x.vm_name, ''),
		x.applied_hash IS NOT NULL, EXISTS (SELECT 1 FROM vm_ids v WHERE v.execution_id = x.id)
		FROM executions x JOIN stacks s ON s.id = x.stack_id WHERE x.vmid = $1 ORDER BY x.created_at`, vmid)
	if err != nil {
		return fmt.Sprintf("history: %v", err)
	}
	type ex struct{ id, line string }
	var exs []ex
	for rows.Next() {
		var id, stack, stackState, job, state, name string
		var applied, held bool
		_ = rows.Scan(&id, &stack, &stackState, &job, &state, &name, &applied, &held)
		exs = append(exs, ex{id, fmt.Sprintf("execution %s of stack %s (%s): %s %s, vm_name %q, applied %t, vm id held %t",
			job, stack, stackState, id, state, name, applied, held)})
	}
	rows.Close()
	if len(exs) == 0 {
		return "no execution ever had this VM id"
	}
	for _, e := range exs {
		b.WriteString("\n\t" + e.line)
		steps, err := s.lab.API.DB.Query(ctx, `SELECT r.kind, r.state, st.kind, st.state, st.attempt, COALESCE(st.error, ''),
			to_char(st.started_at, 'HH24:MI:SS'), to_char(st.finished_at, 'HH24:MI:SS')
			FROM steps st JOIN runs r ON r.id = st.run_id WHERE st.execution_id = $1 ORDER BY r.created_at, st.position`, e.id)
		if err != nil {
			continue
		}
		for steps.Next() {
			var runKind, runState, kind, state, stepErr string
			var attempt int
			var started, finished *string
			_ = steps.Scan(&runKind, &runState, &kind, &state, &attempt, &stepErr, &started, &finished)
			fmt.Fprintf(&b, "\n\t\t%s run (%s): %s step %s, attempt %d, %s–%s %s", runKind, runState, kind, state, attempt,
				deref(started), deref(finished), firstLine(stepErr))
		}
		steps.Close()
	}
	return b.String()
}

func deref(p *string) string {
	if p == nil {
		return "?"
	}
	return *p
}

// firstLine is the first line of a step's error.
func firstLine(err string) string {
	first, _, _ := strings.Cut(err, "\n")
	return first
}

// check verifies the invariants and fails the test on each one broken.
func (s *soak) check(t *testing.T) {
	ctx := context.Background()
	db := s.lab.API.DB
	for _, p := range s.problems {
		t.Errorf("unexpected answer: %s", p)
	}
	for _, p := range s.logIssues {
		t.Errorf("log follower: %s", p)
	}

	// Every acknowledged run ended.
	rows, err := db.Query(ctx, `SELECT id::text, kind, state FROM runs WHERE id::text = ANY($1) AND state NOT IN ('succeeded', 'failed', 'canceled')`, s.acked)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, kind, state string
		_ = rows.Scan(&id, &kind, &state)
		t.Errorf("acknowledged %s run %s is still %s", kind, id, state)
	}
	rows.Close()
	var missing int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM unnest($1::text[]) a WHERE NOT EXISTS (SELECT 1 FROM runs WHERE id::text = a)`, s.acked).Scan(&missing); err != nil || missing > 0 {
		t.Errorf("%d acknowledged runs are not in the database (%v)", missing, err)
	}
	var busyStacks []string
	rows, _ = db.Query(ctx, `SELECT name || ' ' || state FROM stacks WHERE state IN ('deploying', 'updating', 'removing')`)
	for rows.Next() {
		var v string
		_ = rows.Scan(&v)
		busyStacks = append(busyStacks, v)
	}
	rows.Close()
	if len(busyStacks) > 0 {
		t.Errorf("stacks left busy: %v", busyStacks)
	}
	var busyISOs []string
	rows, _ = db.Query(ctx, `SELECT name || ' ' || state FROM isos WHERE state IN ('building', 'removing')`)
	for rows.Next() {
		var v string
		_ = rows.Scan(&v)
		busyISOs = append(busyISOs, v)
	}
	rows.Close()
	if len(busyISOs) > 0 {
		t.Errorf("ISOs left busy: %v", busyISOs)
	}

	// One VM per execution that has one and is not removed, and no VM that no such execution
	// owns. An execution an edit is removing ('removing') keeps its VM until its destroy
	// succeeds: a failed or canceled removal leaves it, owned and known, for the next one.
	want := map[int]string{}
	rows, _ = db.Query(ctx, `SELECT x.vmid, s.name || ' ' || x.job || '[' || x.index || ']' FROM executions x JOIN stacks s ON s.id = x.stack_id
		WHERE x.vmid IS NOT NULL AND x.state <> 'removed' AND s.state <> 'removed'`)
	for rows.Next() {
		var vmid int
		var name string
		_ = rows.Scan(&vmid, &name)
		want[vmid] = name
	}
	rows.Close()
	have := map[int]bool{}
	for _, vm := range s.lab.Sandbox.Cluster("demo").VMs() {
		if vm.Template || !slices.Contains(vm.Tags, "horizon") {
			continue
		}
		have[vm.VMID] = true
		if _, ok := want[vm.VMID]; !ok {
			t.Errorf("orphaned VM %d %q (no execution that is not removed owns it); %s", vm.VMID, vm.Name, s.vmidHistory(vm.VMID))
		}
	}
	for vmid, name := range want {
		if !have[vmid] {
			// An execution whose VM creation failed keeps its allocated id without a VM;
			// only a deployed stack must have every VM.
			var deployed bool
			_ = db.QueryRow(ctx, `SELECT s.state = 'deployed' FROM executions x JOIN stacks s ON s.id = x.stack_id WHERE x.vmid = $1 AND x.state = 'active'`, vmid).Scan(&deployed)
			if deployed {
				t.Errorf("execution %s of a deployed stack has no VM %d", name, vmid)
			}
		}
	}

	// Every finished run that started has its log ended, and its live lines are all durable.
	var unended []string
	rows, _ = db.Query(ctx, `SELECT r.id::text || ' ' || r.kind || ' ' || r.state `+unendedRuns)
	for rows.Next() {
		var v string
		_ = rows.Scan(&v)
		unended = append(unended, v)
	}
	rows.Close()
	if len(unended) > 0 {
		t.Errorf("%d finished runs whose log never ended: %v", len(unended), unended)
	}
	rdb := s.lab.API.Redis
	ns := s.lab.API.Deps.Namespace
	keys, _ := rdb.Keys(ctx, ns+":log:*").Result()
	var lost int
	for _, k := range keys {
		run := strings.TrimPrefix(k, ns+":log:")
		var kept bool
		if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM runs r LEFT JOIN stacks s ON s.id = r.stack_id WHERE r.id::text = $1
			AND (s.state <> 'removed' OR r.iso_id IS NOT NULL))`, run).Scan(&kept); err != nil || !kept {
			continue
		}
		entries, err := rdb.XRange(ctx, k, "-", "+").Result()
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.Values["type"] == "eof" {
				continue
			}
			ms, seq, _ := strings.Cut(e.ID, "-")
			var n int
			_ = db.QueryRow(ctx, `SELECT count(*) FROM log_lines WHERE run_id = $1 AND stream_ms = $2 AND stream_seq = $3`, run, ms, seq).Scan(&n)
			if n == 0 {
				lost++
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d lines of the live logs are not in log_lines", lost)
	}

	// No revealed secret anywhere: text of every table, every Redis key of the namespace, the
	// workers' logs.
	if len(s.secrets) == 0 {
		t.Logf("no secret was revealed (no stack deployed far enough): the secret check had nothing to look for")
	}
	var tables []string
	rows, _ = db.Query(ctx, `SELECT relname FROM pg_stat_user_tables`)
	for rows.Next() {
		var v string
		_ = rows.Scan(&v)
		tables = append(tables, v)
	}
	rows.Close()
	for _, table := range tables {
		for _, secret := range s.secrets {
			var n int
			if err := db.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %q r WHERE strpos(r::text, $1) > 0`, table), secret).Scan(&n); err == nil && n > 0 {
				t.Errorf("a secret is in clear in %d rows of %s", n, table)
			}
		}
	}
	all, _ := rdb.Keys(ctx, ns+"*").Result()
	for _, k := range all {
		dump := redisText(ctx, s, k)
		for _, secret := range s.secrets {
			if strings.Contains(dump, secret) {
				t.Errorf("a secret is in clear in Redis key %s", k)
			}
		}
	}
	s.mu.Lock()
	for i, b := range s.workerLog {
		b.mu.Lock()
		for _, secret := range s.secrets {
			if bytes.Contains(b.b.Bytes(), []byte(secret)) {
				t.Errorf("a secret is in clear in the log of workers process %d", i)
			}
		}
		b.mu.Unlock()
	}
	s.mu.Unlock()
}

// redisText returns the values of one key as text, whatever its type.
func redisText(ctx context.Context, s *soak, key string) string {
	rdb := s.lab.API.Redis
	switch typ, _ := rdb.Type(ctx, key).Result(); typ {
	case "string":
		v, _ := rdb.Get(ctx, key).Result()
		return v
	case "stream":
		entries, _ := rdb.XRange(ctx, key, "-", "+").Result()
		return fmt.Sprint(entries)
	case "list":
		v, _ := rdb.LRange(ctx, key, 0, -1).Result()
		return strings.Join(v, "\n")
	case "hash":
		v, _ := rdb.HGetAll(ctx, key).Result()
		return fmt.Sprint(v)
	case "set":
		v, _ := rdb.SMembers(ctx, key).Result()
		return strings.Join(v, "\n")
	case "zset":
		v, _ := rdb.ZRange(ctx, key, 0, -1).Result()
		return strings.Join(v, "\n")
	}
	return ""
}

// report prints what the soak did and how things grew.
func (s *soak) report(t *testing.T, duration time.Duration) {
	ctx := context.Background()
	var b strings.Builder
	fmt.Fprintf(&b, "\n== Soak report: %d teams, %s of workload, load average %s\n", soakTeams, duration, loadAvg())
	fmt.Fprintf(&b, "operations acknowledged or done: %v\n", s.ops)
	fmt.Fprintf(&b, "faults injected: %v\n", s.faultLog)
	var states []string
	rows, _ := s.lab.API.DB.Query(ctx, `SELECT kind || '/' || state || ': ' || count(*) FROM runs GROUP BY kind, state ORDER BY 1`)
	for rows.Next() {
		var v string
		_ = rows.Scan(&v)
		states = append(states, v)
	}
	rows.Close()
	fmt.Fprintf(&b, "runs by kind/state: %s\n", strings.Join(states, ", "))
	var failures []string
	rows, _ = s.lab.API.DB.Query(ctx, `SELECT kind || ': ' || left(coalesce(error, ''), 160) || ' ×' || count(*) FROM runs
		WHERE state = 'failed' GROUP BY kind, left(coalesce(error, ''), 160) ORDER BY count(*) DESC LIMIT 8`)
	for rows.Next() {
		var v string
		_ = rows.Scan(&v)
		failures = append(failures, v)
	}
	rows.Close()
	fmt.Fprintf(&b, "failed runs' errors: %s\n", strings.Join(failures, " | "))
	fmt.Fprintf(&b, "secrets looked for: %d; problems: %d\n", len(s.secrets), len(s.problems))

	s.mu.Lock()
	samples := slices.Clone(s.samples)
	s.mu.Unlock()
	if len(samples) >= 2 {
		first, last := samples[0], samples[len(samples)-1]
		line := func(name, unit string, f func(sample) float64) {
			fmt.Fprintf(&b, "%-34s first %9.0f  last %9.0f  min %9.0f  max %9.0f  slope %+9.1f %s/h\n", name, f(first), f(last),
				minOf(samples, f), maxOf(samples, f), slope(samples, f), unit)
		}
		fmt.Fprintf(&b, "resources (%d samples, every 10 s):\n", len(samples))
		line("API+sandbox process RSS (KiB)", "KiB", func(x sample) float64 { return x.apiRSS })
		line("API+sandbox process open files", "", func(x sample) float64 { return x.apiFDs })
		line("API+sandbox process goroutines", "", func(x sample) float64 { return x.goroutines })
		line("workers processes RSS, sum (KiB)", "KiB", func(x sample) float64 { return x.workerRSS })
		line("workers processes open files, sum", "", func(x sample) float64 { return x.workerFDs })
		line("workers processes threads, sum", "", func(x sample) float64 { return x.threads })
		line("Postgres database size (KiB)", "KiB", func(x sample) float64 { return x.dbBytes / 1024 })
		line("Redis used_memory (KiB)", "KiB", func(x sample) float64 { return x.redisBytes / 1024 })
		line("Redis keys", "", func(x sample) float64 { return x.redisKeys })
		fmt.Fprintf(&b, "(workers processes are restarted by the SIGKILL fault: their sums drop and rise with them)\n")
	}

	// Live rows are counted: a crash (immediate shutdown) resets the statistics' counters, so
	// the dead rows shown are those since the last crash.
	fmt.Fprintf(&b, "Postgres tables (size, rows counted, dead rows in the statistics):\n")
	type table struct {
		name, size string
		dead       int64
	}
	var tables []table
	rows, _ = s.lab.API.DB.Query(ctx, `SELECT relname, pg_size_pretty(pg_total_relation_size(relid)), n_dead_tup
		FROM pg_stat_user_tables WHERE pg_total_relation_size(relid) > 16384 ORDER BY pg_total_relation_size(relid) DESC LIMIT 15`)
	for rows.Next() {
		var x table
		_ = rows.Scan(&x.name, &x.size, &x.dead)
		tables = append(tables, x)
	}
	rows.Close()
	for _, x := range tables {
		var live int64
		_ = s.lab.API.DB.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %q`, x.name)).Scan(&live)
		fmt.Fprintf(&b, "  %-28s %10s %8d rows %8d dead\n", x.name, x.size, live, x.dead)
	}

	rdb := s.lab.API.Redis
	keys, _ := rdb.Keys(ctx, s.lab.API.Deps.Namespace+"*").Result()
	var bytesUsed int64
	for _, k := range keys {
		n, _ := rdb.MemoryUsage(ctx, k).Result()
		bytesUsed += n
	}
	info, _ := rdb.Info(ctx, "memory").Result()
	fmt.Fprintf(&b, "Redis: %d keys in the namespace, %d KiB (MEMORY USAGE); the soak's server uses %.0f KiB in all\n", len(keys), bytesUsed>>10,
		infoField(info, "used_memory")/1024)
	fmt.Fprintf(&b, "log followers' findings: %d\n", len(s.logIssues))
	t.Log(b.String())
}

func minOf(xs []sample, f func(sample) float64) float64 {
	m := f(xs[0])
	for _, x := range xs {
		m = min(m, f(x))
	}
	return m
}

func maxOf(xs []sample, f func(sample) float64) float64 {
	m := f(xs[0])
	for _, x := range xs {
		m = max(m, f(x))
	}
	return m
}

// slope is the least-squares slope of f over time, per hour.
func slope(xs []sample, f func(sample) float64) float64 {
	var n, sx, sy, sxx, sxy float64
	t0 := xs[0].at
	for _, x := range xs {
		h := x.at.Sub(t0).Hours()
		y := f(x)
		n++
		sx += h
		sy += y
		sxx += h * h
		sxy += h * y
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// infoField is a numeric field of Redis's INFO text.
func infoField(info, field string) float64 {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return n
		}
	}
	return 0
}
