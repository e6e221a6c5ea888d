package templates_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"horizon/functions/apitest"
	"horizon/shared/auth"
	"horizon/shared/template"
)

func TestCreateTemplateFromYAMLPinsCommitsAndServesTheForm(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	repo := newSources(t)
	head := repo.Git("rev-parse", "HEAD")

	r := s.Do("POST", "/v1/templates", apitest.Req{Body: map[string]any{"definition": yamlDefinition(repo.URL)}})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	tmpl := r.Map()
	id := tmpl["id"].(string)
	if tmpl["name"] != "shop" || tmpl["description"] != "A web shop" || tmpl["active"] != true || tmpl["latest_version"] != 1.0 ||
		len(tmpl["versions"].([]any)) != 1 || r.Header.Get("Location") != "/v1/templates/"+id || r.Header.Get("ETag") != `"1"` {
		t.Fatalf("created %s (Location %s, ETag %s), want name and description from the definition, active, version 1",
			r.Body, r.Header.Get("Location"), r.Header.Get("ETag"))
	}

	_, member := s.NewUser(auth.RoleMember)
	_, viewer := s.NewUser(auth.RoleViewer)
	for _, tok := range []string{member, viewer} {
		if g := s.Do("GET", "/v1/templates/"+id, apitest.Req{Token: tok}); g.Status != 200 || !reflect.DeepEqual(g.Map(), tmpl) {
			t.Fatalf("GET as a reader: %d %s, want what POST returned", g.Status, g.Body)
		}
		if l := s.Do("GET", "/v1/templates", apitest.Req{Token: tok}); l.Status != 200 || len(l.Map()["items"].([]any)) != 1 {
			t.Fatalf("list as a reader: %d %s", l.Status, l.Body)
		}
	}

	v := s.Do("GET", "/v1/templates/"+id+"/versions/1", apitest.Req{Token: viewer})
	if v.Status != 200 {
		t.Fatalf("version: %d %s", v.Status, v.Body)
	}
	var ver struct {
		Definition     template.Definition
		DefinitionHash string `json:"definition_hash"`
		Commits        struct{ Jobs map[string]string }
		Modules        template.Modules
	}
	v.JSON(&ver)
	want, err := template.Parse([]byte(yamlDefinition(repo.URL)))
	if err != nil {
		t.Fatal(err)
	}
	if ver.DefinitionHash != want.Hash() || ver.Definition.Hash() != want.Hash() {
		t.Errorf("stored hash %s, definition hashing to %s; want %s", ver.DefinitionHash, ver.Definition.Hash(), want.Hash())
	}
	if !reflect.DeepEqual(ver.Commits.Jobs, map[string]string{"web": head, "app": head}) {
		t.Errorf("pinned commits %v, want both jobs at %s", ver.Commits.Jobs, head)
	}
	if m := ver.Modules.Jobs["web"]; m == nil || m.Variable("admin_password") == nil || m.Output("ip") == nil {
		t.Errorf("web's module %+v, want its variables and outputs", m)
	}

	f := s.Do("GET", "/v1/templates/"+id+"/versions/1/form", apitest.Req{Token: viewer})
	if f.Status != 200 {
		t.Fatalf("form: %d %s", f.Status, f.Body)
	}
	var form template.FormSchema
	f.JSON(&form)
	wantForm := template.Form(want, ver.Modules)
	if !reflect.DeepEqual(roundTrip(t, form), roundTrip(t, wantForm)) {
		t.Errorf("form:\n%s\nwant\n%s", f.Body, mustJSON(t, wantForm))
	}
	if web := form.Phases[0].Jobs[0]; !web.Parameters.Properties["admin_password"].Secret || web.Parameters.Properties["admin_password"].Generated == false {
		t.Errorf("admin_password in the form: %+v, want secret and generated", web.Parameters.Properties["admin_password"])
	}
	if app := form.Phases[1].Jobs[0]; !reflect.DeepEqual(app.DependsOn, []string{"web"}) || !app.Executions.Multiple || app.Executions.Max != 4 {
		t.Errorf("app in the form: %+v, want it to depend on web, with 1..4 executions", app)
	}

	var actions int
	if err := s.DB.QueryRow(context.Background(), `SELECT count(*) FROM activity WHERE action = 'template.create' AND object_id = $1`, id).Scan(&actions); err != nil || actions != 1 {
		t.Errorf("activity records of the creation: %d (%v), want 1", actions, err)
	}
	if r := s.Do("GET", "/v1/templates/"+id+"/versions/2", apitest.Req{}); r.Status != 404 {
		t.Errorf("a version that does not exist: %d, want 404", r.Status)
	}
	if r := s.Do("GET", "/v1/templates/"+id+"/versions/0/form", apitest.Req{}); r.Status != 400 {
		t.Errorf("version 0: %d, want 400", r.Status)
	}
}

