package prometheus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/testkit"
	"horizon/workers/worker/workertest"
)

// Debian's packages (`go tool task deps` installs them).
const (
	prometheusBin   = "/usr/bin/prometheus"
	nodeExporterBin = "/usr/bin/prometheus-node-exporter"
)

// scrapeConfig is the scrape configuration deploy/README.md gives operators, pointed at api
// with the token in tokenFile and refreshed every second.
func scrapeConfig(t *testing.T, api, tokenFile string) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "deploy", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(scrape_configs:.*?http_sd_configs.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("deploy/README.md has no yaml block with the scrape configuration")
	}
	cfg := string(m[1])
	for old, repl := range map[string]string{"https://horizon.example.org": api, "/etc/prometheus/horizon.token": tokenFile,
		"refresh_interval: 30s": "refresh_interval: 1s"} {
		if !strings.Contains(cfg, old) {
			t.Fatalf("the README's scrape configuration has no %q:\n%s", old, cfg)
		}
		cfg = strings.ReplaceAll(cfg, old, repl)
	}
	return "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n" + cfg
}

// freePort returns a loopback port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// run starts a program for the rest of the test, its output in the test's log on failure.
func run(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s (`go tool task deps` installs it): %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(out.Name())
			t.Logf("%s's output:\n%s", filepath.Base(name), tail(string(b), 40))
		}
	})
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

