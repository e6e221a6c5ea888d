package template_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"horizon/shared/template"
	"horizon/shared/testkit"
)

func exampleForm(t testing.TB) template.FormSchema {
	t.Helper()
	mods, _ := exampleModules(t)
	return template.Form(parseExample(t), mods)
}

func TestFormGolden(t *testing.T) {
	t.Parallel()
	got, err := json.MarshalIndent(exampleForm(t), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "form/kubernetes.json", append(got, '\n'))
}

func TestFormJobs(t *testing.T) {
	t.Parallel()
	f := exampleForm(t)
	jobs := map[string]template.FormJob{}
	for _, ph := range f.Phases {
		for _, j := range ph.Jobs {
			jobs[j.Name] = j
		}
	}
	for _, tc := range []struct {
		job, attachments, executions, dependsOn string
	}{
		{"master", "[{address true} {ssh_key true} {node true} {pool true} {nagios_host_group false} {node_exporter false} {startup_order false}]", "{false 1 1}", "[]"},
		{"db", "[]", "{false 1 1}", "[]"},
		{"worker", "[{address true} {ssh_key true} {node true} {pool true} {iso true} {nagios_host_group false} {node_exporter false} {startup_order false}]", "{true 1 50}", "[master db]"},
	} {
		j := jobs[tc.job]
		if got := fmt.Sprint(j.Attachments); got != tc.attachments {
			t.Errorf("%s attachments = %s, want %s", tc.job, got, tc.attachments)
		}
		if got := fmt.Sprint(j.Executions); got != tc.executions {
			t.Errorf("%s executions = %s, want %s", tc.job, got, tc.executions)
		}
		if got := fmt.Sprint(j.DependsOn); got != tc.dependsOn {
			t.Errorf("%s depends on %s, want %s", tc.job, got, tc.dependsOn)
		}
	}
	if got := jobs["master"].Parameters.Properties["cluster_name"].Description; got != "Name of the cluster" {
		t.Errorf("cluster_name description = %q, want the module variable's", got)
	}
	if got := fmt.Sprint(jobs["master"].Parameters.Required); got != "[cluster_name]" {
		t.Errorf("master required = %s, want [cluster_name] (defaults and generated secrets are not required)", got)
	}
	pw := jobs["master"].Parameters.Properties["admin_password"]
	if !pw.WriteOnly || !pw.Secret || !pw.Generated {
		t.Errorf("admin_password schema = %+v, want writeOnly, x-horizon-secret and x-horizon-generate", pw)
	}
}

// compile compiles a parameters schema as a draft 2020-12 schema: the compiler checks it
// against the 2020-12 meta-schema first.
func compile(t testing.TB, s *template.Schema) *jsonschema.Schema {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("params.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("params.json")
	if err != nil {
		t.Fatalf("not a valid 2020-12 schema: %v\n%s", err, b)
	}
	return sch
}

func TestFormSchemasCompileAndAgreeWithCheck(t *testing.T) {
	t.Parallel()
	d := parseExample(t)
	f := exampleForm(t)
	schemas := map[string]*jsonschema.Schema{}
	for _, ph := range f.Phases {
		for _, j := range ph.Jobs {
			schemas[j.Name] = compile(t, j.Parameters)
		}
	}
	for _, a := range f.Actions {
		compile(t, a.Parameters)
	}
	for _, tc := range []struct {
		job, answers string
		valid        bool
	}{
		{"master", `{"cluster_name": "prod"}`, true},
		{"master", `{"cluster_name": "prod", "cores": 64, "memory_mb": 8192, "admin_password": "x"}`, true},
		{"master", `{}`, false},
		{"master", `{"cluster_name": "Prod"}`, false},
		{"master", `{"cluster_name": "prod", "cores": 0}`, false},
		{"master", `{"cluster_name": "prod", "cores": 65}`, false},
		{"master", `{"cluster_name": "prod", "cores": 2.5}`, false},
		{"master", `{"cluster_name": "prod", "cores": "2"}`, false},
		{"master", `{"cluster_name": "prod", "memory_mb": 1024}`, false},
		{"master", `{"cluster_name": "prod", "admin_password": 5}`, false},
		{"master", `{"cluster_name": "prod", "corez": 2}`, false},
		{"db", `{}`, true},
		{"db", `{"size_gb": 0.5}`, false},
		{"db", `{"size_gb": 1.5, "backups": false}`, true},
		{"db", `{"backups": "no"}`, false},
		{"worker", `{"memory_mb": 1024}`, true},
		{"worker", `{"memory_mb": 512}`, false},
	} {
		var answers map[string]any
		if err := json.Unmarshal([]byte(tc.answers), &answers); err != nil {
			t.Fatal(err)
		}
		schemaErr := schemas[tc.job].Validate(answers)
		checkErr := d.Job(tc.job).Parameters.Check(answers)
		if (schemaErr == nil) != tc.valid {
			t.Errorf("%s %s: schema says %v, want valid=%v", tc.job, tc.answers, schemaErr, tc.valid)
		}
		if (checkErr == nil) != tc.valid {
			t.Errorf("%s %s: Parameters.Check says %v, want valid=%v", tc.job, tc.answers, checkErr, tc.valid)
		}
	}
}

// The meta-schema check in compile is real: a schema with an unknown type does not compile.
func TestCompileChecksTheMetaSchema(t *testing.T) {
	t.Parallel()
	b, _ := json.Marshal(&template.Schema{Schema: template.Draft202012, Type: "float"})
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("bad.json", doc); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("bad.json"); err == nil {
		t.Fatal(`a schema of type "float" compiled`)
	}
}