func TestCreateTemplateFromAJSONObject(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	repo := newSources(t)
	tmpl := createTemplate(t, s, map[string]any{"name": "Shop (prod)", "description": "", "active": false, "definition": definition(repo.URL)})
	if tmpl["name"] != "Shop (prod)" || tmpl["description"] != "" || tmpl["active"] != false {
		t.Fatalf("created %v, want the given name, description and active flag", tmpl)
	}
	if r := s.Do("POST", "/v1/templates", apitest.Req{Body: map[string]any{"name": "Shop (prod)", "definition": definition(repo.URL)}}); r.Status != 409 || r.Problem().Fields()[0] != "name" {
		t.Fatalf("a taken name: %d %s, want 409 on name", r.Status, r.Body)
	}
}

func TestCreateVersionPinsWhatTheBranchHoldsNow(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	repo := newSources(t)
	first := repo.Git("rev-parse", "HEAD")
	tmpl := createTemplate(t, s, map[string]any{"definition": definition(repo.URL)})
	base := "/v1/templates/" + tmpl["id"].(string)
	second := repo.Commit(map[string]string{"jobs/web/README.md": "notes"})

	r := s.Do("POST", base+"/versions", apitest.Req{Body: map[string]any{"definition": yamlDefinition(repo.URL)}, Headers: map[string]string{"If-Match": `"1"`}})
	if r.Status != 201 || r.Map()["number"] != 2.0 || r.Header.Get("Location") != base+"/versions/2" {
		t.Fatalf("new version: %d %s (Location %s)", r.Status, r.Body, r.Header.Get("Location"))
	}
	v2 := r.Map()
	if v2["commits"].(map[string]any)["jobs"].(map[string]any)["web"] != second {
		t.Errorf("version 2 pinned %v, want web at %s", v2["commits"], second)
	}
	v1 := s.Do("GET", base+"/versions/1", apitest.Req{}).Map()
	if v1["commits"].(map[string]any)["jobs"].(map[string]any)["web"] != first || v1["definition_hash"] != v2["definition_hash"] {
		t.Errorf("version 1 %v, want it unchanged at %s with the same definition hash as version 2", v1["commits"], first)
	}
	g := s.Do("GET", base, apitest.Req{})
	detail := g.Map()
	if detail["latest_version"] != 2.0 || len(detail["versions"].([]any)) != 2 || g.Header.Get("ETag") != `"2"` {
		t.Errorf("template after the new version: %s (ETag %s), want latest 2, two versions, ETag 2", g.Body, g.Header.Get("ETag"))
	}

	before := s.State()
	if r := s.Do("POST", base+"/versions", apitest.Req{Body: map[string]any{"definition": definition(repo.URL)}, Headers: map[string]string{"If-Match": `"1"`}}); r.Status != 412 {
		t.Fatalf("a stale If-Match: %d %s, want 412", r.Status, r.Body)
	}
	if r := s.Do("POST", "/v1/templates/018f0000-0000-7000-8000-000000000000/versions", apitest.Req{Body: map[string]any{"definition": definition(repo.URL)}}); r.Status != 404 {
		t.Fatalf("a version of a missing template: %d, want 404", r.Status)
	}
	if s.State() != before {
		t.Fatal("refused requests changed the database")
	}
}

func TestUpdateTemplate(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	repo := newSources(t)
	tmpl := createTemplate(t, s, map[string]any{"definition": definition(repo.URL)})
	path := "/v1/templates/" + tmpl["id"].(string)

	r := s.Do("PATCH", path, apitest.Req{Body: map[string]any{"active": false, "description": "Retired"}, Headers: map[string]string{"If-Match": `"1"`}})
	if p := r.Map(); r.Status != 200 || p["active"] != false || p["description"] != "Retired" || p["name"] != "shop" || r.Header.Get("ETag") != `"2"` {
		t.Fatalf("patch: %d %s (ETag %s)", r.Status, r.Body, r.Header.Get("ETag"))
	}
	for q, n := range map[string]int{"": 1, "?active=false": 1, "?active=true": 0} {
		if l := s.Do("GET", "/v1/templates"+q, apitest.Req{}).Map(); len(l["items"].([]any)) != n {
			t.Errorf("list%s: %v, want %d", q, l, n)
		}
	}
	if r := s.Do("GET", "/v1/templates?active=maybe", apitest.Req{}); r.Status != 400 {
		t.Errorf("?active=maybe: %d, want 400", r.Status)
	}

	_, member := s.NewUser(auth.RoleMember)
	before := s.State()
	for name, tc := range map[string]struct {
		token   string
		body    any
		ifMatch string
		status  int
		field   string
	}{
		"stale If-Match":         {"", map[string]any{"active": true}, `"1"`, 412, ""},
		"unreadable If-Match":    {"", map[string]any{"active": true}, `W/"x"`, 412, ""},
		"member":                 {member, map[string]any{"active": true}, "", 403, ""},
		"empty name":             {"", map[string]any{"name": " "}, "", 422, "name"},
		"definition is no field": {"", map[string]any{"definition": definition(repo.URL)}, "", 422, "definition"},
		"wrong type":             {"", map[string]any{"active": "yes"}, "", 422, "active"},
		"null name":              {"", map[string]any{"name": nil}, "", 422, "name"},
		"null description":       {"", map[string]any{"description": nil, "active": true}, "", 422, "description"},
		"null active":            {"", map[string]any{"active": nil}, "", 422, "active"},
	} {
		h := map[string]string{}
		if tc.ifMatch != "" {
			h["If-Match"] = tc.ifMatch
		}
		r := s.Do("PATCH", path, apitest.Req{Token: tc.token, Body: tc.body, Headers: h})
		if r.Status != tc.status || (tc.field != "" && !reflect.DeepEqual(r.Problem().Fields(), []string{tc.field})) {
			t.Errorf("%s: got %d %s, want %d on %q", name, r.Status, r.Body, tc.status, tc.field)
		}
	}
	if s.State() != before {
		t.Fatal("refused patches changed the database")
	}
}

