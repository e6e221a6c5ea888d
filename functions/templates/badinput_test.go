package templates_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"horizon/functions/apitest"
	"horizon/shared/auth"
	"horizon/shared/testkit"
)

// aliasBomb is a billion-laughs document: expanded, its last list would hold 10^9 strings.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("name: bomb\nphases:\n  - name: p\n    jobs:\n      - name: j\n        source: { repo: file:///nowhere, branch: main }\n        parameters:\n")
	b.WriteString(`          - { name: a0, type: string, enum: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"] }` + "\n")
	for i := 1; i < 9; i++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", i-1), 10), ",")
		fmt.Fprintf(&b, "          - { name: a%d, type: string, enum: &a%d [%s] }\n", i, i, refs)
	}
	return b.String()
}

// TestCreateTemplateRejectsBadDefinitions sends every kind of bad definition the library
// reports, and the git problems, and checks the exact fields named and that nothing is written.
func TestCreateTemplateRejectsBadDefinitions(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	repo := newSources(t)
	good := definition(repo.URL)
	escaping := testkit.NewGitRepo(t)
	escaping.Commit(map[string]string{"jobs/web/main.tf": webTF})
	if err := os.Symlink("../../../../../etc", filepath.Join(escaping.Dir, "jobs/web/scripts")); err != nil {
		t.Fatal(err)
	}
	escaping.Commit(nil)
	_, member := s.NewUser(auth.RoleMember)
	_, viewer := s.NewUser(auth.RoleViewer)

	edit := func(f func(d map[string]any)) map[string]any { return map[string]any{"definition": mutated(good, f)} }
	web := func(d map[string]any) map[string]any { return job(d, 0, 0) }
	app := func(d map[string]any) map[string]any { return job(d, 1, 0) }
	const w, a = "definition.phases[0].jobs[0]", "definition.phases[1].jobs[0]"
	tests := []struct {
		name   string
		token  string
		body   any
		status int
		fields []string
	}{
		// The document's own rules (template.Parse and Validate).
		{"unknown key", "", edit(func(d map[string]any) { web(d)["colour"] = "red" }), 422, []string{w + ".colour"}},
		{"wrong type", "", edit(func(d map[string]any) { app(d)["machine"] = "yes" }), 422, []string{a + ".machine"}},
		{"duplicate phase", "", edit(func(d map[string]any) { d["phases"].([]any)[1].(map[string]any)["name"] = "base" }), 422, []string{"definition.phases[1].name"}},
		{"duplicate job", "", edit(func(d map[string]any) { app(d)["name"] = "web" }), 422, []string{a + ".inputs.web_ip", a + ".name"}},
		{"input from an unknown job", "", edit(func(d map[string]any) { app(d)["inputs"] = map[string]any{"web_ip": "${jobs.nope.outputs.ip}"} }), 422, []string{a + ".inputs.web_ip"}},
		{"input from the same phase", "", edit(func(d map[string]any) {
			ph := d["phases"].([]any)
			ph[0].(map[string]any)["jobs"] = append(ph[0].(map[string]any)["jobs"].([]any), app(d))
			d["phases"] = ph[:1]
		}), 422, []string{"definition.phases[0].jobs[1].inputs.web_ip"}},
		{"input from a later phase (a cycle)", "", edit(func(d map[string]any) { web(d)["inputs"] = map[string]any{"url": "${jobs.app.outputs.url}"} }), 422, []string{w + ".inputs.url"}},
		{"malformed reference", "", edit(func(d map[string]any) { app(d)["inputs"] = map[string]any{"web_ip": "http://${jobs.web.outputs.ip}"} }), 422, []string{a + ".inputs.web_ip"}},
		{"default of the wrong type", "", edit(func(d map[string]any) { param(web(d), 0)["default"] = "two" }), 422, []string{w + ".parameters[0].default"}},
		{"default out of bounds", "", edit(func(d map[string]any) { param(web(d), 0)["default"] = 64 }), 422, []string{w + ".parameters[0].default"}},
		{"min above max", "", edit(func(d map[string]any) { app(d)["executions"] = map[string]any{"multiple": true, "min": 5, "max": 2} }), 422, []string{a + ".executions.min"}},
		{"secret with a default", "", edit(func(d map[string]any) { param(web(d), 2)["default"] = "hunter2" }), 422, []string{w + ".parameters[2].default"}},
		{"path escaping the repository", "", edit(func(d map[string]any) { web(d)["source"].(map[string]any)["path"] = "../../etc" }), 422, []string{w + ".source.path"}},
		{"script path escaping the job", "", edit(func(d map[string]any) { web(d)["scripts"].([]any)[0].(map[string]any)["path"] = "../app/main.tf" }), 422, []string{w + ".scripts[0].path"}},
		{"repository URL scheme", "", edit(func(d map[string]any) { web(d)["source"].(map[string]any)["repo"] = "http://git.example.org/x.git" }), 422, []string{w + ".source.repo"}},
		// What only the repository can tell (template.Inspect and CheckModules).
		{"repository that does not exist", "", edit(func(d map[string]any) { web(d)["source"].(map[string]any)["repo"] = "file:///nonexistent/repo.git" }), 422, []string{w + ".source.repo"}},
		{"branch that does not exist", "", edit(func(d map[string]any) { app(d)["source"].(map[string]any)["branch"] = "release/9" }), 422, []string{a + ".source.branch"}},
		{"no module at the path", "", edit(func(d map[string]any) { app(d)["source"].(map[string]any)["path"] = "jobs/none" }), 422, []string{a + ".source.path"}},
		{"link leaving the repository", "", edit(func(d map[string]any) { web(d)["source"].(map[string]any)["repo"] = escaping.URL }), 422, []string{w + ".source"}},
		{"script missing at the commit", "", edit(func(d map[string]any) { web(d)["cleanup"].([]any)[0].(map[string]any)["path"] = "scripts/gone.sh" }), 422, []string{w + ".cleanup[0].path"}},
		{"parameter without a variable", "", edit(func(d map[string]any) {
			web(d)["parameters"] = append(web(d)["parameters"].([]any), map[string]any{"name": "colour", "type": "string", "default": "red"})
		}), 422, []string{w + ".parameters[3].name"}},
		{"parameter of an incompatible type", "", edit(func(d map[string]any) { param(web(d), 1)["type"] = "boolean"; param(web(d), 1)["default"] = true }), 422, []string{w + ".parameters[1].type"}},
		{"required variable left unset", "", edit(func(d map[string]any) { delete(app(d), "parameters") }), 422, []string{a + ".source"}},
		{"unknown horizon variable", "", edit(func(d map[string]any) { app(d)["source"].(map[string]any)["path"] = "jobs/typo" }), 422, []string{a + ".source"}},
		{"input of an output nobody has", "", edit(func(d map[string]any) { app(d)["inputs"] = map[string]any{"web_ip": "${jobs.web.outputs.address}"} }), 422, []string{a + ".inputs.web_ip"}},
		// The definition field itself.
		{"no definition", "", map[string]any{"name": "x"}, 422, []string{"definition"}},
		{"definition is a list", "", map[string]any{"definition": []any{good}}, 422, []string{"definition"}},
		{"valid YAML but not an object", "", map[string]any{"definition": "- name: shop\n- phases: []\n"}, 422, []string{"definition"}},
		{"a YAML scalar", "", map[string]any{"definition": "just words"}, 422, []string{"definition"}},
		{"not YAML", "", map[string]any{"definition": "name: [shop"}, 422, []string{"definition"}},
		{"two documents", "", map[string]any{"definition": yamlDefinition(repo.URL) + "---\nname: other\n"}, 422, []string{"definition"}},
		{"alias bomb", "", map[string]any{"definition": aliasBomb()}, 422, []string{
			"definition.phases[0].jobs[0].parameters[0].enum", "definition.phases[0].jobs[0].parameters[1].enum",
			"definition.phases[0].jobs[0].parameters[2].enum", "definition.phases[0].jobs[0].parameters[3].enum",
			"definition.phases[0].jobs[0].parameters[4].enum", "definition.phases[0].jobs[0].parameters[5].enum",
			"definition.phases[0].jobs[0].parameters[6].enum", "definition.phases[0].jobs[0].parameters[7].enum",
			"definition.phases[0].jobs[0].parameters[8].enum"}},
		{"YAML with a bad path, reported with its place", "", map[string]any{"definition": strings.Replace(yamlDefinition(repo.URL), "path: jobs/app", "path: ../jobs/app", 1)}, 422, []string{a + ".source.path"}},
		// The request around it: every problem at once.
		{"bad name and bad definition together", "", map[string]any{"name": "", "definition": mutated(good, func(d map[string]any) { web(d)["colour"] = "red" })}, 422, []string{"definition.phases[0].jobs[0].colour", "name"}},
		{"unknown request field", "", map[string]any{"definition": good, "id": "x"}, 422, []string{"id"}},
		{"member", member, map[string]any{"definition": good}, 403, nil},
		{"viewer", viewer, map[string]any{"definition": good}, 403, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := s.State()
			r := s.Do("POST", "/v1/templates", apitest.Req{Token: tc.token, Body: tc.body})
			p := r.Problem()
			fields := p.Fields()
			sort.Strings(fields)
			if r.Status != tc.status || !reflect.DeepEqual(fields, tc.fields) {
				t.Fatalf("got %d fields %q\n%s\nwant %d fields %q", r.Status, fields, r.Body, tc.status, tc.fields)
			}
			if s.State() != before {
				t.Fatal("the rejected request changed the database")
			}
		})
	}
}

