package stacks_test

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"horizon/functions/apitest"
	"horizon/functions/apitest/labtest"
	"horizon/shared/auth"

	"github.com/google/uuid"
)

// TestDraftPreselectsAndListsProblems: a draft may be incomplete; Horizon preselects what has a
// single option (the environment's one server, the member's one key) and lists what is missing;
// it touches no infrastructure. No worker runs: this is the API alone.
func TestDraftPreselectsAndListsProblems(t *testing.T) {
	t.Parallel()
	e := labtest.New(t, labtest.Options{})
	r := e.API.Do("POST", "/v1/stacks", apitest.Req{Token: e.Member, Body: map[string]any{"team_id": e.Team, "name": "half",
		"environment_id": e.Env, "template_id": e.Tmpl, "template_version": 1,
		"jobs": map[string]any{"app": map[string]any{"executions": []any{map[string]any{"parameters": map[string]any{"memory_mb": 999}}}}}}})
	if r.Status != 201 {
		t.Fatalf("draft: %d %s", r.Status, r.Body)
	}
	d := r.Map()
	pre := stringsOf(d["preselected"])
	sort.Strings(pre)
	for _, want := range []string{"jobs.app.executions[0].proxmox_server_id", "jobs.app.executions[0].ssh_key_id", "jobs.db.executions[0].proxmox_server_id"} {
		if !slices.Contains(pre, want) {
			t.Errorf("preselected %v lacks %s", pre, want)
		}
	}
	var fields []string
	for _, p := range d["problems"].([]any) {
		fields = append(fields, p.(map[string]any)["field"].(string))
	}
	for _, want := range []string{"jobs.app.executions[0].address_id", "jobs.app.executions[0].node", "jobs.app.executions[0].parameters.memory_mb", "jobs.db.executions[0].pool"} {
		if !slices.Contains(fields, want) {
			t.Errorf("problems %v lack %s", fields, want)
		}
	}
	if !reflect.DeepEqual(stringsOf(d["allowed_actions"]), []string{"edit", "deploy", "remove", "duplicate"}) {
		t.Errorf("draft actions %v", d["allowed_actions"])
	}
	if len(e.Sandbox.Cluster("demo").VMs()) != 0 {
		t.Fatal("a draft touched infrastructure")
	}

	id := d["id"].(string)
	// Deploying it reports every problem at once and starts nothing.
	before := e.API.State()
	dep := e.API.Do("POST", "/v1/stacks/"+id+"/deploy", apitest.Req{Token: e.Member})
	if p := dep.Problem(); dep.Status != 422 || len(p.Errors) < 4 {
		t.Fatalf("deploy of an incomplete draft: %d %v", dep.Status, p.Fields())
	}
	var runs int
	if err := e.API.DB.QueryRow(t.Context(), `SELECT count(*) FROM runs`).Scan(&runs); err != nil || runs != 0 {
		t.Fatalf("runs after a refused deploy: %d (%v)", runs, err)
	}
	if e.API.State() != before {
		t.Fatal("a refused deploy changed the catalogue")
	}

	// Editing a draft needs its ETag.
	patch := map[string]any{"jobs": map[string]any{"db": map[string]any{"executions": []any{e.Machine(0, nil)}},
		"app": map[string]any{"executions": []any{e.Machine(1, nil)}}}}
	if r := e.API.Do("PATCH", "/v1/stacks/"+id, apitest.Req{Token: e.Member, Body: patch}); r.Status != 428 {
		t.Fatalf("PATCH without If-Match: %d, want 428", r.Status)
	}
	if r := e.API.Do("PATCH", "/v1/stacks/"+id, apitest.Req{Token: e.Member, Body: patch, Headers: map[string]string{"If-Match": `"999"`}}); r.Status != 412 {
		t.Fatalf("PATCH with a stale If-Match: %d, want 412", r.Status)
	}
	etag := e.API.Do("GET", "/v1/stacks/"+id, apitest.Req{Token: e.Member}).Header.Get("ETag")
	ok := e.API.Do("PATCH", "/v1/stacks/"+id, apitest.Req{Token: e.Member, Body: patch, Headers: map[string]string{"If-Match": etag}})
	if ok.Status != 200 || len(ok.Map()["problems"].([]any)) != 0 {
		t.Fatalf("complete the draft: %d %s", ok.Status, ok.Body)
	}

	// Other teams do not see it; viewers cannot write it.
	other := e.API.NewTeam("other")
	_, outsider := e.API.NewUser(auth.RoleMember, other)
	if r := e.API.Do("GET", "/v1/stacks/"+id, apitest.Req{Token: outsider}); r.Status != 404 {
		t.Fatalf("another team's stack: %d, want 404", r.Status)
	}
	if r := e.API.Do("POST", "/v1/stacks/"+id+"/deploy", apitest.Req{Token: outsider}); r.Status != 404 {
		t.Fatalf("deploy another team's stack: %d, want 404", r.Status)
	}
	_, viewer := e.API.NewUser(auth.RoleViewer, uuid.MustParse(e.Team))
	if r := e.API.Do("POST", "/v1/stacks/"+id+"/deploy", apitest.Req{Token: viewer}); r.Status != 403 {
		t.Fatalf("viewer deploys: %d, want 403", r.Status)
	}
	if r := e.API.Do("GET", "/v1/stacks/"+id, apitest.Req{Token: viewer}); r.Status != 200 || len(r.Map()["allowed_actions"].([]any)) != 0 {
		t.Fatalf("viewer reads: %d %v", r.Status, r.Map()["allowed_actions"])
	}
}