func TestChangesSincePinned(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	repo := newSources(t)
	pinned := repo.Git("rev-parse", "HEAD")
	tmpl := createTemplate(t, s, map[string]any{"definition": definition(repo.URL)})
	base := "/v1/templates/" + tmpl["id"].(string)
	_, viewer := s.NewUser(auth.RoleViewer)

	changes := func(v string) map[string]any {
		t.Helper()
		r := s.Do("GET", base+"/versions/"+v+"/changes", apitest.Req{Token: viewer})
		if r.Status != 200 {
			t.Fatalf("changes of version %s: %d %s", v, r.Status, r.Body)
		}
		return r.Map()
	}
	if c := changes("1"); c["changed"] != false || c["definition_changed"] != false || len(c["sources"].([]any)) != 2 {
		t.Fatalf("right after upload: %v, want nothing changed", c)
	}

	moved := repo.Commit(map[string]string{"jobs/app/main.tf": appTF + "\n# tweak\n"})
	c := changes("1")
	src := c["sources"].([]any)[0].(map[string]any)
	if c["changed"] != true || c["definition_changed"] != false || src["job"] != "web" || src["pinned_commit"] != pinned || src["current_commit"] != moved || src["changed"] != true {
		t.Fatalf("after a commit on the branch: %v, want web's source changed from %s to %s", c, pinned, moved)
	}

	edited := mutated(definition(repo.URL), func(d map[string]any) { d["description"] = "A bigger web shop" })
	if r := s.Do("POST", base+"/versions", apitest.Req{Body: map[string]any{"definition": edited}}); r.Status != 201 {
		t.Fatalf("version 2: %d %s", r.Status, r.Body)
	}
	if c := changes("1"); c["definition_changed"] != true || c["latest_version"] != 2.0 {
		t.Fatalf("version 1 after version 2: %v, want the definition changed", c)
	}
	if c := changes("2"); c["changed"] != false {
		t.Fatalf("version 2 against itself: %v, want nothing changed", c)
	}

	repo.Git("branch", "-m", "main", "trunk")
	c = changes("2")
	src = c["sources"].([]any)[1].(map[string]any)
	if c["changed"] != false || src["error"] == nil || src["current_commit"] != "" {
		t.Fatalf("branch gone: %v, want an error on the source and no change claimed", c)
	}
	if r := s.Do("GET", base+"/versions/3/changes", apitest.Req{}); r.Status != 404 {
		t.Fatalf("changes of a missing version: %d, want 404", r.Status)
	}
}

func roundTrip(t *testing.T, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal(mustJSON(t, v), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A new version of sources already in the API's git cache lists the branches and fetches
// nothing.
func TestNewVersionFromAWarmCacheDoesNotFetch(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	repo := newSources(t)
	tmpl := createTemplate(t, s, map[string]any{"definition": definition(repo.URL)})
	before := s.Deps.Git.Stats()
	if r := s.Do("POST", "/v1/templates/"+tmpl["id"].(string)+"/versions", apitest.Req{Body: map[string]any{"definition": definition(repo.URL)}}); r.Status != 201 {
		t.Fatalf("new version: %d %s", r.Status, r.Body)
	}
	if after := s.Deps.Git.Stats(); after.Fetches != before.Fetches || after.Listings != before.Listings+1 {
		t.Fatalf("git operations %+v after %+v, want one listing (one branch) and no fetch", after, before)
	}
}
