package templates_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"horizon/functions/apitest"
	"horizon/shared/testkit"
)

// The modules of the test template: web is a machine job with scripts, app uses web's ip.
const (
	webTF = `
variable "horizon_name" { type = string }
variable "horizon_node" { type = string }
variable "cores" { type = number }
variable "memory_mb" {
  type    = number
  default = 1024
}
variable "admin_password" {
  type      = string
  sensitive = true
}
output "ip" { value = "10.0.0.10" }
output "vm_id" { value = 100 }
`
	appTF = `
variable "horizon_name" { type = string }
variable "web_ip" { type = string }
variable "replicas" { type = number }
output "url" { value = "http://${var.web_ip}" }
`
	// typoTF declares a horizon_ variable Horizon does not provide.
	typoTF = `
variable "horizon_nmae" { type = string }
variable "web_ip" { type = string }
variable "replicas" { type = number }
`
)

// newSources commits the test template's modules to a new repository.
func newSources(t testing.TB) *testkit.GitRepo {
	t.Helper()
	r := testkit.NewGitRepo(t)
	r.Commit(map[string]string{
		"jobs/web/main.tf":          webTF,
		"jobs/web/scripts/setup.sh": "#!/bin/sh\necho token=abc >> \"$HORIZON_SECRET_OUTPUT\"\n",
		"jobs/web/scripts/drain.sh": "#!/bin/sh\necho draining\n",
		"jobs/app/main.tf":          appTF,
		"jobs/typo/main.tf":         typoTF,
	})
	return r
}

// definition is the test template over repo, as a JSON object.
func definition(repo string) map[string]any {
	src := func(path string) map[string]any { return map[string]any{"repo": repo, "branch": "main", "path": path} }
	return map[string]any{
		"name":        "shop",
		"description": "A web shop",
		"phases": []any{
			map[string]any{"name": "base", "jobs": []any{map[string]any{
				"name": "web", "machine": true, "source": src("jobs/web"),
				"parameters": []any{
					map[string]any{"name": "cores", "type": "integer", "default": 2, "minimum": 1, "maximum": 16},
					map[string]any{"name": "memory_mb", "type": "integer", "default": 2048},
					map[string]any{"name": "admin_password", "type": "string", "secret": true, "generate": true},
				},
				"outputs": []any{map[string]any{"name": "token", "secret": true}},
				"scripts": []any{map[string]any{"name": "setup", "path": "scripts/setup.sh"}},
				"cleanup": []any{map[string]any{"name": "drain", "path": "scripts/drain.sh"}},
				"nagios":  []any{map[string]any{"command": "check_ssh"}},
			}}},
			map[string]any{"name": "app", "jobs": []any{map[string]any{
				"name": "app", "source": src("jobs/app"),
				"executions": map[string]any{"multiple": true, "min": 1, "max": 4},
				"parameters": []any{map[string]any{"name": "replicas", "type": "integer", "default": 1}},
				"inputs":     map[string]any{"web_ip": "${jobs.web.outputs.ip}"},
			}}},
		},
	}
}

// yamlDefinition is the same template as a YAML document, with comments.
func yamlDefinition(repo string) string {
	return fmt.Sprintf(`# The shop: a web server, then the app that uses it.
name: shop
description: A web shop
phases:
  - name: base
    jobs:
      - name: web
        machine: true
        source: { repo: %[1]q, branch: main, path: jobs/web }
        parameters:
          - { name: cores, type: integer, default: 2, minimum: 1, maximum: 16 }
          - { name: memory_mb, type: integer, default: 2048 }
          - { name: admin_password, type: string, secret: true, generate: true }
        outputs: [ { name: token, secret: true } ]
        scripts: [ { name: setup, path: scripts/setup.sh } ]
        cleanup: [ { name: drain, path: scripts/drain.sh } ]
        nagios: [ { command: check_ssh } ]
  - name: app
    jobs:
      - name: app
        source: { repo: %[1]q, branch: main, path: jobs/app }
        executions: { multiple: true, min: 1, max: 4 }
        parameters: [ { name: replicas, type: integer, default: 1 } ]
        inputs: { web_ip: "${jobs.web.outputs.ip}" }
`, repo)
}

// mutated returns a deep copy of def changed by edit.
func mutated(def map[string]any, edit func(d map[string]any)) map[string]any {
	b, err := json.Marshal(def)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	edit(out)
	return out
}

// job returns job j of phase p of a definition built by definition.
func job(d map[string]any, p, j int) map[string]any {
	return d["phases"].([]any)[p].(map[string]any)["jobs"].([]any)[j].(map[string]any)
}

// param returns parameter i of a job.
func param(job map[string]any, i int) map[string]any {
	return job["parameters"].([]any)[i].(map[string]any)
}

// createTemplate creates the test template and returns its detail.
func createTemplate(t testing.TB, s *apitest.Server, body map[string]any) map[string]any {
	t.Helper()
	r := s.Do("POST", "/v1/templates", apitest.Req{Body: body})
	if r.Status != 201 {
		t.Fatalf("create template: %d %s", r.Status, r.Body)
	}
	return r.Map()
}
