package prometheus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"horizon/functions/apitest"
	"horizon/functions/prometheus"
	"horizon/openapi"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"

	"github.com/getkin/kin-openapi/openapi3"
)

// fixture writes stacks and machines through the store, as deploys leave them: the endpoint
// reads what the workers wrote, and the end-to-end test (e2e_test.go) deploys for real.
type fixture struct {
	t       testing.TB
	s       *apitest.Server
	network uuid.UUID
	next    int
}

func newFixture(t testing.TB, s *apitest.Server) *fixture {
	n, err := store.NetworkCreate(context.Background(), s.DB, horizon.Network{Name: "lan", CIDR: netip.MustParsePrefix("10.9.0.0/16"),
		Gateway: netip.MustParseAddr("10.9.0.1"), Bridge: "vmbr0"})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, s: s, network: n.ID, next: 10}
}

// stack creates a stack of team in state with labels.
func (f *fixture) stack(team uuid.UUID, name string, state horizon.StackState, labels ...string) uuid.UUID {
	id := f.s.NewStack(team, name)
	if _, err := f.s.DB.Exec(context.Background(), `UPDATE stacks SET state = $2, labels = $3 WHERE id = $1`, id, state, append([]string{}, labels...)); err != nil {
		f.t.Fatal(err)
	}
	return id
}

type machineOpts struct {
	nodeExporter bool
	built        bool // its first apply succeeded
	state        horizon.ExecutionState
	ip           string // default: the next address of the fixture's network
	noAddress    bool
}

// machine adds execution job[index] to stack on node pve1 and returns its address.
func (f *fixture) machine(stack uuid.UUID, job string, index int, o machineOpts) string {
	ctx := context.Background()
	e, err := store.ExecutionInsert(ctx, f.s.DB, horizon.Execution{StackID: stack, Job: job, Index: index, Commit: "c0ffee",
		Config: horizon.ExecutionConfig{NodeExporter: o.nodeExporter}})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.s.DB.Exec(ctx, `UPDATE executions SET node = 'pve1', vm_name = $2, state = $3 WHERE id = $1`,
		e.ID, fmt.Sprintf("%s-%d", job, index), string(cmp(o.state, horizon.ExecutionActive))); err != nil {
		f.t.Fatal(err)
	}
	if o.built {
		if err := store.ExecutionApplied(ctx, f.s.DB, e.ID, "sha256:x", map[string]any{}, nil); err != nil {
			f.t.Fatal(err)
		}
	}
	if o.noAddress {
		return ""
	}
	ip := o.ip
	if ip == "" {
		f.next++
		ip = fmt.Sprintf("10.9.%d.%d", f.next/250, f.next%250+1)
	}
	a, err := store.AddressCreate(ctx, f.s.DB, horizon.Address{NetworkID: f.network, Name: "a-" + ip, IP: netip.MustParseAddr(ip)},
		store.Activity{Action: "address.create", ObjectType: "address"})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := store.AddressAttach(ctx, f.s.DB, a.ID, e.ID); err != nil {
		f.t.Fatal(err)
	}
	return ip
}