// TestDraftRejectsWhatCannotBeADraft: structural mistakes are refused outright.
func TestDraftRejectsWhatCannotBeADraft(t *testing.T) {
	t.Parallel()
	e := labtest.New(t, labtest.Options{})
	base := func(jobs map[string]any) map[string]any {
		return map[string]any{"team_id": e.Team, "name": "x", "environment_id": e.Env, "template_id": e.Tmpl, "template_version": 1, "jobs": jobs}
	}
	six := []any{}
	for i := 0; i < 6; i++ {
		six = append(six, map[string]any{})
	}
	tests := []struct {
		name   string
		body   map[string]any
		status int
		field  string
	}{
		{"unknown job", base(map[string]any{"cache": map[string]any{"executions": []any{}}}), 422, "jobs.cache"},
		{"unknown parameter", base(map[string]any{"db": map[string]any{"executions": []any{map[string]any{"parameters": map[string]any{"disk_gb": 1}}}}}), 422, "jobs.db.executions[0].parameters.disk_gb"},
		{"more executions than max", base(map[string]any{"app": map[string]any{"executions": six}}), 422, "jobs.app.executions"},
		{"secret not a string", base(map[string]any{"app": map[string]any{"executions": []any{map[string]any{"parameters": map[string]any{"admin_password": 7}}}}}), 422, "jobs.app.executions[0].parameters.admin_password"},
		{"another team", map[string]any{"team_id": e.API.NewTeam("them").String(), "name": "x", "environment_id": e.Env, "template_id": e.Tmpl, "template_version": 1}, 422, "team_id"},
		{"unknown version", map[string]any{"team_id": e.Team, "name": "x", "environment_id": e.Env, "template_id": e.Tmpl, "template_version": 9}, 422, "template_version"},
		{"bad label", map[string]any{"team_id": e.Team, "name": "x", "environment_id": e.Env, "template_id": e.Tmpl, "template_version": 1, "labels": []string{"Not A Tag"}}, 422, "labels[0]"},
		{"server-owned field", map[string]any{"team_id": e.Team, "name": "x", "environment_id": e.Env, "template_id": e.Tmpl, "template_version": 1, "state": "deployed"}, 422, "state"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := e.API.State()
			r := e.API.Do("POST", "/v1/stacks", apitest.Req{Token: e.Member, Body: tc.body})
			if p := r.Problem(); r.Status != tc.status || !slices.Contains(p.Fields(), tc.field) {
				t.Fatalf("got %d %v, want %d naming %s", r.Status, p.Fields(), tc.status, tc.field)
			}
			var stacks int
			if err := e.API.DB.QueryRow(t.Context(), `SELECT count(*) FROM stacks`).Scan(&stacks); err != nil || stacks != 0 {
				t.Fatalf("stacks: %d (%v)", stacks, err)
			}
			if e.API.State() != before {
				t.Fatal("the refused draft changed the database")
			}
		})
	}
	// An inactive template starts no new stack.
	etag := e.API.Do("GET", "/v1/templates/"+e.Tmpl, apitest.Req{}).Header.Get("ETag")
	if r := e.API.Do("PATCH", "/v1/templates/"+e.Tmpl, apitest.Req{Body: map[string]any{"active": false}, Headers: map[string]string{"If-Match": etag}}); r.Status != 200 {
		t.Fatalf("deactivate: %d %s", r.Status, r.Body)
	}
	if r := e.API.Do("POST", "/v1/stacks", apitest.Req{Token: e.Member, Body: base(nil)}); r.Status != 422 || !slices.Contains(r.Problem().Fields(), "template_id") {
		t.Fatalf("draft of an inactive template: %d %s", r.Status, r.Body)
	}
}

