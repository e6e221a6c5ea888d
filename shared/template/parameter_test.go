package template_test

import (
	"encoding/json"
	"strings"
	"testing"

	"horizon/shared/template"
)

func TestParameterCheck(t *testing.T) {
	t.Parallel()
	cores := template.Parameter{Name: "cores", Type: template.TypeInteger, Minimum: ptr(1.0), Maximum: ptr(64.0)}
	size := template.Parameter{Name: "size", Type: template.TypeNumber, Minimum: ptr(0.5)}
	env := template.Parameter{Name: "env", Type: template.TypeString, Enum: []any{"dev", "prod"}}
	host := template.Parameter{Name: "host", Type: template.TypeString, Pattern: "^[a-z]+$"}
	mem := template.Parameter{Name: "mem", Type: template.TypeInteger, Enum: []any{2048.0, 4096.0}}
	on := template.Parameter{Name: "on", Type: template.TypeBoolean}
	for _, tc := range []struct {
		name  string
		param template.Parameter
		value any
		want  string // "" for valid, else a part of the message
	}{
		{"integer", cores, 4.0, ""},
		{"integer as int", cores, 4, ""},
		{"integer as json.Number", cores, json.Number("4"), ""},
		{"integer with a fraction", cores, 4.5, "want an integer"},
		{"integer as a string", cores, "4", "want a number, got a string"},
		{"integer below the minimum", cores, 0, "at least 1"},
		{"integer above the maximum", cores, 65, "at most 64"},
		{"integer beyond 2^53", template.Parameter{Type: template.TypeInteger}, 1 << 54, "want an integer"},
		{"number", size, 0.75, ""},
		{"number below the minimum", size, 0.25, "at least 0.5"},
		{"number as a bool", size, true, "want a number, got a boolean"},
		{"string in the enum", env, "prod", ""},
		{"string not in the enum", env, "test", `must be one of ["dev","prod"]`},
		{"string as a number", env, 1, "want a string, got a number"},
		{"string matching the pattern", host, "web", ""},
		{"string not matching the pattern", host, "Web1", "must match ^[a-z]+$"},
		{"number enum by value", mem, int64(4096), ""},
		{"number not in the enum", mem, 1024, "must be one of [2048,4096]"},
		{"boolean", on, false, ""},
		{"boolean as a string", on, "true", "want true or false"},
		{"object", host, map[string]any{"a": 1}, "got an object"},
		{"null", host, nil, "got null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.param.Check(tc.value)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check(%#v) = %v, want nil", tc.value, err)
			case tc.want != "":
				if problems := fields(t, err); !hasProblem(problems, "", tc.want) {
					t.Fatalf("Check(%#v) = %q, want a problem containing %q", tc.value, problems, tc.want)
				}
			}
		})
	}
}

func TestParametersCheckAnswers(t *testing.T) {
	t.Parallel()
	ps := parseExample(t).Job("master").Parameters // cores (default 2), memory_mb (enum), admin_password (generated), cluster_name (required)
	for _, tc := range []struct {
		name    string
		answers map[string]any
		want    []string // "field: part of message", in field order
	}{
		{"only the required answer", map[string]any{"cluster_name": "prod"}, nil},
		{"everything answered", map[string]any{"cluster_name": "prod", "cores": 8.0, "memory_mb": 8192.0, "admin_password": "s3cret"}, nil},
		{"missing required answer", map[string]any{}, []string{"cluster_name: required"}},
		{"null counts as no answer", map[string]any{"cluster_name": nil, "cores": nil}, []string{"cluster_name: required"}},
		{"unknown parameter", map[string]any{"cluster_name": "prod", "corez": 2}, []string{"corez: unknown parameter"}},
		{"every problem at once", map[string]any{"cores": "many", "memory_mb": 1.0, "x": 1}, []string{
			"cluster_name: required", "cores: want a number", "memory_mb: must be one of", "x: unknown parameter",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := ps.Check(tc.answers)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			problems := fields(t, err)
			if len(problems) != len(tc.want) {
				t.Fatalf("got %q, want %d problems %q", problems, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				field, msg, _ := cut(w)
				if !hasProblem(problems[i:i+1], field, msg) {
					t.Errorf("problem %d = %q, want %q", i, problems[i], w)
				}
			}
		})
	}
}

func cut(s string) (string, string, bool) { return strings.Cut(s, ": ") }
