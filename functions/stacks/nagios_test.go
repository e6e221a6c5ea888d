package stacks_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/horizon"
	"horizon/shared/nagios/nagiostest"
	"horizon/shared/store"
)

// TestDraftSaveChecksNagiosHostgroups: saving a draft (create or edit) refuses a host group when
// the environment has no Nagios server, and one its server does not define — a group missing
// from the discovered list is asked for by name, so an empty group (which hostgrouplist leaves
// out) is accepted; the problem names the execution's field and nothing is saved. When Nagios does
// not answer, a new group is left to the deploy's check, and the deploy, which must ask, is a 503.
func TestDraftSaveChecksNagiosHostgroups(t *testing.T) {
	t.Parallel()
	e := labtest.New(t, labtest.Options{})
	group := func(g string) map[string]any { return map[string]any{"nagios": map[string]any{"hostgroup": g}} }
	draft := func(dbGroup, appGroup string) *apitest.Response {
		return e.API.Do("POST", "/v1/stacks", apitest.Req{Token: e.Member, Body: map[string]any{"team_id": e.Team, "name": "mon",
			"environment_id": e.Env, "template_id": e.Tmpl, "template_version": 1,
			"jobs": map[string]any{"db": map[string]any{"executions": []any{e.Machine(0, group(dbGroup))}},
				"app": map[string]any{"executions": []any{e.Machine(1, group(appGroup))}}}}})
	}
	const appField = `"field":"jobs.app.executions[0].nagios.hostgroup"`
	before := e.API.State()
	if r := draft("", nagiostest.Hostgroup); r.Status != 422 || !strings.Contains(string(r.Body), appField) ||
		!strings.Contains(string(r.Body), "has no Nagios server") {
		t.Fatalf("a host group without a Nagios server: %d %s", r.Status, r.Body)
	}
	if e.API.State() != before {
		t.Fatal("a refused draft changed the database")
	}

	n := nagiostest.Start(t, nagiostest.Options{})
	reg := e.API.Do("POST", "/v1/nagios-servers", apitest.Req{Body: n.Registration("nagios")})
	if reg.Status != 201 {
		t.Fatalf("register nagios: %d %s", reg.Status, reg.Body)
	}
	if env := e.API.Do("PATCH", "/v1/environments/"+e.Env, apitest.Req{Body: map[string]any{"nagios_server_id": reg.Map()["id"]}}); env.Status != 200 {
		t.Fatalf("environment: %d %s", env.Status, env.Body)
	}
	before = e.API.State()
	if r := draft(nagiostest.Hostgroup, "no-such-group"); r.Status != 422 || !strings.Contains(string(r.Body), appField) ||
		strings.Contains(string(r.Body), "jobs.db.executions[0]") {
		t.Fatalf("create with an unknown host group: %d %s", r.Status, r.Body)
	}
	if e.API.State() != before {
		t.Fatal("a refused draft changed the database")
	}
	// The empty group is not in the discovered list, but Nagios defines it.
	r := draft(nagiostest.EmptyHostgroup, nagiostest.Hostgroup)
	if r.Status != 201 {
		t.Fatalf("create with known host groups: %d %s", r.Status, r.Body)
	}
	id, etag := r.Map()["id"].(string), r.Header.Get("ETag")
	edit := func(appGroup string) *apitest.Response {
		return e.API.Do("PATCH", "/v1/stacks/"+id, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": etag},
			Body: map[string]any{"jobs": map[string]any{"db": map[string]any{"executions": []any{e.Machine(0, group(nagiostest.EmptyHostgroup))}},
				"app": map[string]any{"executions": []any{e.Machine(1, group(appGroup))}}}}})
	}
	before = e.API.State()
	if p := edit("no-such-group"); p.Status != 422 || !strings.Contains(string(p.Body), appField) || !strings.Contains(string(p.Body), "is not a host group") {
		t.Fatalf("edit to an unknown host group: %d %s", p.Status, p.Body)
	}
	if e.API.State() != before {
		t.Fatal("a refused edit changed the database")
	}
	p := edit(nagiostest.EmptyHostgroup)
	if p.Status != 200 {
		t.Fatalf("edit to the empty host group: %d %s", p.Status, p.Body)
	}
	etag = p.Header.Get("ETag")

	// Nagios does not answer: a new group is saved, and the deploy's check will judge it.
	if _, err := e.API.DB.Exec(t.Context(), `UPDATE nagios_servers SET url = 'http://127.0.0.1:1/cgi-bin/nagios4'`); err != nil {
		t.Fatal(err)
	}
	if p := edit("later-judged"); p.Status != 200 {
		t.Fatalf("edit while Nagios is down: %d %s", p.Status, p.Body)
	}
	// The deploy must ask it: with Nagios still down it is a dependency down, and starts nothing.
	before = e.API.State()
	if d := e.API.Do("POST", "/v1/stacks/"+id+"/deploy", apitest.Req{Token: e.Member}); d.Status != 503 ||
		d.Header.Get("Retry-After") == "" || !strings.Contains(d.Map()["detail"].(string), "Nagios server nagios does not answer") {
		t.Fatalf("deploy while Nagios is down: %d %s, want 503 naming the server", d.Status, d.Body)
	}
	if e.API.State() != before {
		t.Fatal("a deploy refused for Nagios being down changed the database")
	}
}