// waitState waits for the stack's run to leave it in state; it fails at once when the run
// leaves it failed, with the stack's log.
func waitState(t *testing.T, lab *labtest.Lab, stack, state string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		got := lab.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: lab.Member}).Map()["state"]
		if got == state {
			return
		}
		if got == "failed" || time.Now().After(deadline) {
			var log []string
			rows, _ := lab.API.DB.Query(context.Background(), `SELECT job || ' ' || text FROM log_lines WHERE stack_id = $1 ORDER BY run_id, stream_ms, stream_seq`, stack)
			for rows != nil && rows.Next() {
				var l string
				_ = rows.Scan(&l)
				log = append(log, l)
			}
			t.Fatalf("the stack is %v, not %s; its log:\n%s", got, state, tail(strings.Join(log, "\n"), 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// target is one of Prometheus's active targets (GET /api/v1/targets).
type target struct {
	Labels    map[string]string `json:"labels"`
	ScrapeURL string            `json:"scrapeUrl"`
	Health    string            `json:"health"`
	LastError string            `json:"lastError"`
}

// activeTargets asks Prometheus for its active targets, by scrape URL.
func activeTargets(t *testing.T, prom string) (map[string]target, error) {
	r, err := http.Get(prom + "/api/v1/targets?state=active")
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	var body struct {
		Data struct {
			ActiveTargets []target `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		return nil, err
	}
	out := map[string]target{}
	for _, tg := range body.Data.ActiveTargets {
		out[tg.ScrapeURL] = tg
	}
	return out, nil
}

// TestPrometheusFindsTheDeployedMachines runs Debian's prometheus with the scrape configuration
// of deploy/README.md and a prometheus token of the lab team's viewer, against a real deploy
// (the workers, Terraform and the Proxmox sandbox): the two machines that chose Node Exporter
// become targets with Horizon's labels, relabelled, and the one where Debian's
// prometheus-node-exporter really listens, on the machine's own loopback address, is up; the
// machine without Node Exporter is not a target, nor is another team's; an execution removed
// by an edit leaves the targets, and once the stack is removed there are none.
func TestPrometheusFindsTheDeployedMachines(t *testing.T) {
	t.Parallel()
	lab := labtest.New(t, labtest.Options{})
	d := lab.API.Deps
	workertest.Start(t, workertest.Deps{DB: d.DB, Redis: d.Redis, Box: d.Box, Namespace: d.Namespace}, workertest.Options{})

	// Another team's machine, which the viewer's token must not see.
	f := newFixture(t, lab.API)
	other := f.machine(f.stack(lab.API.NewTeam("other"), "theirs", "deployed"), "app", 0, machineOpts{nodeExporter: true, built: true})

	ip := func(addr string) string {
		var s string
		if err := d.DB.QueryRow(context.Background(), `SELECT host(ip) FROM addresses WHERE id = $1`, addr).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	db0, app0, app1 := ip(lab.Addrs[0]), ip(lab.Addrs[1]), ip(lab.Addrs[2])
	// What cloud-init installs on a machine that chose Node Exporter, on app[0]'s address.
	run(t, nodeExporterBin, "--web.listen-address="+net.JoinHostPort(app0, "9100"),
		"--collector.disable-defaults", "--collector.loadavg", "--collector.time")

	r := lab.API.Do("POST", "/v1/stacks", apitest.Req{Token: lab.Member, Body: map[string]any{"team_id": lab.Team, "name": "shop",
		"environment_id": lab.Env, "template_id": lab.Tmpl, "template_version": 1, "labels": []string{"lab", "web"},
		"jobs": map[string]any{"db": map[string]any{"executions": []any{lab.Machine(0, nil)}},
			"app": map[string]any{"executions": []any{lab.Machine(1, map[string]any{"node_exporter": true}),
				lab.Machine(2, map[string]any{"node": "pve2", "node_exporter": true})}}}}})
	if r.Status != 201 {
		t.Fatalf("draft: %d %s", r.Status, r.Body)
	}
	stack := r.Map()["id"].(string)

	tok := lab.API.Do("POST", "/v1/tokens", apitest.Req{Token: lab.Viewer, Body: map[string]any{"name": "prometheus", "scope": "prometheus"}})
	if tok.Status != 201 {
		t.Fatalf("mint the prometheus token: %d %s", tok.Status, tok.Body)
	}
	dir := t.TempDir()
	tokenFile, configFile := filepath.Join(dir, "horizon.token"), filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(tokenFile, []byte(tok.Map()["token"].(string)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(configFile, []byte(scrapeConfig(t, lab.API.URL, tokenFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	prom := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	run(t, prometheusBin, "--config.file="+configFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+prom)
	prom = "http://" + prom

	testkit.Eventually(t, 30*time.Second, "prometheus does not answer", func() bool {
		_, err := activeTargets(t, prom)
		return err == nil
	})
	if got, _ := activeTargets(t, prom); len(got) != 0 {
		t.Fatalf("targets before the deploy: %v", got)
	}

	if r := lab.API.Do("POST", "/v1/stacks/"+stack+"/deploy", apitest.Req{Token: lab.Member}); r.Status != 202 {
		t.Fatalf("deploy: %d %s", r.Status, r.Body)
	}
	waitState(t, lab, stack, "deployed")

	url := func(ip string) string { return "http://" + net.JoinHostPort(ip, "9100") + "/metrics" }
	var got map[string]target
	testkit.Eventually(t, 30*time.Second, "prometheus does not scrape app[0]'s Node Exporter", func() bool {
		got, _ = activeTargets(t, prom)
		return got[url(app0)].Health == "up"
	})
	if len(got) != 2 || got[url(app1)].Labels == nil {
		t.Fatalf("targets %v, want app[0] and app[1] (not db[0] at %s, nor the other team's %s)", got, db0, other)
	}
	if h := got[url(app1)].Health; h == "up" {
		t.Fatalf("app[1], where no Node Exporter listens, is %s", h)
	}
	for ip, want := range map[string]map[string]string{
		app0: {"stack": "shop", "stack_id": stack, "team": "ops", "environment": "lab", "horizon_job": "app", "execution": "0",
			"node": "pve1", "proxmox_server": "sandbox", "stack_labels": ",lab,web,", "instance": "shop-app-0", "job": "horizon-node"},
		app1: {"horizon_job": "app", "execution": "1", "node": "pve2", "instance": "shop-app-1"},
	} {
		labels := got[url(ip)].Labels
		for k, v := range want {
			if labels[k] != v {
				t.Errorf("target %s: label %s = %q, want %q (labels %v)", ip, k, labels[k], v, labels)
			}
		}
		for k := range labels {
			if strings.HasPrefix(k, "__") {
				t.Errorf("target %s keeps %s after relabelling", ip, k)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// Removing app[1] (a re-apply that destroys it) takes it off the targets; app[0] stays.
	cur := lab.API.Do("GET", "/v1/stacks/"+stack, apitest.Req{Token: lab.Member})
	jobs := map[string]any{}
	for job, j := range cur.Map()["jobs"].(map[string]any) {
		var keep []any
		for _, x := range j.(map[string]any)["executions"].([]any) {
			ex := x.(map[string]any)
			if job == "app" && ex["index"] == 1.0 {
				continue
			}
			req := map[string]any{}
			for _, k := range []string{"id", "parameters", "address_id", "ssh_key_id", "proxmox_server_id", "node", "pool", "node_exporter"} {
				req[k] = ex[k]
			}
			keep = append(keep, req)
		}
		jobs[job] = map[string]any{"executions": keep}
	}
	if r := lab.API.Do("PATCH", "/v1/stacks/"+stack, apitest.Req{Token: lab.Member, Headers: map[string]string{"If-Match": cur.Header.Get("ETag")},
		Body: map[string]any{"jobs": jobs, "confirm": true}}); r.Status != 202 {
		t.Fatalf("remove app[1]: %d %s", r.Status, r.Body)
	}
	waitState(t, lab, stack, "deployed")
	testkit.Eventually(t, 30*time.Second, "app[1] is still a target once removed", func() bool {
		got, _ = activeTargets(t, prom)
		return len(got) == 1 && got[url(app0)].Health == "up"
	})

	if r := lab.API.Do("DELETE", "/v1/stacks/"+stack, apitest.Req{Token: lab.Member}); r.Status != 202 {
		t.Fatalf("remove: %d %s", r.Status, r.Body)
	}
	waitState(t, lab, stack, "removed")
	testkit.Eventually(t, 30*time.Second, "prometheus still has targets after the removal", func() bool {
		got, err := activeTargets(t, prom)
		return err == nil && len(got) == 0
	})
}
