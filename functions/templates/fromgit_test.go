package templates_test

import (
	"reflect"
	"testing"

	"horizon/functions/apitest"
)

// A template and its versions can be read from a file of a git branch instead of the body.
func TestDefinitionFromGit(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	repo := newSources(t)
	repo.Commit(map[string]string{"templates/shop.yaml": yamlDefinition(repo.URL)})
	src := func(kv ...string) map[string]any {
		m := map[string]any{"repo": repo.URL, "branch": "main", "path": "templates/shop.yaml"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return map[string]any{"source": m}
	}
	tmpl := createTemplate(t, s, src())
	if tmpl["name"] != "shop" || tmpl["latest_version"] != 1.0 {
		t.Fatalf("created %v", tmpl)
	}
	base := "/v1/templates/" + tmpl["id"].(string)
	// The branch moves: a new version from the same file pins the new commit.
	head := repo.Commit(map[string]string{"jobs/web/README.md": "notes"})
	r := s.Do("POST", base+"/versions", apitest.Req{Body: src()})
	if r.Status != 201 || r.Map()["number"] != 2.0 || r.Map()["commits"].(map[string]any)["jobs"].(map[string]any)["web"] != head {
		t.Fatalf("version from git: %d %s, want number 2 pinning web at %s", r.Status, r.Body, head)
	}
	tests := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"a file not in the branch", src("path", "templates/nope.yaml"), "source.path"},
		{"a path leaving the repository", src("path", "../shop.yaml"), "source.path"},
		{"a branch that does not exist", src("branch", "nope"), "source.branch"},
		{"a repository that does not exist", src("repo", repo.URL+"-missing"), "source.repo"},
		{"no branch", src("branch", ""), "source.branch"},
		{"both a definition and a source", map[string]any{"definition": yamlDefinition(repo.URL), "source": src()["source"]}, "source"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := s.State()
			r := s.Do("POST", base+"/versions", apitest.Req{Body: tc.body})
			if r.Status != 422 || !reflect.DeepEqual(r.Problem().Fields(), []string{tc.field}) {
				t.Fatalf("got %d %v %s, want 422 on %s", r.Status, r.Problem().Fields(), r.Body, tc.field)
			}
			if s.State() != before {
				t.Fatal("the refused request changed the database")
			}
		})
	}
	// A file that is not a definition: its problems are the definition's.
	repo.Commit(map[string]string{"templates/broken.yaml": "name: broken\nphases: []\n"})
	if r := s.Do("POST", base+"/versions", apitest.Req{Body: src("path", "templates/broken.yaml")}); r.Status != 422 {
		t.Fatalf("a broken definition from git: %d %s", r.Status, r.Body)
	}
}
