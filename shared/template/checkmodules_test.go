package template_test

import (
	"errors"
	"io/fs"
	"testing"
	"testing/fstest"

	"horizon/shared/template"
)

func loadModule(t testing.TB, hcl string) *template.Module {
	t.Helper()
	m, err := template.LoadModule(fstest.MapFS{"main.tf": {Data: []byte(hcl)}})
	if err != nil {
		t.Fatalf("load module: %v", err)
	}
	return m
}

const (
	masterTF = `
variable "cores" { type = number }
variable "memory_mb" { type = number }
variable "admin_password" {
  type      = string
  sensitive = true
}
variable "cluster_name" { description = "Name of the cluster" }
variable "horizon_name" {}
variable "horizon_node" {}
variable "horizon_pool" {}
variable "horizon_address" {}
variable "horizon_ssh_public_key" {}
variable "horizon_startup_order" { default = null }
output "ip" { value = "10.0.0.1" }
output "vm_id" { value = 100 }
`
	dbTF = `
variable "size_gb" { type = number }
variable "backups" {
  type    = bool
  default = true
}
variable "horizon_tags" { default = [] }
variable "horizon_node" { default = null }
output "ip" { value = "10.0.0.2" }
output "password" {
  value     = "x"
  sensitive = true
}
`
	workerTF = `
variable "memory_mb" { type = number }
variable "join_command" { type = string }
variable "db_host" {}
variable "horizon_iso" {}
variable "horizon_vmid" {}
output "ip" { value = "10.0.0.3" }
`
	userTF = `
variable "host" {}
variable "user" { type = string }
output "dsn" { value = "postgres://" }
`
)

// exampleModules returns modules and trees that fit testdata/kubernetes.yaml exactly.
func exampleModules(t testing.TB) (template.Modules, map[string]fs.FS) {
	t.Helper()
	mods := template.Modules{
		Jobs: map[string]*template.Module{
			"master": loadModule(t, masterTF),
			"db":     loadModule(t, dbTF),
			"worker": loadModule(t, workerTF),
		},
		Actions: map[string]*template.Module{"create-db-user": loadModule(t, userTF)},
	}
	trees := map[string]fs.FS{
		"master": fstest.MapFS{
			"main.tf":              {Data: []byte(masterTF)},
			"scripts/bootstrap.sh": {Data: []byte("#!/bin/sh\n"), Mode: 0o755},
			"scripts/drain.sh":     {Data: []byte("#!/bin/sh\n"), Mode: 0o755},
			"scripts/renew.sh":     {Data: []byte("#!/bin/sh\n"), Mode: 0o755},
		},
		"db":     fstest.MapFS{"main.tf": {Data: []byte(dbTF)}},
		"worker": fstest.MapFS{"main.tf": {Data: []byte(workerTF)}},
	}
	return mods, trees
}

func TestLoadModule(t *testing.T) {
	t.Parallel()
	m := loadModule(t, masterTF)
	if got := len(m.Variables); got != 10 {
		t.Fatalf("got %d variables, want 10", got)
	}
	if m.Variables[0].Name != "admin_password" || !m.Variables[0].Sensitive || m.Variables[0].Type != "string" || !m.Variables[0].Required {
		t.Fatalf("first variable = %+v, want admin_password, sensitive string, required (sorted by name)", m.Variables[0])
	}
	if v := m.Variable("horizon_startup_order"); v == nil || v.Required {
		t.Fatalf("horizon_startup_order = %+v, want optional", v)
	}
	if v := m.Variable("cluster_name"); v == nil || v.Description != "Name of the cluster" {
		t.Fatalf("cluster_name = %+v, want its description", v)
	}
	if o := loadModule(t, dbTF).Output("password"); o == nil || !o.Sensitive {
		t.Fatalf("db output password = %+v, want sensitive", o)
	}

	if _, err := template.LoadModule(fstest.MapFS{"README.md": {Data: []byte("x")}}); !errors.Is(err, template.ErrNoModule) {
		t.Fatalf("directory without .tf: got %v, want ErrNoModule", err)
	}
	if _, err := template.LoadModule(fstest.MapFS{"main.tf": {Data: []byte(`variable "x" {`)}}); err == nil {
		t.Fatal("a module that does not parse loaded without error")
	}
}