func cmp[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// targets reads the targets with token and returns them by address.
func targets(t *testing.T, s *apitest.Server, token, query string) map[string]prometheus.Group {
	t.Helper()
	r := s.Do("GET", "/v1/prometheus/targets"+query, apitest.Req{Token: token})
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET targets%s: %d %s %s", query, r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	if !strings.HasPrefix(strings.TrimSpace(string(r.Body)), "[") {
		t.Fatalf("GET targets%s is not a JSON array: %s", query, r.Body)
	}
	var groups []prometheus.Group
	r.JSON(&groups)
	out := map[string]prometheus.Group{}
	for _, g := range groups {
		if len(g.Targets) != 1 {
			t.Fatalf("a group of %d targets: %v", len(g.Targets), g)
		}
		for k := range g.Labels {
			if !strings.HasPrefix(k, "__meta_horizon_") {
				t.Fatalf("label %s is not a __meta_horizon_ one", k)
			}
		}
		out[g.Targets[0]] = g
	}
	return out
}

func addrs(m map[string]prometheus.Group) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func want(t *testing.T, what string, got map[string]prometheus.Group, ips ...string) {
	t.Helper()
	var w []string
	for _, ip := range ips {
		w = append(w, ip+":9100")
	}
	slices.Sort(w)
	if g := addrs(got); !slices.Equal(g, w) {
		t.Fatalf("%s: targets %v, want %v", what, g, w)
	}
}

// TestTargetsListBuiltMachinesWithNodeExporter: which machines are targets — built, Node
// Exporter chosen, active, of a stack in a state that has machines — and their labels.
func TestTargetsListBuiltMachinesWithNodeExporter(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	f := newFixture(t, s)
	red := s.NewTeam("red")
	web := f.stack(red, "web", horizon.StackDeployed, "lab", "web")
	app0 := f.machine(web, "app", 0, machineOpts{nodeExporter: true, built: true})
	f.machine(web, "app", 1, machineOpts{built: true})                                                      // no Node Exporter
	f.machine(web, "app", 2, machineOpts{nodeExporter: true})                                               // never built
	f.machine(web, "db", 0, machineOpts{nodeExporter: true, built: true, state: horizon.ExecutionRemoving}) // destroy planned
	f.machine(web, "db", 1, machineOpts{nodeExporter: true, built: true, state: horizon.ExecutionRemoved})
	f.machine(web, "cron", 0, machineOpts{nodeExporter: true, built: true, noAddress: true}) // not a machine
	f.machine(f.stack(red, "six", horizon.StackDeployed), "app", 0, machineOpts{nodeExporter: true, built: true, ip: "fd00::5"})

	listed := map[horizon.StackState]bool{horizon.StackDeploying: true, horizon.StackDeployed: true, horizon.StackUpdating: true,
		horizon.StackFailed: true, horizon.StackDraft: false, horizon.StackRemoving: false, horizon.StackRemoved: false}
	wantIPs := []string{app0, "[fd00::5]"}
	for state, in := range listed {
		ip := f.machine(f.stack(red, "in-"+string(state), state), "app", 0, machineOpts{nodeExporter: true, built: true})
		if in {
			wantIPs = append(wantIPs, ip)
		}
	}

	got := targets(t, s, "", "")
	want(t, "admin", got, wantIPs...)
	g := got[app0+":9100"]
	var env string
	if err := s.DB.QueryRow(context.Background(), `SELECT e.name FROM stacks s JOIN environments e ON e.id = s.environment_id WHERE s.id = $1`, web).Scan(&env); err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{prometheus.LabelStack: "web", prometheus.LabelStackID: web.String(), prometheus.LabelTeam: "red",
		prometheus.LabelEnvironment: env, prometheus.LabelJob: "app", prometheus.LabelExecution: "0", prometheus.LabelNode: "pve1",
		prometheus.LabelProxmoxServer: "", prometheus.LabelVMName: "app-0", prometheus.LabelLabels: ",lab,web,"}
	if fmt.Sprint(g.Labels) != fmt.Sprint(wantLabels) {
		t.Fatalf("labels of web's app[0]:\n got %v\nwant %v", g.Labels, wantLabels)
	}
	if l := got["[fd00::5]:9100"].Labels[prometheus.LabelLabels]; l != ",," {
		t.Fatalf("a stack without labels: %q, want \",,\"", l)
	}
	if len(regexp.MustCompile(`,web,`).FindAllString(g.Labels[prometheus.LabelLabels], -1)) != 1 {
		t.Fatal("a relabel regex on ,web, does not match")
	}
}

// TestTargetsScopingAndFilters: each token sees its teams' machines (an admin's all), a
// Prometheus token the same as a full token of its user, and the filters narrow that.
func TestTargetsScopingAndFilters(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	f := newFixture(t, s)
	red, blue := s.NewTeam("red"), s.NewTeam("blue")
	web := f.stack(red, "web", horizon.StackDeployed, "lab", "web")
	w0 := f.machine(web, "app", 0, machineOpts{nodeExporter: true, built: true})
	w1 := f.machine(web, "app", 1, machineOpts{nodeExporter: true, built: true})
	batch := f.stack(red, "batch", horizon.StackFailed, "lab")
	b0 := f.machine(batch, "worker", 0, machineOpts{nodeExporter: true, built: true})
	api := f.stack(blue, "api", horizon.StackUpdating, "web")
	a0 := f.machine(api, "app", 0, machineOpts{nodeExporter: true, built: true})

	_, redMember := s.NewUser(auth.RoleMember, red)
	_, blueViewer := s.NewUser(auth.RoleViewer, blue)
	_, nobody := s.NewUser(auth.RoleMember)
	want(t, "admin", targets(t, s, "", ""), w0, w1, b0, a0)
	want(t, "red member", targets(t, s, redMember, ""), w0, w1, b0)
	want(t, "blue viewer", targets(t, s, blueViewer, ""), a0)
	want(t, "a member of no team", targets(t, s, nobody, ""))

	mint := func(token string, body map[string]any) string {
		r := s.Do("POST", "/v1/tokens", apitest.Req{Token: token, Body: body})
		if r.Status != 201 || r.Map()["scope"] != "prometheus" {
			t.Fatalf("mint a prometheus token: %d %s", r.Status, r.Body)
		}
		return r.Map()["token"].(string)
	}
	adminProm := mint("", map[string]any{"name": "prometheus", "scope": "prometheus"})
	blueProm := mint(blueViewer, map[string]any{"name": "prometheus", "scope": "prometheus"})
	want(t, "an admin's prometheus token", targets(t, s, adminProm, ""), w0, w1, b0, a0)
	want(t, "a blue viewer's prometheus token", targets(t, s, blueProm, ""), a0)
	want(t, "a blue viewer's prometheus token asking for red", targets(t, s, blueProm, "?team_id="+red.String()))

	want(t, "team", targets(t, s, adminProm, "?team_id="+red.String()), w0, w1, b0)
	want(t, "stack", targets(t, s, adminProm, "?stack_id="+web.String()), w0, w1)
	var env uuid.UUID
	if err := s.DB.QueryRow(context.Background(), `SELECT environment_id FROM stacks WHERE id = $1`, batch).Scan(&env); err != nil {
		t.Fatal(err)
	}
	want(t, "environment", targets(t, s, adminProm, "?environment_id="+env.String()), b0)
	want(t, "label", targets(t, s, adminProm, "?label=web"), w0, w1, a0)
	want(t, "two labels", targets(t, s, adminProm, "?label=web&label=lab"), w0, w1)
	want(t, "an unknown label", targets(t, s, adminProm, "?label=nope"))
	want(t, "team and label", targets(t, s, redMember, "?team_id="+red.String()+"&label=web"), w0, w1)
	want(t, "another team's stack", targets(t, s, redMember, "?stack_id="+api.String()))

	long := strings.Repeat("a", 64)
	if _, err := s.DB.Exec(context.Background(), `UPDATE stacks SET labels = labels || $2 WHERE id = $1`, web, []string{long}); err != nil {
		t.Fatal(err)
	}
	want(t, "a label at its length limit", targets(t, s, adminProm, "?label="+long), w0, w1)
	want(t, "32 label filters", targets(t, s, adminProm, "?"+strings.Repeat("label=web&", 31)+"label=lab"), w0, w1)
	tooMany := "?" + strings.Repeat("label=web&", 33)
	for _, q := range []string{"?team_id=red", "?stack_id=1", "?environment_id=x", "?label=", "?label=" + strings.Repeat("a", 65), tooMany} {
		if r := s.Do("GET", "/v1/prometheus/targets"+q, apitest.Req{Token: adminProm}); r.Status != 400 {
			t.Fatalf("targets%s: %d %s, want 400", q, r.Status, r.Body)
		}
	}
}

// TestPrometheusTokenOpensOnlyTheTargets: a token of scope prometheus is refused (403) on every
// other documented route, the event streams included, whoever minted it; revoked, it opens
// nothing. A bad scope is refused when minting.
func TestPrometheusTokenOpensOnlyTheTargets(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	r := s.Do("POST", "/v1/tokens", apitest.Req{Body: map[string]any{"name": "prometheus", "scope": "prometheus"}})
	if r.Status != 201 {
		t.Fatalf("mint: %d %s", r.Status, r.Body)
	}
	tok, id := r.Map()["token"].(string), r.Map()["id"].(string)
	if got := s.Do("GET", "/v1/tokens/"+id, apitest.Req{}).Map()["scope"]; got != "prometheus" {
		t.Fatalf("the token's scope reads %v", got)
	}
	if got := s.Do("GET", "/v1/me", apitest.Req{}); got.Status != 200 {
		t.Fatalf("a full token on /v1/me: %d", got.Status)
	}
	if bad := s.Do("POST", "/v1/tokens", apitest.Req{Body: map[string]any{"name": "x", "scope": "root"}}); bad.Status != 422 ||
		!slices.Contains(bad.Problem().Fields(), "scope") {
		t.Fatalf("a bad scope: %d %s, want 422 naming scope", bad.Status, bad.Body)
	}

	doc, err := openapi3.NewLoader().LoadFromData(openapi.Spec)
	if err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\{[a-z_]+\}`)
	checked := 0
	for path, item := range doc.Paths.Map() {
		if !strings.HasPrefix(path, "/v1/") || path == "/v1/setup" || path == "/v1/sign-in" || path == "/v1/prometheus/targets" {
			continue
		}
		for method := range item.Operations() {
			p := param.ReplaceAllStringFunc(path, func(string) string { return uuid.NewString() })
			var body any
			if method == "POST" || method == "PATCH" {
				body = map[string]any{}
			}
			got := s.Do(method, p, apitest.Req{Token: tok, Body: body})
			if got.Status != 403 || got.Problem().Type != "urn:horizon:problem:forbidden" {
				t.Errorf("%s %s with a prometheus token: %d %s, want 403", method, path, got.Status, got.Body)
			}
			checked++
		}
	}
	if checked < 50 {
		t.Fatalf("only %d routes checked", checked)
	}
	if got := s.Do("GET", "/v1/prometheus/targets", apitest.Req{Token: tok}); got.Status != 200 {
		t.Fatalf("targets with the prometheus token: %d %s", got.Status, got.Body)
	}
	if got := s.Do("DELETE", "/v1/tokens/"+id, apitest.Req{}); got.Status != 204 {
		t.Fatalf("revoke: %d", got.Status)
	}
	if got := s.Do("GET", "/v1/prometheus/targets", apitest.Req{Token: tok}); got.Status != 401 {
		t.Fatalf("targets with a revoked prometheus token: %d, want 401", got.Status)
	}
}

// TestTargetsWithTheDatabaseLostAre503: a list that cannot be read whole is a 503 problem,
// which Prometheus counts as a failed refresh (keeping its targets), never a shorter list.
func TestTargetsWithTheDatabaseLostAre503(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	f := newFixture(t, s)
	f.machine(f.stack(s.NewTeam("red"), "web", horizon.StackDeployed), "app", 0, machineOpts{nodeExporter: true, built: true})
	r := s.LoseConnectionAt("executions", func() *apitest.Response {
		return s.Do("GET", "/v1/prometheus/targets", apitest.Req{})
	})
	if r.Status != 503 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("targets with the database lost: %d %s %s, want 503 problem+json", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	if len(targets(t, s, "", "")) != 1 {
		t.Fatal("the target is not back once the database is")
	}
}

// BenchmarkTargets is one Prometheus refresh of 2 000 machines of 100 stacks (half of them with
// Node Exporter), read by an admin's prometheus token: one query whatever the count.
func BenchmarkTargets(b *testing.B) {
	s := apitest.New(b, nil)
	f := newFixture(b, s)
	team := s.NewTeam("red")
	for i := range 100 {
		st := f.stack(team, fmt.Sprintf("s%d", i), horizon.StackDeployed, "lab")
		for j := range 20 {
			f.machine(st, "app", j, machineOpts{nodeExporter: j%2 == 0, built: true})
		}
	}
	r := s.Do("POST", "/v1/tokens", apitest.Req{Body: map[string]any{"name": "prometheus", "scope": "prometheus"}})
	tok := r.Map()["token"].(string)
	req, _ := http.NewRequest("GET", s.URL+"/v1/prometheus/targets", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	b.ResetTimer()
	for b.Loop() {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var groups []prometheus.Group
		if err := json.NewDecoder(res.Body).Decode(&groups); err != nil || len(groups) != 1000 {
			b.Fatalf("%d groups (%v)", len(groups), err)
		}
		_ = res.Body.Close()
	}
}