func TestCreateVersionRejectsBadInput(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	repo := newSources(t)
	tmpl := createTemplate(t, s, map[string]any{"definition": definition(repo.URL)})
	path := "/v1/templates/" + tmpl["id"].(string) + "/versions"
	_, member := s.NewUser(auth.RoleMember)
	_, viewer := s.NewUser(auth.RoleViewer)
	bad := mutated(definition(repo.URL), func(d map[string]any) { job(d, 1, 0)["source"].(map[string]any)["branch"] = "nope" })
	tests := []struct {
		name   string
		token  string
		body   any
		status int
		fields []string
	}{
		{"branch that does not exist", "", map[string]any{"definition": bad}, 422, []string{"definition.phases[1].jobs[0].source.branch"}},
		{"name is not a field of a version", "", map[string]any{"name": "x", "definition": definition(repo.URL)}, 422, []string{"name"}},
		{"no definition", "", map[string]any{}, 422, []string{"definition"}},
		// Resources are checked against the job's parameters at every upload.
		{"resources reading a string parameter", "", map[string]any{"definition": mutated(definition(repo.URL), func(d map[string]any) {
			job(d, 0, 0)["parameters"] = append(job(d, 0, 0)["parameters"].([]any)[:2], map[string]any{"name": "admin_password", "type": "string", "secret": true, "generate": true})
			job(d, 0, 0)["resources"] = map[string]any{"cores": map[string]any{"param": "admin_password"}}
		})}, 422, []string{"definition.phases[0].jobs[0].resources.cores.param"}},
		{"resources reading an unknown parameter", "", map[string]any{"definition": mutated(definition(repo.URL), func(d map[string]any) {
			job(d, 0, 0)["resources"] = map[string]any{"memory_mb": map[string]any{"param": "ram"}}
		})}, 422, []string{"definition.phases[0].jobs[0].resources.memory_mb.param"}},
		{"negative resources", "", map[string]any{"definition": mutated(definition(repo.URL), func(d map[string]any) {
			job(d, 0, 0)["resources"] = map[string]any{"disk_gb": -20}
		})}, 422, []string{"definition.phases[0].jobs[0].resources.disk_gb"}},
		{"member", member, map[string]any{"definition": definition(repo.URL)}, 403, nil},
		{"viewer", viewer, map[string]any{"definition": definition(repo.URL)}, 403, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := s.State()
			r := s.Do("POST", path, apitest.Req{Token: tc.token, Body: tc.body})
			fields := r.Problem().Fields()
			if r.Status != tc.status || !reflect.DeepEqual(fields, tc.fields) {
				t.Fatalf("got %d fields %q (%s), want %d fields %q", r.Status, fields, r.Body, tc.status, tc.fields)
			}
			if s.State() != before {
				t.Fatal("the rejected request changed the database")
			}
		})
	}
}

// A 10 MB definition is refused with 413 by the API's body limit (1 MiB) before any handler
// reads it. The definition's own limit (template.MaxSize, also 1 MiB) cannot be reached over
// HTTP, since the body around a definition is larger than the definition; definition_test.go
// checks its 413.
func TestTenMegabyteDefinitionIsTooLarge(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	repo := newSources(t)
	tmpl := createTemplate(t, s, map[string]any{"definition": definition(repo.URL)})
	huge := `{"definition": "name: big\ndescription: ` + strings.Repeat("x", 10<<20) + `"}`
	before := s.State()
	for _, path := range []string{"/v1/templates", "/v1/templates/" + tmpl["id"].(string) + "/versions"} {
		r := s.DoLarge("POST", path, []byte(huge))
		if p := r.Problem(); r.Status != 413 || p.Type != "urn:horizon:problem:too-large" {
			t.Fatalf("POST %s: got %d %+v, want 413 too-large", path, r.Status, p)
		}
	}
	if s.State() != before {
		t.Fatal("the refused requests changed the database")
	}
}