func stringsOf(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestDraftEditChangesOnlyWhatItCarries: an execution named by its id changes only the answers
// the request carries; null clears a nullable answer and is refused, naming the field, on
// another (a node or a pool is a string; an empty one is sent as "").
func TestDraftEditChangesOnlyWhatItCarries(t *testing.T) {
	t.Parallel()
	e := labtest.New(t, labtest.Options{})
	id := e.Draft("partial", 1)
	path := "/v1/stacks/" + id
	app := func(r *apitest.Response) map[string]any {
		t.Helper()
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		return r.Map()["jobs"].(map[string]any)["app"].(map[string]any)["executions"].([]any)[0].(map[string]any)
	}
	was := app(e.API.Do("GET", path, apitest.Req{Token: e.Member}))
	// edit sends change for the app execution, named by its id (a draft's executions get new
	// ids when it is saved).
	edit := func(change map[string]any) *apitest.Response {
		t.Helper()
		g := e.API.Do("GET", path, apitest.Req{Token: e.Member})
		exec := map[string]any{"id": app(g)["id"]}
		for k, v := range change {
			exec[k] = v
		}
		return e.API.Do("PATCH", path, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": g.Header.Get("ETag")},
			Body: map[string]any{"jobs": map[string]any{"app": map[string]any{"executions": []any{exec}}}}})
	}

	before := e.API.State()
	for _, field := range []string{"node", "pool", "node_exporter", "parameters"} {
		r := edit(map[string]any{field: nil})
		if r.Status != 422 || !slices.Equal(r.Problem().Fields(), []string{"jobs.app.executions[0]." + field}) {
			t.Errorf("null %s: %d %s, want 422 naming it", field, r.Status, r.Body)
		}
	}
	for field, v := range map[string]any{"node": 3, "nagios.hostgroup": map[string]any{"hostgroup": 1}} {
		r := edit(map[string]any{strings.Split(field, ".")[0]: v})
		if want := "jobs.app.executions[0]." + field; r.Status != 422 || !slices.Equal(r.Problem().Fields(), []string{want}) {
			t.Errorf("%s of the wrong type: %d %s, want 422 naming %s", field, r.Status, r.Body, want)
		}
	}
	etag := e.API.Do("GET", path, apitest.Req{Token: e.Member}).Header.Get("ETag")
	for _, field := range []string{"name", "description", "labels", "environment_id", "template_version"} {
		r := e.API.Do("PATCH", path, apitest.Req{Token: e.Member, Headers: map[string]string{"If-Match": etag}, Body: map[string]any{field: nil}})
		if r.Status != 422 || !slices.Equal(r.Problem().Fields(), []string{field}) {
			t.Errorf("null %s: %d %s, want 422 naming it", field, r.Status, r.Body)
		}
	}
	if e.API.State() != before {
		t.Fatal("a refused null changed the draft")
	}

	got := app(edit(map[string]any{"node": "pve2"}))
	for _, k := range []string{"address_id", "ssh_key_id", "proxmox_server_id", "pool", "parameters"} {
		if !reflect.DeepEqual(got[k], was[k]) {
			t.Errorf("%s = %v after an edit of node alone, was %v", k, got[k], was[k])
		}
	}
	if got["node"] != "pve2" {
		t.Errorf("node = %v, want pve2", got["node"])
	}
	r := edit(map[string]any{"address_id": nil})
	if m := r.Map(); m["name"] != "partial" || !reflect.DeepEqual(m["labels"], []any{"lab"}) {
		t.Errorf("an edit of jobs alone changed name or labels: %v %v", m["name"], m["labels"])
	}
	got = app(r)
	if got["address_id"] != nil || got["node"] != "pve2" || got["ssh_key_id"] != was["ssh_key_id"] {
		t.Errorf("after address_id null: %v, want it cleared and the rest kept", got)
	}
}