func TestCheckModulesExampleFits(t *testing.T) {
	t.Parallel()
	mods, trees := exampleModules(t)
	if err := template.CheckModules(parseExample(t), mods, trees); err != nil {
		t.Fatalf("got %v, want the example to fit its modules", err)
	}
}

func TestCheckModules(t *testing.T) {
	t.Parallel()
	const (
		m = "phases[0].jobs[0]"
		b = "phases[0].jobs[1]" // db
		w = "phases[1].jobs[0]"
	)
	tests := []struct {
		name   string
		break_ func(t testing.TB, d *template.Definition, mods *template.Modules, trees map[string]fs.FS)
		field  string
		msg    string
	}{
		{"parameter without a variable", func(_ testing.TB, d *template.Definition, _ *template.Modules, _ map[string]fs.FS) {
			d.Phases[0].Jobs[0].Parameters[0].Name = "vcpus"
		}, m + ".parameters[0].name", `declares no variable "vcpus"`},
		{"number parameter for a bool variable", func(_ testing.TB, _ *template.Definition, mods *template.Modules, _ map[string]fs.FS) {
			mods.Jobs["db"].Variable("size_gb").Type = "bool"
		}, b + ".parameters[0].type", "want a parameter of type boolean"},
		{"string parameter for a number variable", func(_ testing.TB, _ *template.Definition, mods *template.Modules, _ map[string]fs.FS) {
			mods.Jobs["master"].Variable("cluster_name").Type = "number"
		}, m + ".parameters[3].type", "integer or number"},
		{"boolean parameter for a number variable", func(_ testing.TB, _ *template.Definition, mods *template.Modules, _ map[string]fs.FS) {
			mods.Jobs["db"].Variable("backups").Type = "number"
		}, b + ".parameters[1].type", "integer or number"},
		{"scalar parameter for a list variable", func(_ testing.TB, _ *template.Definition, mods *template.Modules, _ map[string]fs.FS) {
			mods.Jobs["master"].Variable("cores").Type = "list(number)"
		}, m + ".parameters[0].type", "single value"},
		{"input without a variable", func(t testing.TB, _ *template.Definition, mods *template.Modules, _ map[string]fs.FS) {
			mods.Jobs["worker"] = loadModule(t, `
variable "memory_mb" { type = number }
variable "join_command" {}
variable "horizon_iso" {}
output "ip" { value = 1 }`)
		}, w + ".inputs.db_host", `declares no variable "db_host"`},
		{"required variable nobody fills", func(t testing.TB, _ *template.Definition, mods *template.Modules, _ map[string]fs.FS) {
			mods.Jobs["db"] = loadModule(t, dbTF+`variable "region" {}`)
		}, b + ".source", `requires variable "region"`},
		{"unknown horizon variable", func(t testing.TB, _ *template.Definition, mods *template.Modules, _ map[string]fs.FS) {
			mods.Jobs["db"] = loadModule(t, dbTF+`variable "horizon_nodes" { default = [] }`)
		}, b + ".source", "horizon_nodes, which is not a variable Horizon provides"},
		{"machine variable required by a non-machine job", func(t testing.TB, _ *template.Definition, mods *template.Modules, _ map[string]fs.FS) {
			mods.Jobs["db"] = loadModule(t, `
variable "size_gb" { type = number }
variable "backups" { type = bool }
variable "horizon_address" {}
output "ip" { value = 1 }`)
		}, b + ".source", "requires horizon_address, which Horizon gives only to machine jobs"},
		{"iso variable required by a job without iso", func(t testing.TB, _ *template.Definition, mods *template.Modules, _ map[string]fs.FS) {
			mods.Jobs["master"] = loadModule(t, masterTF+`variable "horizon_iso" {}`)
		}, m + ".source", "requires horizon_iso, which Horizon gives only to machine jobs with iso: true"},
		{"reference to an output nobody declares", func(_ testing.TB, d *template.Definition, _ *template.Modules, _ map[string]fs.FS) {
			d.Phases[1].Jobs[0].Inputs["db_host"] = "${jobs.db.outputs.hostname}"
		}, w + ".inputs.db_host", `job "db" has no output "hostname"`},
		{"reference to a script output that is not declared", func(_ testing.TB, d *template.Definition, _ *template.Modules, _ map[string]fs.FS) {
			d.Phases[0].Jobs[0].Outputs[0].Name = "join_cmd"
		}, w + ".inputs.join_command", `job "master" has no output "join_command"`},
		{"script output named like a module output", func(_ testing.TB, d *template.Definition, _ *template.Modules, _ map[string]fs.FS) {
			d.Phases[0].Jobs[0].Outputs[0].Name = "ip"
		}, m + ".outputs[0].name", `already has an output "ip"`},
		{"script missing at the commit", func(_ testing.TB, _ *template.Definition, _ *template.Modules, trees map[string]fs.FS) {
			delete(trees["master"].(fstest.MapFS), "scripts/bootstrap.sh")
		}, m + ".scripts[0].path", "scripts/bootstrap.sh is not a file of jobs/master"},
		{"cleanup script missing at the commit", func(_ testing.TB, _ *template.Definition, _ *template.Modules, trees map[string]fs.FS) {
			delete(trees["master"].(fstest.MapFS), "scripts/drain.sh")
		}, m + ".cleanup[0].path", "scripts/drain.sh is not a file"},
		{"script path that is a directory", func(_ testing.TB, d *template.Definition, _ *template.Modules, _ map[string]fs.FS) {
			d.Phases[0].Jobs[0].Scripts[0].Path = "scripts"
		}, m + ".scripts[0].path", "not a regular file"},
		{"script action's script missing", func(_ testing.TB, _ *template.Definition, _ *template.Modules, trees map[string]fs.FS) {
			delete(trees["master"].(fstest.MapFS), "scripts/renew.sh")
		}, "actions[1].path", "scripts/renew.sh is not a file"},
		{"action parameter without a variable", func(_ testing.TB, d *template.Definition, _ *template.Modules, _ map[string]fs.FS) {
			d.Actions[0].Parameters[0].Name = "username"
		}, "actions[0].parameters[0].name", `declares no variable "username"`},
		{"action required variable nobody fills", func(t testing.TB, _ *template.Definition, mods *template.Modules, _ map[string]fs.FS) {
			mods.Actions["create-db-user"] = loadModule(t, userTF+`variable "grant" {}`)
		}, "actions[0].source", `requires variable "grant"`},
		{"action machine variable", func(t testing.TB, _ *template.Definition, mods *template.Modules, _ map[string]fs.FS) {
			mods.Actions["create-db-user"] = loadModule(t, userTF+`variable "horizon_node" {}`)
		}, "actions[0].source", "only to machine jobs"},
		{"action input to an undeclared output", func(_ testing.TB, d *template.Definition, _ *template.Modules, _ map[string]fs.FS) {
			d.Actions[0].Inputs["host"] = "${jobs.db.outputs.host}"
		}, "actions[0].inputs.host", `job "db" has no output "host"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := parseExample(t)
			mods, trees := exampleModules(t)
			tc.break_(t, d, &mods, trees)
			problems := fields(t, template.CheckModules(d, mods, trees))
			if !hasProblem(problems, tc.field, tc.msg) {
				t.Fatalf("got %q, want a problem at %s containing %q", problems, tc.field, tc.msg)
			}
		})
	}
}

// A job or action whose module or tree is missing is skipped: whoever failed to read it says why.
func TestCheckModulesSkipsWhatWasNotInspected(t *testing.T) {
	t.Parallel()
	d := parseExample(t)
	mods, trees := exampleModules(t)
	delete(mods.Jobs, "db")
	delete(mods.Actions, "create-db-user")
	delete(trees, "master")
	if err := template.CheckModules(d, mods, trees); err != nil {
		t.Fatalf("got %v, want nil", err)
	}
}
