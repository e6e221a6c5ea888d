package template_test

import (
	"encoding/json"
	"strings"
	"testing"

	"horizon/shared/horizon"
	"horizon/shared/template"
)

// resourcesDoc is a valid template whose app job reads cores and memory from parameters and
// declares a constant disk.
const resourcesDoc = `
name: shop
phases:
  - name: app
    jobs:
      - name: app
        source: { repo: https://git.example.org/t.git, branch: main, path: jobs/app }
        machine: true
        executions: { multiple: true, min: 1, max: 5 }
        parameters:
          - { name: cores, type: integer, default: 2, minimum: 1 }
          - { name: memory_mb, type: number, default: 1024, minimum: 0 }
          - { name: flavour, type: string, default: small }
          - { name: bias, type: integer, default: 1 }
          - { name: size, type: integer, default: 10, enum: [10, 20] }
          - { name: neg, type: integer, default: 20, enum: [-10, 20] }
        resources: { cores: { param: cores }, memory_mb: { param: memory_mb }, disk_gb: 20 }
      - name: dns
        source: { repo: https://git.example.org/t.git, branch: main, path: jobs/dns }
`

func TestResourcesCost(t *testing.T) {
	t.Parallel()
	d, err := template.Parse([]byte(resourcesDoc))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("got %v, want the document valid", err)
	}
	app, dns := d.Job("app"), d.Job("dns")
	tests := []struct {
		name    string
		job     *template.Job
		answers map[string]any
		want    horizon.Resources
	}{
		{"defaults", app, nil, horizon.Resources{Machines: 1, VCPUs: 2, MemoryMiB: 1024, DiskGiB: 20}},
		{"answers", app, map[string]any{"cores": 8.0, "memory_mb": 4096.0}, horizon.Resources{Machines: 1, VCPUs: 8, MemoryMiB: 4096, DiskGiB: 20}},
		{"a number counts rounded up", app, map[string]any{"memory_mb": 1000.5}, horizon.Resources{Machines: 1, VCPUs: 2, MemoryMiB: 1001, DiskGiB: 20}},
		{"a job without a machine costs nothing", dns, nil, horizon.Resources{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.job.Cost(tc.answers); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	// The stored form (JSON) reads back to the same costs.
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"resources":{"cores":{"param":"cores"},"memory_mb":{"param":"memory_mb"},"disk_gb":20}`) {
		t.Fatalf("JSON form: %s", b)
	}
	var back template.Definition
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.Job("app").Cost(nil); got != (horizon.Resources{Machines: 1, VCPUs: 2, MemoryMiB: 1024, DiskGiB: 20}) {
		t.Fatalf("after a JSON round trip: %+v", got)
	}
	// A machine job that declares nothing counts one machine.
	plain := template.Job{Name: "vm", Machine: true}
	if got := plain.Cost(nil); got != (horizon.Resources{Machines: 1}) {
		t.Fatalf("undeclared: %+v, want one machine", got)
	}
}

func TestResourcesRefused(t *testing.T) {
	t.Parallel()
	const at = "phases[0].jobs[0].resources"
	tests := []struct {
		name, resources, field, msg string
	}{
		{"unknown parameter", "{ cores: { param: vcpus } }", at + ".cores.param", `no parameter of this job is called "vcpus"`},
		{"string parameter", "{ cores: { param: flavour } }", at + ".cores.param", "of type string"},
		{"parameter that may be negative", "{ cores: { param: bias } }", at + ".cores.param", "minimum of 0"},
		{"enum with a negative value", "{ disk_gb: { param: neg } }", at + ".disk_gb.param", "minimum of 0"},
		{"negative constant", "{ disk_gb: -1 }", at + ".disk_gb", "must not be negative"},
		{"fractional constant", "{ disk_gb: 2.5 }", at + ".disk_gb", "whole number"},
		{"string constant", "{ disk_gb: big }", at + ".disk_gb", "want a number or {param"},
		{"reference without a name", "{ disk_gb: {} }", at + ".disk_gb.param", "required"},
		{"unknown key", "{ gpus: 1 }", at + ".gpus", "unknown key"},
		{"unknown key of a reference", "{ cores: { param: cores, scale: 2 } }", at + ".cores.scale", "unknown key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc := strings.Replace(resourcesDoc, "{ cores: { param: cores }, memory_mb: { param: memory_mb }, disk_gb: 20 }", tc.resources, 1)
			d, err := template.Parse([]byte(doc))
			if err == nil {
				err = d.Validate()
			}
			assertProblem(t, err, tc.field, tc.msg)
		})
	}
	t.Run("enum of non-negative values", func(t *testing.T) {
		t.Parallel()
		doc := strings.Replace(resourcesDoc, "disk_gb: 20 }", "disk_gb: { param: size } }", 1)
		d, err := template.Parse([]byte(doc))
		if err == nil {
			err = d.Validate()
		}
		if err != nil {
			t.Fatalf("got %v, want valid", err)
		}
	})
	t.Run("not a machine job", func(t *testing.T) {
		t.Parallel()
		doc := resourcesDoc + "        resources: { disk_gb: 1 }\n"
		d, err := template.Parse([]byte(doc))
		if err == nil {
			err = d.Validate()
		}
		assertProblem(t, err, "phases[0].jobs[1].resources", "only a machine job")
	})
}

func assertProblem(t *testing.T, err error, field, msg string) {
	t.Helper()
	ve, ok := err.(*horizon.ValidationError)
	if !ok {
		t.Fatalf("got %v, want a validation error", err)
	}
	for _, f := range ve.Fields {
		if f.Field == field && strings.Contains(f.Message, msg) {
			return
		}
	}
	t.Fatalf("got %v, want %s: …%s…", ve.Fields, field, msg)
}