// TestDraftSaveAsksNagiosOutsideItsTransaction: a draft save (create, edit) asks Nagios about a
// host group before its transaction, so a slow Nagios holds no transaction open and locks no
// stack: while the lookup is in flight no session of the API's database is idle in a
// transaction, and another writer takes the draft's row at once. Nagios is real, behind a gate
// that holds each request until the test has looked.
func TestDraftSaveAsksNagiosOutsideItsTransaction(t *testing.T) {
	t.Parallel()
	e := labtest.New(t, labtest.Options{})
	n := nagiostest.Start(t, nagiostest.Options{})
	target, err := url.Parse(n.URL)
	if err != nil {
		t.Fatal(err)
	}
	// The gate holds the first request after it is armed (the rest of the exchange, such as
	// the digest's second round, passes).
	var armed atomic.Bool
	arrived, release := make(chan struct{}), make(chan struct{})
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if armed.CompareAndSwap(true, false) {
			arrived <- struct{}{}
			<-release
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(gate.Close)
	// Stored without SSH access (a draft save only reads Nagios), as its discovery found it,
	// behind the gate.
	srv, err := store.NagiosServerCreate(t.Context(), e.API.DB, horizon.NagiosServer{Name: "nagios", URL: gate.URL + target.Path,
		Username: n.Username, Password: e.API.Deps.Box.SealString(horizon.PurposeNagiosPassword, n.Password),
		Hostgroups: []string{nagiostest.Hostgroup}})
	if err != nil {
		t.Fatal(err)
	}
	if env := e.API.Do("PATCH", "/v1/environments/"+e.Env, apitest.Req{Body: map[string]any{"nagios_server_id": srv.ID}}); env.Status != 200 {
		t.Fatalf("environment: %d %s", env.Status, env.Body)
	}
	group := func(g string) map[string]any { return map[string]any{"nagios": map[string]any{"hostgroup": g}} }
	// whileAsking sends a save and, while its lookup is held at the gate, runs look.
	whileAsking := func(what string, save func() *apitest.Response, look func()) *apitest.Response {
		t.Helper()
		done := make(chan *apitest.Response, 1)
		armed.Store(true)
		go func() { done <- save() }()
		select {
		case <-arrived:
		case r := <-done:
			t.Fatalf("%s answered %d without asking Nagios: %s", what, r.Status, r.Body)
		}
		released := false
		defer func() {
			if !released { // look failed: let the save finish
				close(release)
			}
		}()
		look()
		close(release)
		released = true
		r := <-done
		release = make(chan struct{})
		return r
	}
	noOpenTransaction := func(what string) {
		t.Helper()
		var open int
		if err := e.API.DB.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND state LIKE 'idle in transaction%'`).Scan(&open); err != nil {
			t.Fatal(err)
		}
		if open != 0 {
			t.Fatalf("%s holds a transaction open while it waits on Nagios (%d idle in transaction)", what, open)
		}
	}

	// The empty group is not in the discovered list: the save asks Nagios for it by name.
	r := whileAsking("create", func() *apitest.Response {
		return e.API.Do("POST", "/v1/stacks", apitest.Req{Token: e.Member, Body: map[string]any{"team_id": e.Team, "name": "slow",
			"environment_id": e.Env, "template_id": e.Tmpl, "template_version": 1,
			"jobs": map[string]any{"db": map[string]any{"executions": []any{e.Machine(0, group(nagiostest.EmptyHostgroup))}}}}})
	}, func() { noOpenTransaction("create") })
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id, etag := r.Map()["id"].(string), r.Header.Get("ETag")

	// The edit brings the group anew, on another machine.
	p := whileAsking("edit", func() *apitest.Response {
		return e.API.Do("PATCH", "/v1/stacks/"+id, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": etag},
			Body: map[string]any{"jobs": map[string]any{"db": map[string]any{"executions": []any{e.Machine(0, nil)}},
				"app": map[string]any{"executions": []any{e.Machine(1, group(nagiostest.EmptyHostgroup))}}}}})
	}, func() {
		noOpenTransaction("edit")
		tx, err := e.API.DB.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(t.Context()) }()
		if _, err := tx.Exec(t.Context(), `SELECT 1 FROM stacks WHERE id = $1 FOR UPDATE NOWAIT`, id); err != nil {
			t.Fatalf("another writer cannot take the draft while its edit waits on Nagios: %v", err)
		}
	})
	if p.Status != 200 {
		t.Fatalf("edit: %d %s", p.Status, p.Body)
	}
}
